package runs

import "strings"

// queries are the statements of the run bookkeeping, written once for
// each database it runs on: sqliteQueries (queries_sqlite.go) and
// postgresQueries (queries_postgres.go). New takes the set of its Handle's
// database, and the Store runs its texts as they are. Both sets take the
// same arguments in the same order and return the same columns in the
// same order, so one method serves both databases:
//
//   - a task record is read as task_id, user, order_id, reason,
//     fingerprint, status, stage, created_at, updated_at, kind,
//     lease_owner, lease_pid, lease_host, lease_until, lease_epoch,
//     error_code, error (scanTask);
//   - a step as seq, node, attempt, status, started_at, ended_at, error
//     (scanStep);
//   - a batch row as row_no, line, task_id, order_id, reason, action,
//     draft_id, outcome, error_code, error, duplicate_of (BatchRows).
//
// A statement whose length depends on the call (an IN list, a multi-row
// VALUES) is a function of the number of items that builds its text,
// with its database's parameter markers.
type queries struct {
	// createTask inserts a task record: task_id, user, order_id, reason,
	// fingerprint, status, stage, created_at, updated_at; nothing when the
	// task id is taken.
	createTask string
	// createLeasedTask inserts a running task record with its lease:
	// task_id, user, order_id, reason, fingerprint, stage, created_at,
	// updated_at, kind, draft_ttl_seconds, approvals, lease_owner,
	// lease_pid, lease_host, lease_until (epoch 1); nothing when the task
	// id is taken.
	createLeasedTask string
	// insertBatchTask inserts a running batch task with its lease:
	// task_id, user, fingerprint, created_at, updated_at, kind,
	// draft_ttl_seconds, lease_owner, lease_pid, lease_host, lease_until
	// (epoch 1).
	insertBatchTask string
	// task reads the record of task (1).
	task string
	// tasksIn reads the records of the n tasks.
	tasksIn func(n int) string
	// listTasks reads the records of user (2) unless (1) is '', in status
	// (4) unless (3) is '', oldest first.
	listTasks string
	// tasksUpdatedBefore reads the records in the n statuses updated
	// before the time after them, oldest update first.
	tasksUpdatedBefore func(n int) string
	// taskStatus reads the status of task (1).
	taskStatus string
	// approvals reads the approvals of task (1).
	approvals string
	// draftTTL reads the draft_ttl_seconds of task (1).
	draftTTL string
	// setProgress sets status (1), stage (2) and updated_at (3) of task
	// (4).
	setProgress string
	// setProgressFrom is setProgress guarded by the status (5).
	setProgressFrom string
	// setStatus sets status (1) and updated_at (2) of task (3) while it is
	// in status (4).
	setStatus string
	// setKind sets the kind (1) of task (2).
	setKind string

	// taskLease reads lease_owner, lease_pid, lease_host, lease_until,
	// kind, lease_epoch of task (1).
	taskLease string
	// leaseToAcquire reads lease_owner, lease_pid, lease_host,
	// lease_until, status, lease_epoch of task (1).
	leaseToAcquire string
	// acquireLease makes lease_owner (1), lease_pid (2), lease_host (3)
	// the holder of task (6) until (4), raises its epoch and sets it
	// running, updated at (5), while its holder is still (7) (NULL: none;
	// a null-safe comparison) and its status (8).
	acquireLease string
	// acquireRead is acquireLease of a task (6) with no holder, while its
	// epoch is still (7) and its status (8).
	acquireRead string
	// renewLease sets lease_until (1) of task (2) while lease_owner (3)
	// holds it running.
	renewLease string
	// leaseState reads lease_owner, status, lease_epoch of task (1).
	leaseState string
	// releaseLease records status (1), stage (2), error_code (3), error
	// (4) and updated_at (5) of task (6) and gives up its lease, while
	// lease_owner (7) holds it. A task an operator stopped stays
	// interrupted (docs/design.md "Run status"): once interrupted is
	// written, the stopped run changes no status again; only its stage
	// follows the head. A task its run recorded failed (endHeld) stays
	// failed too.
	releaseLease string
	// recordProgress is releaseLease that keeps the lease, with the same
	// arguments.
	recordProgress string
	// releaseLeases gives up the leases lease_owner (1) holds of the n
	// tasks after it.
	releaseLeases func(n int) string
	// recordProgressAll records, as recordProgress, task, status, stage,
	// updated_at, error_code, error of each of n tasks that lease_owner
	// (1) holds; the rows follow it.
	recordProgressAll func(n int) string

	// batchRows reads up to (3) rows of batch (1) after row number (2), in
	// row order.
	batchRows string
	// insertBatchRow inserts a batch row: batch_id, row_no, line, task_id,
	// order_id, reason, action, draft_id, outcome, error_code, error,
	// duplicate_of.
	insertBatchRow string
	// insertBatchRows inserts n rows of batch (1): each row's columns of
	// insertBatchRow after batch_id follow it.
	insertBatchRows func(n int) string
	// recordOutcomes sets outcome, error_code and error of n rows of batch
	// (1): row_no, outcome, error_code, error of each follow it.
	recordOutcomes func(n int) string
	// batchRowExists reads a row when batch (1) has row number (2).
	batchRowExists string
	// countBatchRows counts the rows of batch (1).
	countBatchRows string
	// heldOrders reads the order_id of each row of batch (1) that is
	// neither a duplicate nor ended with an error, in row order.
	heldOrders string

	// steps reads the steps of task (1), in seq order.
	steps string
	// lastStep reads the step of task (1) with the highest seq.
	lastStep string
	// runningSteps reads the steps of task (1) in status (2).
	runningSteps string
	// stepCounts reads node, its count of steps and its highest seq, of
	// each node of task (1).
	stepCounts string
	// stepCountsIn reads task_id, node, its count of steps and its highest
	// seq, of each node of the n tasks.
	stepCountsIn func(n int) string
	// failedSteps reads each node of task (1) and how many of its steps
	// are in status (2) or (3) with an error other than (4) since its last
	// step in status (5) or (6).
	failedSteps string
	// failedStepsIn reads task_id, node, the count failedSteps counts
	// (statuses (1) and (2), error (3), statuses (4) and (5)) and 0, of
	// each node of the n tasks that follow.
	failedStepsIn func(n int) string
	// startStep appends a step of node (2) in status (3) started at (4) to
	// task (1)'s timeline, with the next seq and attempt, and returns its
	// seq.
	startStep string
	// addStep inserts a step: task_id, seq, node, attempt, status,
	// started_at, ended_at, error.
	addStep string
	// addSteps inserts n steps, the columns of addStep each.
	addSteps func(n int) string
	// endStep sets status (1), error (2) and ended_at (3) of step (5) of
	// task (4) while it is running: a step that ended is never rewritten
	// (the first end wins).
	endStep string
	// failRunningSteps sets status (1), error (2) and ended_at (3) of the
	// steps of task (4) in status (5).
	failRunningSteps string
	// endStepHeld is endStep, with the same arguments, of a holder: only
	// while lease_owner (6) holds task (4) and no stop has ended its run
	// (the task is not interrupted).
	endStepHeld string
	// failRunningStepsHeld fails, with error (1) at ended_at (2), the
	// steps of task (3) still running, only while lease_owner (4) holds
	// the task and no stop has ended its run.
	failRunningStepsHeld string
	// endHeld moves task (5) from running to failed with stage (1),
	// error_code (2), error (3), updated_at (4), while lease_owner (6)
	// holds it at epoch (7).
	endHeld string
	// held counts task (1) when it is running and held by lease_owner (2)
	// at epoch (3): BeginSteps' guard without a renewal. A read: it
	// dirties no page.
	held string
	// heldRenew is held that also renews the lease to (1), in one
	// statement: task (2), lease_owner (3), epoch (4).
	heldRenew string
	// beginStep appends a running step of node (2) to task (1)'s timeline,
	// started at (3), with its attempt one more than the node's steps so
	// far, unless (4) > 0 and the node has failed (4) times in a row
	// (failed or left running since its last finished step; an operator's
	// stop, error (5), does not count): then it inserts nothing and
	// returns no row. It returns the step's seq.
	beginStep string
	// beginStepHeld is beginStep that also requires the task to be
	// running and held by lease_owner (6) at epoch (7) (held): no row when
	// either check fails.
	beginStepHeld string
}

// valuesRows returns the n rows of a multi-row VALUES, row(i) the i-th
// (from 0), comma separated.
func valuesRows(n int, row func(i int) string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row(i))
	}
	return b.String()
}
