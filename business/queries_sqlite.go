package business

import (
	"strings"
	"sync"

	"assistant/internal/sqlstore"
)

// The business store's statements on SQLite (see queries): ? parameters,
// numbered ?N where one is used twice.

// Column lists of the SQLite statements, in the order the scan functions
// read them (queries).
const (
	sqliteDraftColumns        = `draft_id, task_id, order_id, user, reason, created_at, expires_at, version`
	sqliteDraftReadColumns    = sqliteDraftColumns + `, superseded_at IS NOT NULL`
	sqliteApplicationColumns  = `application_id, draft_id, order_id, user, review_status, created_at`
	sqliteQualifiedAppColumns = `a.application_id, a.draft_id, a.order_id, a.user, a.review_status, a.created_at`
	sqliteOrderColumns        = `order_id, user, item, delivered_at, final_sale, teaching`
	sqliteStoredOrderColumns  = `o.order_id, o.user, o.item, o.delivered_at, o.final_sale, o.teaching, o.shop`
	sqliteDecisionColumns     = `decision_id, task_id, by_user, action, draft_id, version, at, comment, reason, not_counted`
)

// sqliteInsertUnmarkedSeedOrder inserts a teaching order into a file made
// with fewer migrations, whose orders table has no teaching column yet
// (tests make such files; migration 0005 marks their orders later): the
// arguments of insertSeedOrder.
const sqliteInsertUnmarkedSeedOrder = `INSERT INTO orders (order_id, user, item, delivered_at, final_sale) VALUES (?, ?, ?, ?, ?)`

var sqliteQueries = &queries{
	draftByVersion:  `SELECT ` + sqliteDraftReadColumns + ` FROM drafts WHERE task_id = ? AND version = ?`,
	draft:           `SELECT ` + sqliteDraftReadColumns + ` FROM drafts WHERE draft_id = ?`,
	currentDraft:    `SELECT ` + sqliteDraftReadColumns + ` FROM drafts WHERE task_id = ? AND superseded_at IS NULL`,
	draftVersions:   `SELECT ` + sqliteDraftReadColumns + ` FROM drafts WHERE task_id = ? ORDER BY version`,
	orderOwner:      `SELECT user FROM orders WHERE user = ? AND order_id = ?`,
	supersedeDrafts: `UPDATE drafts SET superseded_at = ? WHERE task_id = ? AND version < ? AND superseded_at IS NULL`,
	insertDraft:     `INSERT INTO drafts (` + sqliteDraftColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
	insertFirstDraft: `INSERT INTO drafts (` + sqliteDraftColumns + `)
		 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, CAST(?8 AS INTEGER)
		 WHERE EXISTS (SELECT 1 FROM orders WHERE user = ?4 AND order_id = ?3)
		   AND NOT EXISTS (SELECT 1 FROM drafts WHERE task_id = ?2 AND version = ?8)`,
	insertSeedDraft: `INSERT INTO drafts (draft_id, task_id, order_id, user, reason, created_at, expires_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?)`,

	insertApplication:  `INSERT INTO applications (` + sqliteApplicationColumns + `) VALUES (?, ?, ?, ?, ?, ?)`,
	application:        `SELECT ` + sqliteApplicationColumns + ` FROM applications WHERE application_id = ?`,
	applicationOfDraft: `SELECT ` + sqliteApplicationColumns + ` FROM applications WHERE draft_id = ?`,
	applicationOfTask: `SELECT ` + sqliteQualifiedAppColumns + ` FROM drafts d JOIN applications a ON a.draft_id = d.draft_id
		 WHERE d.task_id = ?`,
	orderApplications: `SELECT d.task_id, d.version, ` + sqliteQualifiedAppColumns + ` FROM applications a JOIN drafts d ON d.draft_id = a.draft_id
		WHERE a.user = ? AND a.order_id = ? ORDER BY a.created_at, a.application_id`,
	countApplications:      `SELECT count(*) FROM applications`,
	countDraftApplications: `SELECT count(*) FROM applications WHERE draft_id = ?`,
	checkApplications: `SELECT ` + sqliteQualifiedAppColumns + `,
		CASE WHEN d.draft_id IS NULL THEN 'its draft ' || a.draft_id || ' is missing'
		     WHEN d.user != a.user THEN 'its draft ' || a.draft_id || ' is user ' || d.user || '''s, the application user ' || a.user || '''s'
		     ELSE 'its draft ' || a.draft_id || ' is for order ' || d.order_id || ', the application for ' || a.order_id END
		FROM applications a LEFT JOIN drafts d ON d.draft_id = a.draft_id
		WHERE d.draft_id IS NULL OR d.user != a.user OR d.order_id != a.order_id
		ORDER BY a.application_id`,

	heldDraft:       `SELECT task_id, user FROM drafts WHERE draft_id = ?`,
	heldApplication: `SELECT draft_id, user FROM applications WHERE application_id = ?`,
	heldDraftAndApplication: `SELECT d.task_id, d.user, a.draft_id, a.user FROM drafts d
		LEFT JOIN applications a ON a.application_id = ?2 WHERE d.draft_id = ?1`,

	order: `SELECT ` + sqliteOrderColumns + ` FROM orders WHERE user = ? AND order_id = ?`,
	ordersOf: func(n int) string {
		return `SELECT ` + sqliteOrderColumns + ` FROM orders WHERE user = ?1 AND order_id IN (` + sqlstore.SQLiteParams(n) + `)`
	},
	openApplicationsOf: func(n int) string {
		return `SELECT DISTINCT order_id FROM applications WHERE user = ?1 AND review_status = ?2 AND order_id IN (` + sqlstore.SQLiteParams(n) + `)`
	},
	openApplication: `SELECT EXISTS (SELECT 1 FROM applications WHERE user = ? AND order_id = ? AND review_status = ?)`,
	ordersPage: `SELECT o.order_id, o.user, o.item, o.delivered_at, o.final_sale, o.teaching,
		EXISTS (SELECT 1 FROM applications a WHERE a.user = o.user AND a.order_id = o.order_id AND a.review_status = ?)
		FROM orders o WHERE o.user = ? AND o.order_id > ? ORDER BY o.order_id LIMIT ?`,
	insertSeedOrder: `INSERT INTO orders (order_id, user, item, delivered_at, final_sale, teaching) VALUES (?, ?, ?, ?, ?, 1)`,

	insertGrant: `INSERT INTO approver_grants (owner, grantee, granted_by, granted_at) VALUES (?, ?, ?, ?)
		 ON CONFLICT (owner, grantee) DO NOTHING`,
	deleteGrant:       `DELETE FROM approver_grants WHERE owner = ? AND grantee = ?`,
	insertGrantChange: `INSERT INTO approver_changes (owner, grantee, change, by_user, at) VALUES (?, ?, ?, ?, ?)`,
	grant:             `SELECT 1 FROM approver_grants WHERE owner = ? AND grantee = ?`,
	lastRevoke:        `SELECT at FROM approver_changes WHERE owner = ? AND grantee = ? AND change = 'revoke' ORDER BY seq DESC LIMIT 1`,
	grants: `SELECT owner, grantee, granted_by, granted_at FROM approver_grants
		 WHERE owner = ?1 OR grantee = ?1 ORDER BY granted_at, owner, grantee`,
	grantChanges: `SELECT owner, grantee, change, by_user, at FROM approver_changes
		 WHERE owner = ?1 OR grantee = ?1 ORDER BY seq`,
	ownersGranting: `SELECT owner FROM approver_grants WHERE grantee = ? ORDER BY owner`,

	insertDecision: `INSERT INTO decisions (` + sqliteDecisionColumns + `)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (decision_id) DO NOTHING`,
	decisionMark:  `SELECT not_counted FROM decisions WHERE decision_id = ?`,
	markUncounted: `UPDATE decisions SET not_counted = ? WHERE decision_id = ? AND task_id = ? AND not_counted = ''`,
	// rowid: the order of insertion, among decisions given at one time.
	decisions:       `SELECT ` + sqliteDecisionColumns + ` FROM decisions WHERE task_id = ? ORDER BY at, rowid`,
	firstDecisionOf: `SELECT ` + sqliteDecisionColumns + ` FROM decisions WHERE task_id = ? AND action = ? ORDER BY at, rowid LIMIT 1`,
	decisionsOf: func(n int) string {
		return `SELECT ` + sqliteDecisionColumns + ` FROM decisions WHERE task_id IN (` + sqlstore.SQLiteParams(n) + `) ORDER BY at, rowid`
	},
	draftsOf: func(n int) string {
		return `SELECT ` + sqliteDraftReadColumns + ` FROM drafts WHERE task_id IN (` + sqlstore.SQLiteParams(n) + `)`
	},
	applicationsOf: func(n int) string {
		return `SELECT d.task_id, ` + sqliteQualifiedAppColumns + ` FROM drafts d JOIN applications a ON a.draft_id = d.draft_id
		 WHERE d.task_id IN (` + sqlstore.SQLiteParams(n) + `)`
	},
	decidedWaiting: `SELECT DISTINCT d.task_id FROM decisions d JOIN tasks t ON t.task_id = d.task_id
		 WHERE t.user = ? AND t.status = 'waiting'`,
	inbox:        inboxQuery("?"),
	inboxWaiting: inboxWaitingQuery("?"),

	deleteTeachingOrder: `DELETE FROM orders WHERE user = ? AND order_id = ? AND teaching = 1`,
	storedRange: `SELECT ` + sqliteStoredOrderColumns + ` FROM orders o
		WHERE o.user = ? AND o.order_id BETWEEN ? AND ? ORDER BY o.order_id LIMIT ?`,
	storedPairs: sync.OnceValue(func() string {
		return `WITH b (user, order_id) AS (VALUES ` + sqlstore.SQLiteRows(importBatch, 2) + `)
		SELECT ` + sqliteStoredOrderColumns + ` FROM b JOIN orders o ON o.user = b.user AND o.order_id = b.order_id`
	}),
	storedShop: sync.OnceValue(func() string {
		return `SELECT ` + sqliteStoredOrderColumns + ` FROM orders o WHERE o.shop = 1 AND o.order_id IN (` + sqlstore.SQLiteParams(importBatch) + `)`
	}),
	// CAST: the flag's column is an integer, and a parameter of VALUES
	// has no type of its own.
	insertOneUser: func(n int, shop bool) string {
		return `WITH v (order_id, item, delivered_at, final_sale) AS (VALUES ` + sqliteRowsOf(n, `(?, ?, ?, CAST(? AS INTEGER))`) + `)
		INSERT OR FAIL INTO orders (user, order_id, item, delivered_at, final_sale, shop)
		SELECT ?, order_id, item, delivered_at, final_sale, ` + flagText(shop) + ` FROM v`
	},
	// INSERT OR FAIL: a SQLite statement that may fail halfway (its
	// default conflict rule, ABORT, and every upsert, whose UPDATE part
	// aborts) keeps a statement journal to undo its own rows: every page
	// it changes that the transaction had changed before is first copied
	// to a temporary file, about as many page writes again as the import
	// itself makes. OR FAIL keeps the statement's rows written before a
	// failure and needs none; a failure fails the import, whose
	// transaction rolls back.
	insertOrders: fullBatch(func(n int) string {
		return `INSERT OR FAIL INTO orders (user, order_id, item, delivered_at, final_sale, shop) VALUES ` + sqlstore.SQLiteRows(n, 6)
	}),
	upsertOrders: fullBatch(func(n int) string {
		return `INSERT INTO orders (user, order_id, item, delivered_at, final_sale, shop) VALUES ` + sqlstore.SQLiteRows(n, 6) + `
		ON CONFLICT (user, order_id) DO UPDATE SET item = excluded.item, delivered_at = excluded.delivered_at,
			final_sale = excluded.final_sale, teaching = 0, shop = excluded.shop`
	}),
	inFlight: `SELECT task_id FROM tasks WHERE user = ? AND order_id = ? AND status IN ('running', 'waiting', 'interrupted') ORDER BY task_id LIMIT 10`,
	orderUsed: `SELECT EXISTS (SELECT 1 FROM tasks WHERE user = ? AND order_id = ?)
		OR EXISTS (SELECT 1 FROM drafts WHERE user = ? AND order_id = ?)
		OR EXISTS (SELECT 1 FROM batch_rows r JOIN tasks b ON b.task_id = r.batch_id WHERE b.user = ? AND r.order_id = ?)`,
}

// sqliteRowsOf returns n copies of row, comma separated.
func sqliteRowsOf(n int, row string) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}
