package business

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlitedb"
)

// Task kinds (tasks.kind).
const (
	KindReturn = "return"
	KindBatch  = "batch"
)

// Timeline step statuses (steps.status).
const (
	StepRunning = "running"
	StepDone    = "done"
	StepWaiting = "waiting" // the node asked a question and parked
	StepFailed  = "failed"
)

// ErrBusy is matched by *LeaseHeldError: another live process drives the task.
var ErrBusy = errors.New("task is busy")

// Lease names the process that drives a task: Owner is unique per process
// run, PID and Host say where it runs, Until is when it lapses unless the
// holder's heartbeat renews it (UTC).
type Lease struct {
	Owner string    `json:"owner"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Until time.Time `json:"until"`
}

// LeaseHeldError reports a task whose lease a live process holds.
type LeaseHeldError struct {
	Task  string
	Lease Lease
}

// Error implements the error interface for *LeaseHeldError.
func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("task %s is busy: pid %d on %s drives it (lease until %s)", e.Task, e.Lease.PID, e.Lease.Host, e.Lease.Until.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrBusy }

// TaskLease returns the task's current lease (Owner "" when nobody holds it)
// and its kind. Errors: ErrNotFound.
func (s *Store) TaskLease(ctx context.Context, taskID string) (Lease, string, error) {
	var (
		owner       sql.NullString
		pid         int
		host, until string
		kind        string
	)
	err := s.q.QueryRowContext(ctx,
		`SELECT lease_owner, lease_pid, lease_host, lease_until, kind FROM tasks WHERE task_id = ?`, taskID).
		Scan(&owner, &pid, &host, &until, &kind)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, "", fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return Lease{}, "", fmt.Errorf("lease of task %s: %w", taskID, err)
	}
	l := Lease{Owner: owner.String, PID: pid, Host: host}
	if until != "" {
		if l.Until, err = parseTime(until); err != nil {
			return Lease{}, "", fmt.Errorf("lease of task %s: %w", taskID, err)
		}
	}
	return l, kind, nil
}

// AcquireLease makes me the holder of taskID's lease and sets its status to
// running, in one guarded transaction. A lease held by another owner is
// taken over only when it has lapsed (Until before now) or gone(held) says
// its holder is dead; otherwise it returns a *LeaseHeldError (ErrBusy). It
// returns the status the task had before. Errors: ErrNotFound, ErrBusy,
// ErrConflict (the lease changed between read and write).
func (s *Store) AcquireLease(ctx context.Context, taskID string, me Lease, now time.Time, gone func(Lease) bool) (string, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return "", fmt.Errorf("acquire lease of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	var (
		owner       sql.NullString
		pid         int
		host, until string
		status      string
	)
	err = tx.QueryRowContext(ctx,
		`SELECT lease_owner, lease_pid, lease_host, lease_until, status FROM tasks WHERE task_id = ?`, taskID).
		Scan(&owner, &pid, &host, &until, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("acquire lease of task %s: %w", taskID, err)
	}
	if owner.Valid && owner.String != me.Owner {
		held := Lease{Owner: owner.String, PID: pid, Host: host}
		if held.Until, err = parseTime(until); err != nil {
			return "", fmt.Errorf("acquire lease of task %s: %w", taskID, err)
		}
		if held.Until.After(now) && !gone(held) {
			return "", &LeaseHeldError{Task: taskID, Lease: held}
		}
	}
	// Guarded by the owner read above: a concurrent taker makes this 0 rows.
	res, err := tx.ExecContext(ctx,
		`UPDATE tasks SET lease_owner = ?, lease_pid = ?, lease_host = ?, lease_until = ?, status = 'running', updated_at = ?
		 WHERE task_id = ? AND lease_owner IS ?`,
		me.Owner, me.PID, me.Host, formatTime(me.Until), formatTime(now), taskID, owner)
	if err := rowsChanged(res, err); err != nil {
		return "", fmt.Errorf("acquire lease of task %s: %w", taskID, err)
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("acquire lease of task %s: %w", taskID, err)
	}
	return status, nil
}

// RenewLease extends the lease to until while owner holds it and the task is
// still running. ErrConflict means the lease was lost or an operator stopped
// the task: the holder must stop driving it.
func (s *Store) RenewLease(ctx context.Context, taskID, owner string, until time.Time) error {
	res, err := s.q.ExecContext(ctx,
		`UPDATE tasks SET lease_until = ? WHERE task_id = ? AND lease_owner = ? AND status = 'running'`,
		formatTime(until), taskID, owner)
	if err := rowsChanged(res, err); err != nil {
		return fmt.Errorf("renew lease of task %s: %w", taskID, err)
	}
	return nil
}

// ReleaseLease records the run's final status and stage and gives the lease
// up, only while owner holds it (the caller decides the status: a run that
// finished although a stop was requested is done — the finished status
// wins). ErrConflict: owner lost the lease.
func (s *Store) ReleaseLease(ctx context.Context, taskID, owner, status, stage string) error {
	if err := rowsChanged(s.q.ExecContext(ctx, releaseLeaseSQL, status, stage, formatTime(s.now()), taskID, owner)); err != nil {
		return fmt.Errorf("release lease of task %s: %w", taskID, err)
	}
	return nil
}

// ReleaseLeaseSync is ReleaseLease committed durably against power loss,
// together with every earlier commit (as Sync, in the same commit): the last
// business write of a command.
func (s *Store) ReleaseLeaseSync(ctx context.Context, taskID, owner, status, stage string) error {
	err := s.durable(ctx, func(tx sqlitedb.Querier) error {
		return rowsChanged(tx.ExecContext(ctx, releaseLeaseSQL, status, stage, formatTime(s.now()), taskID, owner))
	})
	if err != nil {
		return fmt.Errorf("release lease of task %s: %w", taskID, err)
	}
	return nil
}

// RecordProgress records the run's status and stage while owner keeps the
// lease (ReleaseLeases lets go of it later). ErrConflict: owner does not
// hold the lease.
func (s *Store) RecordProgress(ctx context.Context, taskID, owner, status, stage string) error {
	if err := rowsChanged(s.q.ExecContext(ctx,
		`UPDATE tasks SET status = ?, stage = ?, updated_at = ? WHERE task_id = ? AND lease_owner = ?`,
		status, stage, formatTime(s.now()), taskID, owner)); err != nil {
		return fmt.Errorf("record progress of task %s: %w", taskID, err)
	}
	return nil
}

// ReleaseLeases gives up owner's leases of the tasks taskIDs, in one
// statement, keeping their status; tasks owner does not hold are left as
// they are.
func (s *Store) ReleaseLeases(ctx context.Context, owner string, taskIDs []string) error {
	ids, err := json.Marshal(taskIDs)
	if err != nil {
		return err
	}
	_, err = s.q.ExecContext(ctx,
		`UPDATE tasks SET lease_owner = NULL, lease_pid = 0, lease_host = '', lease_until = ''
		 WHERE lease_owner = ? AND task_id IN (SELECT value FROM json_each(?))`, owner, string(ids))
	if err != nil {
		return fmt.Errorf("release %d leases: %w", len(taskIDs), err)
	}
	return nil
}

const releaseLeaseSQL = `UPDATE tasks SET status = ?, stage = ?, lease_owner = NULL, lease_pid = 0, lease_host = '', lease_until = '', updated_at = ?
	WHERE task_id = ? AND lease_owner = ?`

// RequestStop moves a running task to interrupted (an operator stop). The
// process driving it sees that at its next heartbeat and cancels the node
// that runs. A task in any other status is ErrConflict, naming the status:
// a task that finished first keeps its finished status.
func (s *Store) RequestStop(ctx context.Context, taskID string) error {
	return s.SetProgressStatus(ctx, taskID, "running", "interrupted")
}

// SetProgressStatus moves a task from status from to status to, keeping its
// stage; 0 rows is ErrConflict naming the status found, or ErrNotFound.
func (s *Store) SetProgressStatus(ctx context.Context, taskID, from, to string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("set status of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx,
		`UPDATE tasks SET status = ?, updated_at = ? WHERE task_id = ? AND status = ?`,
		to, formatTime(s.now()), taskID, from)
	if err := rowsChanged(res, err); errors.Is(err, ErrConflict) {
		var current string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM tasks WHERE task_id = ?`, taskID).Scan(&current); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %s: %w", taskID, ErrNotFound)
		}
		return fmt.Errorf("task %s is %s, not %s: %w", taskID, current, from, ErrConflict)
	} else if err != nil {
		return fmt.Errorf("set status of task %s: %w", taskID, err)
	}
	return tx.Commit()
}

// SetKind records the kind of a task (KindReturn or KindBatch).
func (s *Store) SetKind(ctx context.Context, taskID, kind string) error {
	res, err := s.q.ExecContext(ctx, `UPDATE tasks SET kind = ? WHERE task_id = ?`, kind, taskID)
	if err := rowsChanged(res, err); err != nil {
		return fmt.Errorf("set kind of task %s: %w", taskID, err)
	}
	return nil
}

// rowsChanged turns an Exec result into ErrConflict when no row matched the
// guard: a guarded update that changed nothing is never ignored.
func rowsChanged(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrConflict
	}
	return nil
}

// Step is one node run in a task's timeline.
type Step struct {
	Task      string    `json:"task"`
	Seq       int       `json:"seq"` // 1, 2, 3 … per task, no gaps, never reused
	Node      string    `json:"node"`
	Attempt   int       `json:"attempt"` // 1 for the node's first run in this task
	Status    string    `json:"status"`  // StepRunning, StepDone, StepWaiting or StepFailed
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"` // zero while running
	Error     string    `json:"error,omitempty"`
}

// StartStep appends a running step for node to the task's timeline and
// returns its seq.
func (s *Store) StartStep(ctx context.Context, taskID, node string, now time.Time) (int, error) {
	// One statement: a write statement takes the write lock before it reads,
	// so the seq it computes cannot be taken by another writer.
	var seq int
	if err := s.q.QueryRowContext(ctx,
		`INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
		 SELECT ?1, coalesce(max(seq), 0) + 1, ?2, 1 + (SELECT count(*) FROM steps WHERE task_id = ?1 AND node = ?2), ?3, ?4
		 FROM steps WHERE task_id = ?1
		 RETURNING seq`, taskID, node, StepRunning, formatTime(now)).Scan(&seq); err != nil {
		return 0, fmt.Errorf("start step of task %s: %w", taskID, err)
	}
	return seq, nil
}

// LastStep returns the task's step with the highest seq, or ErrNotFound
// when it has none.
func (s *Store) LastStep(ctx context.Context, taskID string) (Step, error) {
	st, err := scanStep(taskID, s.q.QueryRowContext(ctx,
		`SELECT `+stepColumns+` FROM steps WHERE task_id = ? ORDER BY seq DESC LIMIT 1`, taskID))
	if errors.Is(err, sql.ErrNoRows) {
		return Step{}, fmt.Errorf("last step of task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return Step{}, fmt.Errorf("last step of task %s: %w", taskID, err)
	}
	return st, nil
}

const stepColumns = `seq, node, attempt, status, started_at, ended_at, error`

// scanStep reads one row of stepColumns, a step of task taskID.
func scanStep(taskID string, sc scanner) (Step, error) {
	st := Step{Task: taskID}
	var started, ended string
	if err := sc.Scan(&st.Seq, &st.Node, &st.Attempt, &st.Status, &started, &ended, &st.Error); err != nil {
		return Step{}, err
	}
	var err error
	if st.StartedAt, err = parseTime(started); err != nil {
		return Step{}, err
	}
	if ended != "" {
		if st.EndedAt, err = parseTime(ended); err != nil {
			return Step{}, err
		}
	}
	return st, nil
}

// StepCounts returns the highest step seq of the task (0 when it has none)
// and how many steps each node has had: what the next step's seq and
// attempt follow from.
func (s *Store) StepCounts(ctx context.Context, taskID string) (int, map[string]int, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT node, count(*), max(seq) FROM steps WHERE task_id = ? GROUP BY node`, taskID)
	if err != nil {
		return 0, nil, fmt.Errorf("step counts of task %s: %w", taskID, err)
	}
	defer rows.Close()
	maxSeq, attempts := 0, map[string]int{}
	for rows.Next() {
		var node string
		var n, top int
		if err := rows.Scan(&node, &n, &top); err != nil {
			return 0, nil, fmt.Errorf("step counts of task %s: %w", taskID, err)
		}
		attempts[node] = n
		maxSeq = max(maxSeq, top)
	}
	return maxSeq, attempts, rows.Err()
}

// AddStep records st (seq, attempt, status and times as given) in the
// timeline of st.Task: a step recorded once it ended. Errors: a seq the
// task has already (a unique violation).
func (s *Store) AddStep(ctx context.Context, st Step) error {
	ended := ""
	if !st.EndedAt.IsZero() {
		ended = formatTime(st.EndedAt)
	}
	_, err := s.q.ExecContext(ctx,
		`INSERT INTO steps (task_id, seq, node, attempt, status, started_at, ended_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		st.Task, st.Seq, st.Node, st.Attempt, st.Status, formatTime(st.StartedAt), ended, st.Error)
	if err != nil {
		return fmt.Errorf("add step %d of task %s: %w", st.Seq, st.Task, err)
	}
	return nil
}

// EndStep records how step seq ended; only a running step changes.
func (s *Store) EndStep(ctx context.Context, taskID string, seq int, status, msg string, now time.Time) error {
	_, err := s.q.ExecContext(ctx,
		`UPDATE steps SET status = ?, error = ?, ended_at = ? WHERE task_id = ? AND seq = ? AND status = ?`,
		status, msg, formatTime(now), taskID, seq, StepRunning)
	if err != nil {
		return fmt.Errorf("end step %d of task %s: %w", seq, taskID, err)
	}
	return nil
}

// InterruptedStep appends a failed step for node with error msg that
// started and ended at now: the step that was due when a run stopped
// between two steps.
func (s *Store) InterruptedStep(ctx context.Context, taskID, node, msg string, now time.Time) error {
	seq, err := s.StartStep(ctx, taskID, node, now)
	if err != nil {
		return err
	}
	_, err = s.q.ExecContext(ctx,
		`UPDATE steps SET status = ?, error = ?, ended_at = ? WHERE task_id = ? AND seq = ?`,
		StepFailed, msg, formatTime(now), taskID, seq)
	if err != nil {
		return fmt.Errorf("interrupted step of task %s: %w", taskID, err)
	}
	return nil
}

// FailRunningSteps marks every step of the task still running as failed with
// msg (steps left by a process that died or was stopped) and returns how
// many it marked.
func (s *Store) FailRunningSteps(ctx context.Context, taskID, msg string, now time.Time) (int, error) {
	res, err := s.q.ExecContext(ctx,
		`UPDATE steps SET status = ?, error = ?, ended_at = ? WHERE task_id = ? AND status = ?`,
		StepFailed, msg, formatTime(now), taskID, StepRunning)
	if err != nil {
		return 0, fmt.Errorf("fail running steps of task %s: %w", taskID, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Steps returns the task's timeline in seq order.
func (s *Store) Steps(ctx context.Context, taskID string) ([]Step, error) {
	rows, err := s.q.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps WHERE task_id = ? ORDER BY seq`, taskID)
	if err != nil {
		return nil, fmt.Errorf("steps of task %s: %w", taskID, err)
	}
	defer rows.Close()
	var out []Step
	for rows.Next() {
		st, err := scanStep(taskID, rows)
		if err != nil {
			return nil, fmt.Errorf("steps of task %s: %w", taskID, err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// StaleTasks returns the running tasks whose lease holder is gone: no
// holder, a lapsed lease, or gone(lease) true. These are what `recover` resumes.
func (s *Store) StaleTasks(ctx context.Context, now time.Time, gone func(Lease) bool) ([]Task, error) {
	running, err := s.ListTasks(ctx, "", "running")
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, t := range running {
		l, _, err := s.TaskLease(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		if l.Owner == "" || !l.Until.After(now) || gone(l) {
			out = append(out, t)
		}
	}
	return out, nil
}

// CreateLeasedTask records task t (as CreateTask) of the given kind and
// draft validity ttl (whole seconds kept) with l as its lease, in one
// statement, so no other process can see the new task running without a
// holder. Errors: ErrTaskExists.
func (s *Store) CreateLeasedTask(ctx context.Context, t Task, kind string, ttl time.Duration, l Lease) error {
	if t.ID == "" || t.User == "" {
		return fmt.Errorf("create task %q: task id and user are required", t.ID)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	_, err := s.q.ExecContext(ctx,
		`INSERT INTO tasks (`+taskColumns+`, kind, draft_ttl_seconds, lease_owner, lease_pid, lease_host, lease_until)
		 VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.User, t.OrderID, t.Reason, t.Fingerprint, t.Stage,
		formatTime(t.CreatedAt), formatTime(t.CreatedAt), kind, int64(ttl/time.Second), l.Owner, l.PID, l.Host, formatTime(l.Until))
	if isUniqueViolation(err) {
		return fmt.Errorf("create task %s: %w", t.ID, ErrTaskExists)
	}
	if err != nil {
		return fmt.Errorf("create task %s: %w", t.ID, err)
	}
	return nil
}

// BatchRow is one line of a batch file: the return task to run for it.
type BatchRow struct {
	RowNo   int    `json:"row"` // 1-based position in the file, header excluded
	TaskID  string `json:"task"`
	OrderID string `json:"order"`
	Reason  string `json:"reason"`
}

// CreateBatch records batch task t (kind batch) holding lease l, with its
// rows, in one transaction: a batch never exists without its rows.
// Errors: ErrTaskExists.
func (s *Store) CreateBatch(ctx context.Context, t Task, l Lease, rows []BatchRow) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	defer tx.Rollback()
	now := formatTime(s.now())
	_, err = tx.ExecContext(ctx,
		`INSERT INTO tasks (`+taskColumns+`, kind, lease_owner, lease_pid, lease_host, lease_until)
		 VALUES (?, ?, '', '', ?, 'running', '', ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.User, t.Fingerprint, now, now, KindBatch, l.Owner, l.PID, l.Host, formatTime(l.Until))
	if isUniqueViolation(err) {
		return fmt.Errorf("create batch %s: %w", t.ID, ErrTaskExists)
	}
	if err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO batch_rows (batch_id, row_no, task_id, order_id, reason) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, t.ID, r.RowNo, r.TaskID, r.OrderID, r.Reason); err != nil {
			return fmt.Errorf("create batch %s row %d: %w", t.ID, r.RowNo, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	return nil
}

// BatchRows returns up to n rows of the batch starting after row number
// after (0 for the first), in row order.
func (s *Store) BatchRows(ctx context.Context, batchID string, after, n int) ([]BatchRow, error) {
	rows, err := s.q.QueryContext(ctx,
		`SELECT row_no, task_id, order_id, reason FROM batch_rows WHERE batch_id = ? AND row_no > ? ORDER BY row_no LIMIT ?`,
		batchID, after, n)
	if err != nil {
		return nil, fmt.Errorf("rows of batch %s: %w", batchID, err)
	}
	defer rows.Close()
	var out []BatchRow
	for rows.Next() {
		var r BatchRow
		if err := rows.Scan(&r.RowNo, &r.TaskID, &r.OrderID, &r.Reason); err != nil {
			return nil, fmt.Errorf("rows of batch %s: %w", batchID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// CountBatchRows returns how many rows the batch has.
func (s *Store) CountBatchRows(ctx context.Context, batchID string) (int, error) {
	var n int
	if err := s.q.QueryRowContext(ctx, `SELECT count(*) FROM batch_rows WHERE batch_id = ?`, batchID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows of batch %s: %w", batchID, err)
	}
	return n, nil
}

// DraftTTL returns the draft validity the task was started with.
// Errors: ErrNotFound.
func (s *Store) DraftTTL(ctx context.Context, taskID string) (time.Duration, error) {
	var secs int64
	err := s.q.QueryRowContext(ctx, `SELECT draft_ttl_seconds FROM tasks WHERE task_id = ?`, taskID).Scan(&secs)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("draft ttl of task %s: %w", taskID, err)
	}
	return time.Duration(secs) * time.Second, nil
}

// ErrLostCheckpoints: business.sqlite records tasks but the checkpoint file
// beside it is missing or empty, so their runs are gone.
var ErrLostCheckpoints = errors.New("the checkpoint file is missing or empty, so their runs are lost; restore checkpoints.sqlite from a backup (or move both files away to start afresh)")

// CountTasksReadOnly counts the tasks recorded in the business file at path
// without changing it (see sqlitedb.CountRowsReadOnly): a missing, empty or
// unreadable file counts 0.
func CountTasksReadOnly(ctx context.Context, path string) (int, error) {
	return sqlitedb.CountRowsReadOnly(ctx, path, "tasks")
}
