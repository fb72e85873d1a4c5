package business

import "sync"

// queries are the statements of the business store, written once for each
// database it runs on: sqliteQueries (queries_sqlite.go) and
// postgresQueries (queries_postgres.go). A store takes one set when it is
// opened and runs its texts as they are. Both sets take the same arguments
// in the same order and return the same columns in the same order, so one
// method serves both databases:
//
//   - a draft is read as draft_id, task_id, order_id, user, reason,
//     created_at, expires_at, version and whether it is superseded
//     (scanDraft);
//   - an application as application_id, draft_id, order_id, user,
//     review_status, created_at (scanApplication);
//   - an order as order_id, user, item, delivered_at, final_sale, teaching
//     (scanOrder), and by an import with shop after them (scanStored);
//   - a decision as decision_id, task_id, by_user, action, draft_id,
//     version, at, comment, reason, not_counted (scanDecision).
//
// The flags final_sale, teaching and shop are INTEGER columns, 0 or 1, on
// both databases: their arguments are bound as integers (flag). A
// statement whose length depends on the call (an IN list, a multi-row
// VALUES) is a function that builds its text, with its database's
// parameter markers; the one for a full import batch is built once, when
// it is first used.
type queries struct {
	// draftByVersion reads the draft of task (1), version (2).
	draftByVersion string
	// draft reads the draft (1).
	draft string
	// currentDraft reads the draft of task (1) that no newer version
	// superseded.
	currentDraft string
	// draftVersions reads every draft of task (1), by version.
	draftVersions string
	// orderOwner reads the owner of user (1)'s order (2): a row when the
	// order is the user's.
	orderOwner string
	// supersedeDrafts marks superseded at (1) the drafts of task (2)
	// below version (3) that are not superseded yet.
	supersedeDrafts string
	// insertDraft inserts a draft: draft_id, task_id, order_id, user,
	// reason, created_at, expires_at, version.
	insertDraft string
	// insertFirstDraft inserts a draft as insertDraft does, with the same
	// arguments, only when order (3) is user (4)'s and task (2) has no
	// draft of version (8) yet.
	insertFirstDraft string
	// insertSeedDraft inserts a draft of version 1 (the column's default):
	// draft_id, task_id, order_id, user, reason, created_at, expires_at.
	insertSeedDraft string

	// insertApplication inserts an application: application_id, draft_id,
	// order_id, user, review_status, created_at.
	insertApplication string
	// application reads the application (1).
	application string
	// applicationOfDraft reads the application of draft (1).
	applicationOfDraft string
	// applicationOfTask reads the application of a draft of task (1).
	applicationOfTask string
	// orderApplications reads the task_id and version of the draft, then
	// the application, of every application of user (1)'s order (2),
	// oldest first (created_at, application_id).
	orderApplications string
	// countApplications counts every application.
	countApplications string
	// countDraftApplications counts the applications of draft (1).
	countDraftApplications string
	// checkApplications reads every application whose draft is missing,
	// or is another user's or another order's, with why, by id.
	checkApplications string

	// heldDraft reads task_id and user of draft (1).
	heldDraft string
	// heldApplication reads draft_id and user of application (1).
	heldApplication string
	// heldDraftAndApplication reads task_id and user of draft (1), and
	// draft_id and user of application (2) (NULL when there is none).
	heldDraftAndApplication string

	// order reads user (1)'s order (2).
	order string
	// ordersOf reads user (1)'s orders among the n ids that follow.
	ordersOf func(n int) string
	// openApplicationsOf reads which of user (1)'s orders among the n ids
	// after review status (2) have an application in that status.
	openApplicationsOf func(n int) string
	// openApplication reads whether user (1)'s order (2) has an
	// application in review status (3).
	openApplication string
	// ordersPage reads up to (4) of user (2)'s orders with an id after
	// (3), by id, each with whether it has an application in review
	// status (1).
	ordersPage string
	// insertSeedOrder inserts a teaching order: order_id, user, item,
	// delivered_at, final_sale.
	insertSeedOrder string

	// insertGrant grants owner (1)'s tasks to grantee (2), by (3) at (4);
	// nothing when the grant exists.
	insertGrant string
	// deleteGrant ends grantee (2)'s grant from owner (1).
	deleteGrant string
	// insertGrantChange records a grant or revoke: owner, grantee, change,
	// by_user, at.
	insertGrantChange string
	// grant reads a row when owner (1) granted grantee (2).
	grant string
	// grants reads owner, grantee, granted_by, granted_at of the grants
	// user (1) gave or holds, oldest first.
	grants string
	// grantChanges reads owner, grantee, change, by_user, at of the
	// grants and revokes that concern user (1), in their order.
	grantChanges string
	// lastRevoke reads the time of the last revoke of grantee (2)'s grant
	// from owner (1); no row when there was none.
	lastRevoke string
	// ownersGranting reads the owners who granted grantee (1), sorted.
	ownersGranting string

	// insertDecision inserts a decision (its columns, in their order);
	// nothing when its id is recorded already.
	insertDecision string
	// decisionMark reads the not_counted of decision (1).
	decisionMark string
	// markUncounted sets why (1) the submit no longer counts decision (2)
	// of task (3), unless it is marked already.
	markUncounted string
	// decisions reads the decisions of task (1) in the order they were
	// given.
	decisions string
	// firstDecisionOf reads the first decision of task (1) whose action is
	// (2).
	firstDecisionOf string
	// decisionsOf reads the decisions of the n tasks, each task's in the
	// order they were given.
	decisionsOf func(n int) string
	// draftsOf reads every draft of the n tasks.
	draftsOf func(n int) string
	// applicationsOf reads the task_id of the draft, then the
	// application, of every application of a draft of the n tasks.
	applicationsOf func(n int) string
	// decidedWaiting reads the ids of user (1)'s waiting tasks that have
	// a decision.
	decidedWaiting string
	// inbox reads a page of a "mine" or "all" inbox (inboxQuery's
	// parameters); inboxWaiting of a "waiting" one (inboxWaitingQuery's).
	inbox, inboxWaiting string

	// deleteTeachingOrder deletes user (1)'s teaching order (2).
	deleteTeachingOrder string
	// storedRange reads, with shop, up to (4) of user (1)'s orders with an
	// id from (2) to (3), by id.
	storedRange string
	// storedPairs returns the statement that reads, with shop, the orders
	// of importBatch (user, order id) pairs, two arguments each (built on
	// first use: a command that imports nothing never pays for its text).
	storedPairs func() string
	// storedShop returns the statement that reads, with shop, the shop's
	// orders of importBatch ids (built on first use).
	storedShop func() string
	// insertOneUser inserts n orders of one user that are not stored:
	// id, item, delivered_at and final_sale of each, then the user; shop
	// is their shop flag.
	insertOneUser func(n int, shop bool) string
	// insertOrders inserts n orders that are not stored: user, order_id,
	// item, delivered_at, final_sale, shop of each.
	insertOrders func(n int) string
	// upsertOrders writes n orders, added or stored (a stored one is
	// updated and is no teaching order after): user, order_id, item,
	// delivered_at, final_sale, shop of each.
	upsertOrders func(n int) string
	// inFlight reads the ids of the first ten tasks in flight (running,
	// waiting, interrupted) of user (1)'s order (2).
	inFlight string
	// orderUsed reads whether a task, draft or batch row of user (1)
	// names order (2); the pair is given three times.
	orderUsed string
}

// flag is a flag argument as its INTEGER column holds it: 1 or 0.
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// fullBatch returns build, with the text of a full import batch
// (importBatch) built once, on first use: nearly every statement of a
// large import is one, and a command that imports nothing (most do) does
// not build it at start-up.
func fullBatch(build func(n int) string) func(n int) string {
	full := sync.OnceValue(func() string { return build(importBatch) })
	return func(n int) string {
		if n == importBatch {
			return full()
		}
		return build(n)
	}
}

// flagText is a flag as an SQL literal: 1 or 0.
func flagText(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
