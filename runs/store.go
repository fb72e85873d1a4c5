package runs

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

var (
	// ErrNotFound reports an unknown task, or a task with no timeline step.
	ErrNotFound = errors.New("not found")

	// ErrTaskExists reports a CreateTask, CreateLeasedTask or CreateBatch
	// whose task id is already taken (by any user).
	ErrTaskExists = errors.New("task exists")

	// ErrConflict reports that a guarded update found the row in another
	// state than the caller expected (its WHERE clause matched 0 rows): the
	// lease was lost, or the status moved.
	ErrConflict = errors.New("state changed under the request")

	// ErrBusy is matched by *LeaseHeldError: another live process drives the task.
	ErrBusy = errors.New("task is busy")

	// ErrLeaseLost: another process took the task's lease over; the former
	// holder must stop and write nothing more. It matches ErrConflict.
	ErrLeaseLost = &conflict{"lease lost: another process took the task over"}

	// ErrStopped: an operator stopped the task (it is interrupted); its
	// holder must stop. It matches ErrConflict.
	ErrStopped = &conflict{"stopped by an operator"}

	// ErrLostCheckpoints: business.sqlite records tasks but the checkpoint
	// file beside it is missing or empty, so their runs are gone.
	ErrLostCheckpoints = errors.New("the checkpoint file is missing or empty, so their runs are lost")
)

// Store is the run bookkeeping of a data dir: task records, leases and
// heartbeats, operator stops, the timeline and batch rows. Its tables live
// in business.sqlite beside the return desk's (created by
// business/migrations/0002_runs.sql), or in the desk's PostgreSQL schema
// (business/pgmigrations), so a Store is made over the business store's
// Handle, not opened on its own. It is safe for concurrent use.
type Store struct {
	h   *sqlstore.Handle
	q   *queries // the statements of h's database
	now func() time.Time
}

// New returns the run bookkeeping over h, the Handle of an opened
// business store, SQLite or PostgreSQL (business.Store.Handle). now is the clock for the times
// the store stamps itself (updated_at); nil means time.Now. Inside
// business.Store.InTx, pass the transaction's Handle: the Store's writes
// then join that one commit.
func New(h *sqlstore.Handle, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{h: h, q: sqlstore.Pick(h.Database(), sqliteQueries, postgresQueries), now: now}
}

// Sync makes every earlier commit to the file durable against power loss
// (sqlstore.Handle.Sync).
func (s *Store) Sync(ctx context.Context) error { return s.h.Sync(ctx) }

// CountTasksReadOnly counts the tasks recorded in the business file at path
// without changing it (see sqlite.CountRowsReadOnly): a missing, empty or
// unreadable file counts 0.
func CountTasksReadOnly(ctx context.Context, path string) (int, error) {
	return sqlite.CountRowsReadOnly(ctx, path, "tasks")
}

// rowsChanged turns an Exec result into ErrConflict when no row matched the
// guard: a guarded update that changed nothing is never ignored.
func rowsChanged(res sql.Result, err error) error {
	return sqlstore.RowsChanged(res, err, ErrConflict)
}

func formatTime(t time.Time) string { return sqlstore.FormatTime(t) }

func parseTime(s string) (time.Time, error) { return sqlstore.ParseTime(s) }

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// conflict is a sentinel that also matches ErrConflict.
type conflict struct{ msg string }

func (e *conflict) Error() string { return e.msg }

// Is makes errors.Is(err, ErrConflict) true.
func (e *conflict) Is(target error) bool { return target == ErrConflict }
