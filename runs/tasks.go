package runs

import (
	"assistant/internal/sqlstore"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// DefaultTaskStatus is the status CreateTask records when TaskRecord.Status
// is empty.
const DefaultTaskStatus = "running"

// TaskRecord is the run record of one task (the engine's thread): who
// asked, for which order, and where the run stands. Status is a run status
// and Stage a flow stage (docs/design.md "Run status"); this package stores
// them as given and does not judge transitions.
type TaskRecord struct {
	ID          string    `json:"task"`
	User        string    `json:"user"`
	OrderID     string    `json:"order"`
	Reason      string    `json:"reason"`
	Fingerprint string    `json:"fingerprint"` // hash of the start input, to tell a retry from a conflict
	Status      string    `json:"status"`
	Stage       string    `json:"stage"`
	CreatedAt   time.Time `json:"created_at"` // UTC
	UpdatedAt   time.Time `json:"updated_at"` // UTC
	// Kind is KindReturn or KindBatch; read back, not written by CreateTask
	// (which records KindReturn).
	Kind string `json:"kind"`
	// Lease is the process that drives the task now (Owner "" when nobody
	// does), as read with the record; not written by CreateTask.
	Lease Lease `json:"-"`
	// ErrorCode and Error are why a task that ended failed failed (its
	// failure's code and message, written with the status: Release,
	// Progress); "" for any other status, and for a task that failed
	// before business schema 9. Read back with the record.
	ErrorCode string `json:"error_code,omitempty"`
	Error     string `json:"error,omitempty"`
	// Approvals is how many people must approve a return task's draft (1
	// or 2; 0 means 1): written by CreateLeasedTask, read back by
	// Store.Approvals, not with the record.
	Approvals int `json:"-"`
}

// CreateTask records task t. An empty Status becomes DefaultTaskStatus, a
// zero CreatedAt becomes the store's clock, a zero UpdatedAt becomes
// CreatedAt. ID and User are required. Errors: ErrTaskExists when the task id
// is taken (by any user).
func (s *Store) CreateTask(ctx context.Context, t TaskRecord) error {
	if t.ID == "" || t.User == "" {
		return fmt.Errorf("create task %q: task id and user are required", t.ID)
	}
	if t.Status == "" {
		t.Status = DefaultTaskStatus
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.CreatedAt
	}
	// ON CONFLICT DO NOTHING, not a unique violation: inside a batch
	// chunk's transaction a failed statement would abort the whole
	// transaction on PostgreSQL, and the chunk goes on after a task that
	// exists.
	res, err := s.h.Q().ExecContext(ctx, s.q.createTask,
		t.ID, t.User, t.OrderID, t.Reason, t.Fingerprint, t.Status, t.Stage,
		formatTime(t.CreatedAt), formatTime(t.UpdatedAt))
	if err := sqlstore.RowsChanged(res, err, ErrTaskExists); err != nil {
		return fmt.Errorf("create task %s: %w", t.ID, err)
	}
	return nil
}

// Task returns the record of task taskID, or ErrNotFound. It does not check the user:
// the caller compares Task.User and reports another user's task as not found.
func (s *Store) Task(ctx context.Context, taskID string) (TaskRecord, error) {
	row := s.h.Q().QueryRowContext(ctx, s.q.task, taskID)
	t, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return TaskRecord{}, fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return TaskRecord{}, fmt.Errorf("task %s: %w", taskID, err)
	}
	return t, nil
}

// SetProgress sets status and stage of task taskID and stamps updated_at with
// the store's clock. With from == "" the update is unconditional. With
// from != "" it is guarded (WHERE task_id=? AND status=from): when the task
// is in another status it returns ErrConflict and changes nothing, so two
// processes cannot both move a task out of one status. An unknown task gives
// ErrNotFound in both modes.
func (s *Store) SetProgress(ctx context.Context, taskID, from, status, stage string) error {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return fmt.Errorf("set progress of task %s: %w", taskID, err)
	}
	defer tx.Rollback()

	updated := formatTime(s.now())
	var res sql.Result
	if from == "" {
		res, err = tx.ExecContext(ctx, s.q.setProgress, status, stage, updated, taskID)
	} else {
		res, err = tx.ExecContext(ctx, s.q.setProgressFrom, status, stage, updated, taskID, from)
	}
	if err != nil {
		return fmt.Errorf("set progress of task %s: %w", taskID, err)
	}
	// Zero rows is the guard failing (or an unknown task), never ignored.
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("set progress of task %s: %w", taskID, err)
	}
	if n == 0 {
		var current string
		err := tx.QueryRowContext(ctx, s.q.taskStatus, taskID).Scan(&current)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("set progress of task %s: %w", taskID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("set progress of task %s: %w", taskID, err)
		}
		return fmt.Errorf("set progress of task %s: status is %s, not %s: %w", taskID, current, from, ErrConflict)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("set progress of task %s: %w", taskID, err)
	}
	return nil
}

// ListTasks returns tasks oldest first (created_at, then task id). An empty
// user or status means any.
func (s *Store) ListTasks(ctx context.Context, user, status string) ([]TaskRecord, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.q.listTasks, user, user, status, status)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var tasks []TaskRecord
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		tasks = append(tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return tasks, nil
}

// TasksUpdatedBefore returns the tasks, of any user, whose status is one of
// statuses and whose record was last updated before before, oldest update
// first. It is how prune finds finished tasks.
func (s *Store) TasksUpdatedBefore(ctx context.Context, statuses []string, before time.Time) ([]TaskRecord, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	// One parameter per status; the values are still bound parameters.
	args := make([]any, 0, len(statuses)+1)
	for _, st := range statuses {
		args = append(args, st)
	}
	args = append(args, formatTime(before))
	rows, err := s.h.Q().QueryContext(ctx, s.q.tasksUpdatedBefore(len(statuses)), args...)
	if err != nil {
		return nil, fmt.Errorf("tasks updated before %s: %w", formatTime(before), err)
	}
	defer rows.Close()
	var tasks []TaskRecord
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("tasks updated before %s: %w", formatTime(before), err)
		}
		tasks = append(tasks, t)
	}
	return tasks, rows.Err()
}

func scanTask(sc scanner) (TaskRecord, error) {
	var (
		t                       TaskRecord
		created, updated, until string
		owner                   sql.NullString
	)
	if err := sc.Scan(&t.ID, &t.User, &t.OrderID, &t.Reason, &t.Fingerprint, &t.Status, &t.Stage, &created, &updated,
		&t.Kind, &owner, &t.Lease.PID, &t.Lease.Host, &until, &t.Lease.Epoch, &t.ErrorCode, &t.Error); err != nil {
		return TaskRecord{}, err
	}
	t.Lease.Owner = owner.String
	var err error
	if t.CreatedAt, err = parseTime(created); err != nil {
		return TaskRecord{}, err
	}
	if t.UpdatedAt, err = parseTime(updated); err != nil {
		return TaskRecord{}, err
	}
	if until != "" {
		if t.Lease.Until, err = parseTime(until); err != nil {
			return TaskRecord{}, err
		}
	}
	return t, nil
}

// CreateLeasedTask records task t (as CreateTask) of the given kind and
// draft validity ttl (whole seconds kept) with l as its lease, in one
// statement, so no other process can see the new task running without a
// holder. Errors: ErrTaskExists.
func (s *Store) CreateLeasedTask(ctx context.Context, t TaskRecord, kind string, ttl time.Duration, l Lease) error {
	if t.ID == "" || t.User == "" {
		return fmt.Errorf("create task %q: task id and user are required", t.ID)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = s.now()
	}
	approvals := max(t.Approvals, 1)
	// ON CONFLICT DO NOTHING: see CreateTask.
	res, err := s.h.Q().ExecContext(ctx, s.q.createLeasedTask,
		t.ID, t.User, t.OrderID, t.Reason, t.Fingerprint, t.Stage,
		formatTime(t.CreatedAt), formatTime(t.CreatedAt), kind, int64(ttl/time.Second), approvals, l.Owner, l.PID, l.Host, formatTime(l.Until))
	if err := sqlstore.RowsChanged(res, err, ErrTaskExists); err != nil {
		return fmt.Errorf("create task %s: %w", t.ID, err)
	}
	return nil
}

// Approvals returns how many approvals the task was started with (1 or
// 2). Errors: ErrNotFound.
func (s *Store) Approvals(ctx context.Context, taskID string) (int, error) {
	var n int
	err := s.h.Q().QueryRowContext(ctx, s.q.approvals, taskID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("approvals of task %s: %w", taskID, err)
	}
	return n, nil
}

// DraftTTL returns the draft validity the task was started with.
// Errors: ErrNotFound.
func (s *Store) DraftTTL(ctx context.Context, taskID string) (time.Duration, error) {
	var secs int64
	err := s.h.Q().QueryRowContext(ctx, s.q.draftTTL, taskID).Scan(&secs)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("draft ttl of task %s: %w", taskID, err)
	}
	return time.Duration(secs) * time.Second, nil
}
