package runs

import (
	"strconv"

	"assistant/internal/sqlstore"
)

// The run bookkeeping's statements on SQLite (see queries): ? parameters,
// numbered ?N where one is used twice.

// Column lists of the SQLite statements, in the order the scan functions
// read them (queries).
const (
	sqliteTaskColumns     = `task_id, user, order_id, reason, fingerprint, status, stage, created_at, updated_at`
	sqliteRecordColumns   = sqliteTaskColumns + `, kind, lease_owner, lease_pid, lease_host, lease_until, lease_epoch, error_code, error`
	sqliteStepColumns     = `seq, node, attempt, status, started_at, ended_at, error`
	sqliteBatchRowColumns = `row_no, line, task_id, order_id, reason, action, draft_id, outcome, error_code, error, duplicate_of`
	// sqliteKeepInterrupted sets the status to the bound one unless the
	// task is interrupted or failed: the one place of the rule that a stop
	// is final for the run it stopped, and so is the failure its run
	// recorded under its lease (endHeld) (releaseLease, recordProgress).
	sqliteKeepInterrupted = `CASE WHEN status IN ('interrupted', 'failed') THEN status ELSE ? END`
)

var sqliteQueries = &queries{
	// ON CONFLICT DO NOTHING, not a unique violation: see CreateTask.
	createTask: `INSERT INTO tasks (` + sqliteTaskColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	createLeasedTask: `INSERT INTO tasks (` + sqliteTaskColumns + `, kind, draft_ttl_seconds, approvals, lease_owner, lease_pid, lease_host, lease_until, lease_epoch)
		 VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT DO NOTHING`,
	insertBatchTask: `INSERT INTO tasks (` + sqliteTaskColumns + `, kind, draft_ttl_seconds, lease_owner, lease_pid, lease_host, lease_until, lease_epoch)
		 VALUES (?, ?, '', '', ?, 'running', '', ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
	task: `SELECT ` + sqliteRecordColumns + ` FROM tasks WHERE task_id = ?`,
	tasksIn: func(n int) string {
		return `SELECT ` + sqliteRecordColumns + ` FROM tasks WHERE task_id IN (` + sqlstore.SQLiteParams(n) + `)`
	},
	listTasks: `SELECT ` + sqliteRecordColumns + ` FROM tasks
		 WHERE (? = '' OR user = ?) AND (? = '' OR status = ?)
		 ORDER BY created_at, task_id`,
	tasksUpdatedBefore: func(n int) string {
		return `SELECT ` + sqliteRecordColumns + ` FROM tasks WHERE status IN (` + sqlstore.SQLiteParams(n) + `)
		 AND updated_at < ? ORDER BY updated_at, task_id`
	},
	taskStatus:      `SELECT status FROM tasks WHERE task_id = ?`,
	approvals:       `SELECT approvals FROM tasks WHERE task_id = ?`,
	draftTTL:        `SELECT draft_ttl_seconds FROM tasks WHERE task_id = ?`,
	setProgress:     `UPDATE tasks SET status = ?, stage = ?, updated_at = ? WHERE task_id = ?`,
	setProgressFrom: `UPDATE tasks SET status = ?, stage = ?, updated_at = ? WHERE task_id = ? AND status = ?`,
	setStatus:       `UPDATE tasks SET status = ?, updated_at = ? WHERE task_id = ? AND status = ?`,
	setKind:         `UPDATE tasks SET kind = ? WHERE task_id = ?`,

	taskLease:      `SELECT lease_owner, lease_pid, lease_host, lease_until, kind, lease_epoch FROM tasks WHERE task_id = ?`,
	leaseToAcquire: `SELECT lease_owner, lease_pid, lease_host, lease_until, status, lease_epoch FROM tasks WHERE task_id = ?`,
	acquireLease: `UPDATE tasks SET lease_owner = ?, lease_pid = ?, lease_host = ?, lease_until = ?, lease_epoch = lease_epoch + 1, status = 'running', updated_at = ?
		 WHERE task_id = ? AND lease_owner IS NOT DISTINCT FROM ? AND status = ?`,
	acquireRead: `UPDATE tasks SET lease_owner = ?, lease_pid = ?, lease_host = ?, lease_until = ?, lease_epoch = lease_epoch + 1, status = 'running', updated_at = ?
		 WHERE task_id = ? AND lease_owner IS NULL AND lease_epoch = ? AND status = ?`,
	renewLease: `UPDATE tasks SET lease_until = ? WHERE task_id = ? AND lease_owner = ? AND status = 'running'`,
	leaseState: `SELECT lease_owner, status, lease_epoch FROM tasks WHERE task_id = ?`,
	releaseLease: `UPDATE tasks SET status = ` + sqliteKeepInterrupted + `, stage = ?, error_code = ?, error = ?,
	lease_owner = NULL, lease_pid = 0, lease_host = '', lease_until = '', updated_at = ?
	WHERE task_id = ? AND lease_owner = ?`,
	recordProgress: `UPDATE tasks SET status = ` + sqliteKeepInterrupted + `, stage = ?, error_code = ?, error = ?, updated_at = ? WHERE task_id = ? AND lease_owner = ?`,
	releaseLeases: func(n int) string {
		return `UPDATE tasks SET lease_owner = NULL, lease_pid = 0, lease_host = '', lease_until = ''
		 WHERE lease_owner = ? AND task_id IN (` + sqlstore.SQLiteParams(n) + `)`
	},
	recordProgressAll: func(n int) string {
		return `UPDATE tasks SET status = CASE tasks.status WHEN 'interrupted' THEN tasks.status ELSE v.column2 END, stage = v.column3, updated_at = v.column4, error_code = v.column5, error = v.column6 FROM (VALUES ` +
			valuesRows(n, func(i int) string { return "(" + sqlstore.SQLiteNumbered(2+6*i, 6) + ")" }) +
			`) AS v WHERE tasks.task_id = v.column1 AND tasks.lease_owner = ?1`
	},

	batchRows:      `SELECT ` + sqliteBatchRowColumns + ` FROM batch_rows WHERE batch_id = ? AND row_no > ? ORDER BY row_no LIMIT ?`,
	insertBatchRow: `INSERT INTO batch_rows (batch_id, ` + sqliteBatchRowColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	insertBatchRows: func(n int) string {
		return `INSERT INTO batch_rows (batch_id, ` + sqliteBatchRowColumns + `) VALUES ` +
			valuesRows(n, func(i int) string { return "(?1, " + sqlstore.SQLiteNumbered(2+11*i, 11) + ")" })
	},
	// UPDATE … FROM a VALUES list, whose columns are column1, column2, …;
	// the row numbers are cast to integers.
	recordOutcomes: func(n int) string {
		return `UPDATE batch_rows SET outcome = v.column2, error_code = v.column3, error = v.column4 FROM (VALUES ` +
			valuesRows(n, func(i int) string {
				k := 2 + 4*i
				return "(CAST(?" + strconv.Itoa(k) + " AS INTEGER), " + sqlstore.SQLiteNumbered(k+1, 3) + ")"
			}) +
			`) AS v WHERE batch_rows.batch_id = ?1 AND batch_rows.row_no = v.column1`
	},
	batchRowExists: `SELECT 1 FROM batch_rows WHERE batch_id = ? AND row_no = ?`,
	countBatchRows: `SELECT count(*) FROM batch_rows WHERE batch_id = ?`,
	heldOrders:     `SELECT order_id FROM batch_rows WHERE batch_id = ? AND duplicate_of = 0 AND error_code = '' ORDER BY row_no`,

	steps:        `SELECT ` + sqliteStepColumns + ` FROM steps WHERE task_id = ? ORDER BY seq`,
	lastStep:     `SELECT ` + sqliteStepColumns + ` FROM steps WHERE task_id = ? ORDER BY seq DESC LIMIT 1`,
	runningSteps: `SELECT ` + sqliteStepColumns + ` FROM steps WHERE task_id = ? AND status = ?`,
	stepCounts:   `SELECT node, count(*), max(seq) FROM steps WHERE task_id = ? GROUP BY node`,
	stepCountsIn: func(n int) string {
		return `SELECT task_id, node, count(*), max(seq) FROM steps WHERE task_id IN (` + sqlstore.SQLiteParams(n) + `) GROUP BY task_id, node`
	},
	failedSteps: `SELECT s.node, count(*) FROM steps s WHERE s.task_id = ?1 AND s.status IN (?2, ?3) AND s.error <> ?4
		 AND s.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = ?1 AND d.node = s.node AND d.status IN (?5, ?6)), 0)
		 GROUP BY s.node`,
	failedStepsIn: func(n int) string {
		return `SELECT s.task_id, s.node, count(*), 0 FROM steps s WHERE s.status IN (?, ?) AND s.error <> ?
		 AND s.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = s.task_id AND d.node = s.node AND d.status IN (?, ?)), 0)
		 AND s.task_id IN (` + sqlstore.SQLiteParams(n) + `)
		 GROUP BY s.task_id, s.node`
	},
	startStep: `INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
		 SELECT ?1, coalesce(max(seq), 0) + 1, ?2, 1 + (SELECT count(*) FROM steps WHERE task_id = ?1 AND node = ?2), ?3, ?4
		 FROM steps WHERE task_id = ?1
		 RETURNING seq`,
	addStep: `INSERT INTO steps (task_id, seq, node, attempt, status, started_at, ended_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
	addSteps: func(n int) string {
		return `INSERT INTO steps (task_id, seq, node, attempt, status, started_at, ended_at, error) VALUES ` + sqlstore.SQLiteRows(n, 8)
	},
	endStep:          `UPDATE steps SET status = ?, error = ?, ended_at = ? WHERE task_id = ? AND seq = ? AND status = 'running'`,
	failRunningSteps: `UPDATE steps SET status = ?, error = ?, ended_at = ? WHERE task_id = ? AND status = ?`,
	endStepHeld: `UPDATE steps SET status = ?1, error = ?2, ended_at = ?3 WHERE task_id = ?4 AND seq = ?5 AND status = 'running'
	AND EXISTS (SELECT 1 FROM tasks WHERE task_id = ?4 AND lease_owner = ?6 AND status <> 'interrupted')`,
	failRunningStepsHeld: `UPDATE steps SET status = 'failed', error = ?1, ended_at = ?2 WHERE task_id = ?3 AND status = 'running'
	AND EXISTS (SELECT 1 FROM tasks WHERE task_id = ?3 AND lease_owner = ?4 AND status <> 'interrupted')`,
	endHeld: `UPDATE tasks SET status = 'failed', stage = ?, error_code = ?, error = ?, updated_at = ?
	WHERE task_id = ? AND status = 'running' AND lease_owner = ? AND lease_epoch = ?`,
	held: `SELECT count(*) FROM tasks WHERE task_id = ? AND status = 'running' AND lease_owner = ? AND lease_epoch = ?`,
	heldRenew: `UPDATE tasks SET lease_until = ?
	WHERE task_id = ? AND status = 'running' AND lease_owner = ? AND lease_epoch = ?`,
	beginStep: `INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
	SELECT ?1, (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE task_id = ?1), ?2,
	  1 + (SELECT count(*) FROM steps WHERE task_id = ?1 AND node = ?2), 'running', ?3
	WHERE ?4 <= 0 OR (SELECT count(*) FROM steps f WHERE f.task_id = ?1 AND f.node = ?2
	  AND f.status IN ('failed', 'running') AND f.error <> ?5
	  AND f.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = ?1 AND d.node = ?2 AND d.status IN ('done', 'waiting')), 0)) < ?4
	RETURNING seq`,
	beginStepHeld: `INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
	SELECT ?1, (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE task_id = ?1), ?2,
	  1 + (SELECT count(*) FROM steps WHERE task_id = ?1 AND node = ?2), 'running', ?3
	WHERE EXISTS (SELECT 1 FROM tasks WHERE task_id = ?1 AND status = 'running' AND lease_owner = ?6 AND lease_epoch = ?7)
	  AND (?4 <= 0 OR (SELECT count(*) FROM steps f WHERE f.task_id = ?1 AND f.node = ?2
	  AND f.status IN ('failed', 'running') AND f.error <> ?5
	  AND f.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = ?1 AND d.node = ?2 AND d.status IN ('done', 'waiting')), 0)) < ?4)
	RETURNING seq`,
}
