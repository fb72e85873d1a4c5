package business

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"assistant/internal/sqlstore"
)

// The business store's statements on PostgreSQL (see queries): $n
// parameters, and the column user quoted ("user"), a reserved word there
// (unquoted it reads as current_user).

// Column lists of the PostgreSQL statements, in the order the scan
// functions read them (queries).
const (
	pgDraftColumns        = `draft_id, task_id, order_id, "user", reason, created_at, expires_at, version`
	pgDraftReadColumns    = pgDraftColumns + `, superseded_at IS NOT NULL`
	pgApplicationColumns  = `application_id, draft_id, order_id, "user", review_status, created_at`
	pgQualifiedAppColumns = `a.application_id, a.draft_id, a.order_id, a."user", a.review_status, a.created_at`
	pgOrderColumns        = `order_id, "user", item, delivered_at, final_sale, teaching`
	pgStoredOrderColumns  = `o.order_id, o."user", o.item, o.delivered_at, o.final_sale, o.teaching, o.shop`
	pgDecisionColumns     = `decision_id, task_id, by_user, action, draft_id, version, at, comment, reason, not_counted`
)

var postgresQueries = &queries{
	draftByVersion:  `SELECT ` + pgDraftReadColumns + ` FROM drafts WHERE task_id = $1 AND version = $2`,
	draft:           `SELECT ` + pgDraftReadColumns + ` FROM drafts WHERE draft_id = $1`,
	currentDraft:    `SELECT ` + pgDraftReadColumns + ` FROM drafts WHERE task_id = $1 AND superseded_at IS NULL`,
	draftVersions:   `SELECT ` + pgDraftReadColumns + ` FROM drafts WHERE task_id = $1 ORDER BY version`,
	orderOwner:      `SELECT "user" FROM orders WHERE "user" = $1 AND order_id = $2`,
	supersedeDrafts: `UPDATE drafts SET superseded_at = $1 WHERE task_id = $2 AND version < $3 AND superseded_at IS NULL`,
	insertDraft:     `INSERT INTO drafts (` + pgDraftColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
	insertFirstDraft: `INSERT INTO drafts (` + pgDraftColumns + `)
		 SELECT $1, $2, $3, $4, $5, $6, $7, CAST($8 AS INTEGER)
		 WHERE EXISTS (SELECT 1 FROM orders WHERE "user" = $4 AND order_id = $3)
		   AND NOT EXISTS (SELECT 1 FROM drafts WHERE task_id = $2 AND version = $8)`,
	insertSeedDraft: `INSERT INTO drafts (draft_id, task_id, order_id, "user", reason, created_at, expires_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)`,

	insertApplication:  `INSERT INTO applications (` + pgApplicationColumns + `) VALUES ($1, $2, $3, $4, $5, $6)`,
	application:        `SELECT ` + pgApplicationColumns + ` FROM applications WHERE application_id = $1`,
	applicationOfDraft: `SELECT ` + pgApplicationColumns + ` FROM applications WHERE draft_id = $1`,
	applicationOfTask: `SELECT ` + pgQualifiedAppColumns + ` FROM drafts d JOIN applications a ON a.draft_id = d.draft_id
		 WHERE d.task_id = $1`,
	orderApplications: `SELECT d.task_id, d.version, ` + pgQualifiedAppColumns + ` FROM applications a JOIN drafts d ON d.draft_id = a.draft_id
		WHERE a."user" = $1 AND a.order_id = $2 ORDER BY a.created_at, a.application_id`,
	countApplications:      `SELECT count(*) FROM applications`,
	countDraftApplications: `SELECT count(*) FROM applications WHERE draft_id = $1`,
	checkApplications: `SELECT ` + pgQualifiedAppColumns + `,
		CASE WHEN d.draft_id IS NULL THEN 'its draft ' || a.draft_id || ' is missing'
		     WHEN d."user" != a."user" THEN 'its draft ' || a.draft_id || ' is user ' || d."user" || '''s, the application user ' || a."user" || '''s'
		     ELSE 'its draft ' || a.draft_id || ' is for order ' || d.order_id || ', the application for ' || a.order_id END
		FROM applications a LEFT JOIN drafts d ON d.draft_id = a.draft_id
		WHERE d.draft_id IS NULL OR d."user" != a."user" OR d.order_id != a.order_id
		ORDER BY a.application_id`,

	heldDraft:       `SELECT task_id, "user" FROM drafts WHERE draft_id = $1`,
	heldApplication: `SELECT draft_id, "user" FROM applications WHERE application_id = $1`,
	heldDraftAndApplication: `SELECT d.task_id, d."user", a.draft_id, a."user" FROM drafts d
		LEFT JOIN applications a ON a.application_id = $2 WHERE d.draft_id = $1`,

	order: `SELECT ` + pgOrderColumns + ` FROM orders WHERE "user" = $1 AND order_id = $2`,
	ordersOf: func(n int) string {
		return `SELECT ` + pgOrderColumns + ` FROM orders WHERE "user" = $1 AND order_id IN (` + sqlstore.PostgresParams(2, n) + `)`
	},
	openApplicationsOf: func(n int) string {
		return `SELECT DISTINCT order_id FROM applications WHERE "user" = $1 AND review_status = $2 AND order_id IN (` + sqlstore.PostgresParams(3, n) + `)`
	},
	openApplication: `SELECT EXISTS (SELECT 1 FROM applications WHERE "user" = $1 AND order_id = $2 AND review_status = $3)`,
	// Order ids compare as bytes: the column's collation is "C".
	ordersPage: `SELECT o.order_id, o."user", o.item, o.delivered_at, o.final_sale, o.teaching,
		EXISTS (SELECT 1 FROM applications a WHERE a."user" = o."user" AND a.order_id = o.order_id AND a.review_status = $1)
		FROM orders o WHERE o."user" = $2 AND o.order_id > $3 ORDER BY o.order_id LIMIT $4`,
	insertSeedOrder: `INSERT INTO orders (order_id, "user", item, delivered_at, final_sale, teaching) VALUES ($1, $2, $3, $4, $5, 1)`,

	insertGrant: `INSERT INTO approver_grants (owner, grantee, granted_by, granted_at) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (owner, grantee) DO NOTHING`,
	deleteGrant:       `DELETE FROM approver_grants WHERE owner = $1 AND grantee = $2`,
	insertGrantChange: `INSERT INTO approver_changes (owner, grantee, change, by_user, at) VALUES ($1, $2, $3, $4, $5)`,
	grant:             `SELECT 1 FROM approver_grants WHERE owner = $1 AND grantee = $2`,
	lastRevoke:        `SELECT at FROM approver_changes WHERE owner = $1 AND grantee = $2 AND change = 'revoke' ORDER BY seq DESC LIMIT 1`,
	grants: `SELECT owner, grantee, granted_by, granted_at FROM approver_grants
		 WHERE owner = $1 OR grantee = $1 ORDER BY granted_at, owner, grantee`,
	grantChanges: `SELECT owner, grantee, change, by_user, at FROM approver_changes
		 WHERE owner = $1 OR grantee = $1 ORDER BY seq`,
	ownersGranting: `SELECT owner FROM approver_grants WHERE grantee = $1 ORDER BY owner`,

	insertDecision: `INSERT INTO decisions (` + pgDecisionColumns + `)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (decision_id) DO NOTHING`,
	decisionMark:  `SELECT not_counted FROM decisions WHERE decision_id = $1`,
	markUncounted: `UPDATE decisions SET not_counted = $1 WHERE decision_id = $2 AND task_id = $3 AND not_counted = ''`,
	// rowid: an identity column, the order of insertion, among decisions
	// given at one time.
	decisions:       `SELECT ` + pgDecisionColumns + ` FROM decisions WHERE task_id = $1 ORDER BY at, rowid`,
	firstDecisionOf: `SELECT ` + pgDecisionColumns + ` FROM decisions WHERE task_id = $1 AND action = $2 ORDER BY at, rowid LIMIT 1`,
	decisionsOf: func(n int) string {
		return `SELECT ` + pgDecisionColumns + ` FROM decisions WHERE task_id IN (` + sqlstore.PostgresParams(1, n) + `) ORDER BY at, rowid`
	},
	draftsOf: func(n int) string {
		return `SELECT ` + pgDraftReadColumns + ` FROM drafts WHERE task_id IN (` + sqlstore.PostgresParams(1, n) + `)`
	},
	applicationsOf: func(n int) string {
		return `SELECT d.task_id, ` + pgQualifiedAppColumns + ` FROM drafts d JOIN applications a ON a.draft_id = d.draft_id
		 WHERE d.task_id IN (` + sqlstore.PostgresParams(1, n) + `)`
	},
	decidedWaiting: `SELECT DISTINCT d.task_id FROM decisions d JOIN tasks t ON t.task_id = d.task_id
		 WHERE t."user" = $1 AND t.status = 'waiting'`,
	inbox:        inboxQuery("$"),
	inboxWaiting: inboxWaitingQuery("$"),

	deleteTeachingOrder: `DELETE FROM orders WHERE "user" = $1 AND order_id = $2 AND teaching = 1`,
	storedRange: `SELECT ` + pgStoredOrderColumns + ` FROM orders o
		WHERE o."user" = $1 AND o.order_id BETWEEN $2 AND $3 ORDER BY o.order_id LIMIT $4`,
	storedPairs: sync.OnceValue(func() string {
		return `WITH b ("user", order_id) AS (VALUES ` + sqlstore.PostgresRows(1, importBatch, 2) + `)
		SELECT ` + pgStoredOrderColumns + ` FROM b JOIN orders o ON o."user" = b."user" AND o.order_id = b.order_id`
	}),
	storedShop: sync.OnceValue(func() string {
		return `SELECT ` + pgStoredOrderColumns + ` FROM orders o WHERE o.shop = 1 AND o.order_id IN (` + sqlstore.PostgresParams(1, importBatch) + `)`
	}),
	// CAST: PostgreSQL types a parameter of VALUES as text, and the
	// flag's column is an integer.
	insertOneUser: func(n int, shop bool) string {
		var rows strings.Builder
		for i := range n {
			if i > 0 {
				rows.WriteString(", ")
			}
			k := 4*i + 1
			fmt.Fprintf(&rows, "($%d, $%d, $%d, CAST($%d AS INTEGER))", k, k+1, k+2, k+3)
		}
		return `WITH v (order_id, item, delivered_at, final_sale) AS (VALUES ` + rows.String() + `)
		INSERT INTO orders ("user", order_id, item, delivered_at, final_sale, shop)
		SELECT $` + strconv.Itoa(4*n+1) + `, order_id, item, delivered_at, final_sale, ` + flagText(shop) + ` FROM v`
	},
	// A plain INSERT: a failed statement writes nothing (PostgreSQL keeps
	// no statement journal to spare), and fails the import.
	insertOrders: fullBatch(func(n int) string {
		return `INSERT INTO orders ("user", order_id, item, delivered_at, final_sale, shop) VALUES ` + sqlstore.PostgresRows(1, n, 6)
	}),
	upsertOrders: fullBatch(func(n int) string {
		return `INSERT INTO orders ("user", order_id, item, delivered_at, final_sale, shop) VALUES ` + sqlstore.PostgresRows(1, n, 6) + `
		ON CONFLICT ("user", order_id) DO UPDATE SET item = excluded.item, delivered_at = excluded.delivered_at,
			final_sale = excluded.final_sale, teaching = 0, shop = excluded.shop`
	}),
	inFlight: `SELECT task_id FROM tasks WHERE "user" = $1 AND order_id = $2 AND status IN ('running', 'waiting', 'interrupted') ORDER BY task_id LIMIT 10`,
	orderUsed: `SELECT EXISTS (SELECT 1 FROM tasks WHERE "user" = $1 AND order_id = $2)
		OR EXISTS (SELECT 1 FROM drafts WHERE "user" = $3 AND order_id = $4)
		OR EXISTS (SELECT 1 FROM batch_rows r JOIN tasks b ON b.task_id = r.batch_id WHERE b."user" = $5 AND r.order_id = $6)`,
}
