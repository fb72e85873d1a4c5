package runs

import (
	"strconv"

	"assistant/internal/sqlstore"
)

// The run bookkeeping's statements on PostgreSQL (see queries): $n
// parameters, and the column user quoted ("user"), a reserved word there
// (unquoted it reads as current_user).

// Column lists of the PostgreSQL statements, in the order the scan
// functions read them (queries).
const (
	pgTaskColumns     = `task_id, "user", order_id, reason, fingerprint, status, stage, created_at, updated_at`
	pgRecordColumns   = pgTaskColumns + `, kind, lease_owner, lease_pid, lease_host, lease_until, lease_epoch, error_code, error`
	pgStepColumns     = `seq, node, attempt, status, started_at, ended_at, error`
	pgBatchRowColumns = `row_no, line, task_id, order_id, reason, action, draft_id, outcome, error_code, error, duplicate_of`
	// pgKeepInterrupted sets the status to (1) unless the task is
	// interrupted or failed: the one place of the rule that a stop is
	// final for the run it stopped, and so is the failure its run recorded
	// under its lease (endHeld) (releaseLease, recordProgress).
	pgKeepInterrupted = `CASE WHEN status IN ('interrupted', 'failed') THEN status ELSE $1 END`
)

var postgresQueries = &queries{
	// ON CONFLICT DO NOTHING, not a unique violation: see CreateTask.
	createTask: `INSERT INTO tasks (` + pgTaskColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
	createLeasedTask: `INSERT INTO tasks (` + pgTaskColumns + `, kind, draft_ttl_seconds, approvals, lease_owner, lease_pid, lease_host, lease_until, lease_epoch)
		 VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 1) ON CONFLICT DO NOTHING`,
	insertBatchTask: `INSERT INTO tasks (` + pgTaskColumns + `, kind, draft_ttl_seconds, lease_owner, lease_pid, lease_host, lease_until, lease_epoch)
		 VALUES ($1, $2, '', '', $3, 'running', '', $4, $5, $6, $7, $8, $9, $10, $11, 1)`,
	task: `SELECT ` + pgRecordColumns + ` FROM tasks WHERE task_id = $1`,
	tasksIn: func(n int) string {
		return `SELECT ` + pgRecordColumns + ` FROM tasks WHERE task_id IN (` + sqlstore.PostgresParams(1, n) + `)`
	},
	listTasks: `SELECT ` + pgRecordColumns + ` FROM tasks
		 WHERE ($1 = '' OR "user" = $2) AND ($3 = '' OR status = $4)
		 ORDER BY created_at, task_id`,
	tasksUpdatedBefore: func(n int) string {
		return `SELECT ` + pgRecordColumns + ` FROM tasks WHERE status IN (` + sqlstore.PostgresParams(1, n) + `)
		 AND updated_at < $` + strconv.Itoa(n+1) + ` ORDER BY updated_at, task_id`
	},
	taskStatus:      `SELECT status FROM tasks WHERE task_id = $1`,
	approvals:       `SELECT approvals FROM tasks WHERE task_id = $1`,
	draftTTL:        `SELECT draft_ttl_seconds FROM tasks WHERE task_id = $1`,
	setProgress:     `UPDATE tasks SET status = $1, stage = $2, updated_at = $3 WHERE task_id = $4`,
	setProgressFrom: `UPDATE tasks SET status = $1, stage = $2, updated_at = $3 WHERE task_id = $4 AND status = $5`,
	setStatus:       `UPDATE tasks SET status = $1, updated_at = $2 WHERE task_id = $3 AND status = $4`,
	setKind:         `UPDATE tasks SET kind = $1 WHERE task_id = $2`,

	taskLease:      `SELECT lease_owner, lease_pid, lease_host, lease_until, kind, lease_epoch FROM tasks WHERE task_id = $1`,
	leaseToAcquire: `SELECT lease_owner, lease_pid, lease_host, lease_until, status, lease_epoch FROM tasks WHERE task_id = $1`,
	acquireLease: `UPDATE tasks SET lease_owner = $1, lease_pid = $2, lease_host = $3, lease_until = $4, lease_epoch = lease_epoch + 1, status = 'running', updated_at = $5
		 WHERE task_id = $6 AND lease_owner IS NOT DISTINCT FROM $7 AND status = $8`,
	acquireRead: `UPDATE tasks SET lease_owner = $1, lease_pid = $2, lease_host = $3, lease_until = $4, lease_epoch = lease_epoch + 1, status = 'running', updated_at = $5
		 WHERE task_id = $6 AND lease_owner IS NULL AND lease_epoch = $7 AND status = $8`,
	renewLease: `UPDATE tasks SET lease_until = $1 WHERE task_id = $2 AND lease_owner = $3 AND status = 'running'`,
	leaseState: `SELECT lease_owner, status, lease_epoch FROM tasks WHERE task_id = $1`,
	releaseLease: `UPDATE tasks SET status = ` + pgKeepInterrupted + `, stage = $2, error_code = $3, error = $4,
	lease_owner = NULL, lease_pid = 0, lease_host = '', lease_until = '', updated_at = $5
	WHERE task_id = $6 AND lease_owner = $7`,
	recordProgress: `UPDATE tasks SET status = ` + pgKeepInterrupted + `, stage = $2, error_code = $3, error = $4, updated_at = $5 WHERE task_id = $6 AND lease_owner = $7`,
	releaseLeases: func(n int) string {
		return `UPDATE tasks SET lease_owner = NULL, lease_pid = 0, lease_host = '', lease_until = ''
		 WHERE lease_owner = $1 AND task_id IN (` + sqlstore.PostgresParams(2, n) + `)`
	},
	recordProgressAll: func(n int) string {
		return `UPDATE tasks SET status = CASE tasks.status WHEN 'interrupted' THEN tasks.status ELSE v.column2 END, stage = v.column3, updated_at = v.column4, error_code = v.column5, error = v.column6 FROM (VALUES ` +
			valuesRows(n, func(i int) string { return "(" + sqlstore.PostgresParams(2+6*i, 6) + ")" }) +
			`) AS v WHERE tasks.task_id = v.column1 AND tasks.lease_owner = $1`
	},

	batchRows:      `SELECT ` + pgBatchRowColumns + ` FROM batch_rows WHERE batch_id = $1 AND row_no > $2 ORDER BY row_no LIMIT $3`,
	insertBatchRow: `INSERT INTO batch_rows (batch_id, ` + pgBatchRowColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
	insertBatchRows: func(n int) string {
		return `INSERT INTO batch_rows (batch_id, ` + pgBatchRowColumns + `) VALUES ` +
			valuesRows(n, func(i int) string { return "($1, " + sqlstore.PostgresParams(2+11*i, 11) + ")" })
	},
	// UPDATE … FROM a VALUES list, whose columns are column1, column2, …;
	// the row numbers are cast, so that PostgreSQL reads them as integers.
	recordOutcomes: func(n int) string {
		return `UPDATE batch_rows SET outcome = v.column2, error_code = v.column3, error = v.column4 FROM (VALUES ` +
			valuesRows(n, func(i int) string {
				k := 2 + 4*i
				return "(CAST($" + strconv.Itoa(k) + " AS INTEGER), " + sqlstore.PostgresParams(k+1, 3) + ")"
			}) +
			`) AS v WHERE batch_rows.batch_id = $1 AND batch_rows.row_no = v.column1`
	},
	batchRowExists: `SELECT 1 FROM batch_rows WHERE batch_id = $1 AND row_no = $2`,
	countBatchRows: `SELECT count(*) FROM batch_rows WHERE batch_id = $1`,
	heldOrders:     `SELECT order_id FROM batch_rows WHERE batch_id = $1 AND duplicate_of = 0 AND error_code = '' ORDER BY row_no`,

	steps:        `SELECT ` + pgStepColumns + ` FROM steps WHERE task_id = $1 ORDER BY seq`,
	lastStep:     `SELECT ` + pgStepColumns + ` FROM steps WHERE task_id = $1 ORDER BY seq DESC LIMIT 1`,
	runningSteps: `SELECT ` + pgStepColumns + ` FROM steps WHERE task_id = $1 AND status = $2`,
	stepCounts:   `SELECT node, count(*), max(seq) FROM steps WHERE task_id = $1 GROUP BY node`,
	stepCountsIn: func(n int) string {
		return `SELECT task_id, node, count(*), max(seq) FROM steps WHERE task_id IN (` + sqlstore.PostgresParams(1, n) + `) GROUP BY task_id, node`
	},
	failedSteps: `SELECT s.node, count(*) FROM steps s WHERE s.task_id = $1 AND s.status IN ($2, $3) AND s.error <> $4
		 AND s.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = $1 AND d.node = s.node AND d.status IN ($5, $6)), 0)
		 GROUP BY s.node`,
	failedStepsIn: func(n int) string {
		return `SELECT s.task_id, s.node, count(*), 0 FROM steps s WHERE s.status IN ($1, $2) AND s.error <> $3
		 AND s.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = s.task_id AND d.node = s.node AND d.status IN ($4, $5)), 0)
		 AND s.task_id IN (` + sqlstore.PostgresParams(6, n) + `)
		 GROUP BY s.task_id, s.node`
	},
	startStep: `INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
		 SELECT $1, coalesce(max(seq), 0) + 1, $2, 1 + (SELECT count(*) FROM steps WHERE task_id = $1 AND node = $2), $3, $4
		 FROM steps WHERE task_id = $1
		 RETURNING seq`,
	addStep: `INSERT INTO steps (task_id, seq, node, attempt, status, started_at, ended_at, error) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
	addSteps: func(n int) string {
		return `INSERT INTO steps (task_id, seq, node, attempt, status, started_at, ended_at, error) VALUES ` + sqlstore.PostgresRows(1, n, 8)
	},
	endStep:          `UPDATE steps SET status = $1, error = $2, ended_at = $3 WHERE task_id = $4 AND seq = $5 AND status = 'running'`,
	failRunningSteps: `UPDATE steps SET status = $1, error = $2, ended_at = $3 WHERE task_id = $4 AND status = $5`,
	endStepHeld: `UPDATE steps SET status = $1, error = $2, ended_at = $3 WHERE task_id = $4 AND seq = $5 AND status = 'running'
	AND EXISTS (SELECT 1 FROM tasks WHERE task_id = $4 AND lease_owner = $6 AND status <> 'interrupted')`,
	failRunningStepsHeld: `UPDATE steps SET status = 'failed', error = $1, ended_at = $2 WHERE task_id = $3 AND status = 'running'
	AND EXISTS (SELECT 1 FROM tasks WHERE task_id = $3 AND lease_owner = $4 AND status <> 'interrupted')`,
	endHeld: `UPDATE tasks SET status = 'failed', stage = $1, error_code = $2, error = $3, updated_at = $4
	WHERE task_id = $5 AND status = 'running' AND lease_owner = $6 AND lease_epoch = $7`,
	held: `SELECT count(*) FROM tasks WHERE task_id = $1 AND status = 'running' AND lease_owner = $2 AND lease_epoch = $3`,
	heldRenew: `UPDATE tasks SET lease_until = $1
	WHERE task_id = $2 AND status = 'running' AND lease_owner = $3 AND lease_epoch = $4`,
	beginStep: `INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
	SELECT $1, (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE task_id = $1), $2,
	  1 + (SELECT count(*) FROM steps WHERE task_id = $1 AND node = $2), 'running', $3
	WHERE $4 <= 0 OR (SELECT count(*) FROM steps f WHERE f.task_id = $1 AND f.node = $2
	  AND f.status IN ('failed', 'running') AND f.error <> $5
	  AND f.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = $1 AND d.node = $2 AND d.status IN ('done', 'waiting')), 0)) < $4
	RETURNING seq`,
	beginStepHeld: `INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
	SELECT $1, (SELECT coalesce(max(seq), 0) + 1 FROM steps WHERE task_id = $1), $2,
	  1 + (SELECT count(*) FROM steps WHERE task_id = $1 AND node = $2), 'running', $3
	WHERE EXISTS (SELECT 1 FROM tasks WHERE task_id = $1 AND status = 'running' AND lease_owner = $6 AND lease_epoch = $7)
	  AND ($4 <= 0 OR (SELECT count(*) FROM steps f WHERE f.task_id = $1 AND f.node = $2
	  AND f.status IN ('failed', 'running') AND f.error <> $5
	  AND f.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = $1 AND d.node = $2 AND d.status IN ('done', 'waiting')), 0)) < $4)
	RETURNING seq`,
}
