package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// Task kinds (tasks.kind).
const (
	KindReturn = "return"
	KindBatch  = "batch"
)

// Lease names the process that drives a task: Owner is unique per process
// run, PID and Host say where it runs, Until is when it lapses unless the
// holder's heartbeat renews it (UTC).
type Lease struct {
	Owner string    `json:"owner"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Until time.Time `json:"until"`
	// Epoch is the fencing epoch: how many times the task's lease has been
	// acquired (1 for the creation's). A release keeps it.
	Epoch int64 `json:"epoch"`
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
		epoch       int64
	)
	err := s.h.Q().QueryRowContext(ctx, s.q.taskLease, taskID).
		Scan(&owner, &pid, &host, &until, &kind, &epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, "", fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return Lease{}, "", fmt.Errorf("lease of task %s: %w", taskID, err)
	}
	l := Lease{Owner: owner.String, PID: pid, Host: host, Epoch: epoch}
	if until != "" {
		if l.Until, err = parseTime(until); err != nil {
			return Lease{}, "", fmt.Errorf("lease of task %s: %w", taskID, err)
		}
	}
	return l, kind, nil
}

// Liveness is what a caller knows of a lease holder's process, to decide
// whether its lease may be taken over.
type Liveness int

const (
	// HolderUnknown: nothing tells (another host): the lease's expiry
	// decides.
	HolderUnknown Liveness = iota
	// HolderAlive: the holder's process is known to run (its pid exists on
	// this host): its lease holds whatever the clock says.
	HolderAlive
	// HolderGone: the holder's process is known to be dead: its lease may
	// be taken over before it expires.
	HolderGone
)

// MayTakeOver reports whether a lease held by another owner may be taken
// over at now, given what check says of its holder: when it is gone, or
// nothing tells and the lease has lapsed. It is AcquireLease's rule, for a
// caller that must act before taking over (raise a fence).
func MayTakeOver(held Lease, now time.Time, check func(Lease) Liveness) bool {
	switch check(held) {
	case HolderGone:
		return true
	case HolderAlive:
		return false
	}
	return !held.Until.After(now)
}

// Acquired is what AcquireLease found and did.
type Acquired struct {
	PrevStatus string // the task's status before
	Epoch      int64  // the lease's new fencing epoch
	// TookOver is true when another owner held the lease (gone or lapsed):
	// a process of that owner may still write, so the caller raises the
	// checkpoint store's fence to Epoch before its own first write.
	TookOver bool
}

// AcquireLease makes me the holder of taskID's lease, raises its fencing
// epoch and sets its status to running, in one guarded transaction. A lease
// held by another owner is taken over only when check says its holder is
// gone, or says nothing and the lease has lapsed at now; otherwise it
// returns a *LeaseHeldError (ErrBusy). Errors: ErrNotFound, ErrBusy,
// ErrConflict (the lease changed between read and write).
func (s *Store) AcquireLease(ctx context.Context, taskID string, me Lease, now time.Time, check func(Lease) Liveness) (Acquired, error) {
	return s.AcquireLeaseIf(ctx, taskID, me, now, check, "")
}

// AcquireLeaseIf is AcquireLease of a task that must be in status (""
// takes it in any status), checked in the same guarded transaction as the
// lease: what recover takes, a task left running, so that a stop written
// after recover chose the task is never turned back into running (the
// task stays interrupted, docs/design.md "Run status"). A task in another
// status is ErrStopped when it is interrupted, else ErrConflict, each
// naming the status; nothing is written then.
func (s *Store) AcquireLeaseIf(ctx context.Context, taskID string, me Lease, now time.Time, check func(Lease) Liveness, status string) (Acquired, error) {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return Acquired{}, fmt.Errorf("acquire lease of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	var (
		owner       sql.NullString
		pid         int
		host, until string
		a           Acquired
	)
	err = tx.QueryRowContext(ctx, s.q.leaseToAcquire, taskID).
		Scan(&owner, &pid, &host, &until, &a.PrevStatus, &a.Epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return Acquired{}, fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return Acquired{}, fmt.Errorf("acquire lease of task %s: %w", taskID, err)
	}
	if status != "" && a.PrevStatus != status {
		why := ErrConflict
		if a.PrevStatus == "interrupted" {
			why = ErrStopped
		}
		return Acquired{}, fmt.Errorf("task %s is %s, not %s: %w", taskID, a.PrevStatus, status, why)
	}
	if owner.Valid && owner.String != me.Owner {
		held := Lease{Owner: owner.String, PID: pid, Host: host, Epoch: a.Epoch}
		if held.Until, err = parseTime(until); err != nil {
			return Acquired{}, fmt.Errorf("acquire lease of task %s: %w", taskID, err)
		}
		if !MayTakeOver(held, now, check) {
			return Acquired{}, &LeaseHeldError{Task: taskID, Lease: held}
		}
		a.TookOver = true
	}
	// Guarded by the owner and status read above: a concurrent taker, or a
	// stop written meanwhile, makes this 0 rows.
	res, err := tx.ExecContext(ctx, s.q.acquireLease,
		me.Owner, me.PID, me.Host, formatTime(me.Until), formatTime(now), taskID, owner, a.PrevStatus)
	if err := rowsChanged(res, err); err != nil {
		return Acquired{}, fmt.Errorf("acquire lease of task %s: %w", taskID, err)
	}
	if err := tx.Commit(); err != nil {
		return Acquired{}, fmt.Errorf("acquire lease of task %s: %w", taskID, err)
	}
	a.Epoch++
	return a, nil
}

// RenewLease extends the lease to until while owner holds it and the task is
// still running. ErrStopped: an operator stopped the task (the holder must
// stop driving it and record nothing but its half-done step); ErrLeaseLost:
// another owner holds the lease now (the holder must stop and write
// nothing). Both match ErrConflict.
func (s *Store) RenewLease(ctx context.Context, taskID, owner string, until time.Time) error {
	res, err := s.h.Q().ExecContext(ctx, s.q.renewLease, formatTime(until), taskID, owner)
	if err := rowsChanged(res, err); errors.Is(err, ErrConflict) {
		return s.whyNotHeld(ctx, taskID, owner, 0)
	} else if err != nil {
		return fmt.Errorf("renew lease of task %s: %w", taskID, err)
	}
	return nil
}

// whyNotHeld says why a guarded write by owner (at epoch, when epoch > 0)
// to a running task matched no row: ErrLeaseLost when another owner, none,
// or another lease of the same owner holds it now; ErrStopped when the task
// is no longer running (an operator stopped it, or it ended); ErrNotFound
// when it is gone.
func (s *Store) whyNotHeld(ctx context.Context, taskID, owner string, epoch int64) error {
	return s.whyNotHeldOn(ctx, s.h.Q(), taskID, owner, epoch)
}

// whyNotHeldOn is whyNotHeld read on q (a transaction under way).
func (s *Store) whyNotHeldOn(ctx context.Context, q sqlstore.Querier, taskID, owner string, epoch int64) error {
	var cur sql.NullString
	var status string
	var curEpoch int64
	err := q.QueryRowContext(ctx, s.q.leaseState, taskID).Scan(&cur, &status, &curEpoch)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("task %s: %w", taskID, ErrNotFound)
	case err != nil:
		return fmt.Errorf("lease of task %s: %w", taskID, err)
	case cur.String != owner || (epoch > 0 && curEpoch != epoch):
		return fmt.Errorf("task %s: %w", taskID, ErrLeaseLost)
	}
	return fmt.Errorf("task %s is %s, not running: %w", taskID, status, ErrStopped)
}

// Release is how a run ends its hold on a task (Store.Release).
type Release struct {
	// Owner holds the lease; every write is guarded by it.
	Owner string
	// Status and Stage are what the run reached. A task an operator
	// stopped keeps its interrupted status whatever Status says (a stop is
	// final for the run it stopped; see queries.releaseLease); its stage still
	// follows the head.
	Status, Stage string
	// ErrorCode and Error are the failure's code and message when Status
	// is failed, written with it ("" otherwise: the record keeps why a
	// task failed, docs/recovery.md "A business file ahead of its
	// checkpoints").
	ErrorCode, Error string
	// Ended are the run's steps whose ends were kept for this commit
	// (StepEnd).
	Ended []StepEnd
	// Keep records status and stage but keeps the lease (ReleaseLeases
	// lets go of it later).
	Keep bool
	// Durable commits durably against power loss, together with every
	// earlier commit to the file (as Sync, in the same commit): the last
	// business write of a command.
	Durable bool
	// Last, with Durable, says the process writes the file no more before
	// it closes it: the commit is made durable by checkpointing the WAL
	// into the file (sqlstore.Handle.DurableLast).
	Last bool
}

// Release records the run's final status and stage and the ends of its last
// steps, and gives the lease up (unless r.Keep), in one commit, only while
// r.Owner holds the lease. ErrConflict: the owner lost the lease; nothing
// is written then. The ends are not written for a run a stop ended: the
// stop's ends of its steps stand.
func (s *Store) Release(ctx context.Context, taskID string, r Release) error {
	query, args := s.q.releaseLease, []any{r.Status, r.Stage, r.ErrorCode, r.Error, formatTime(s.now()), taskID, r.Owner}
	if r.Keep {
		query = s.q.recordProgress
	}
	write := func(q sqlstore.Querier) error {
		// The ends first, while the record still names the holder: they
		// are written only while it holds the task and no stop ended its
		// run (a stop's ends stand).
		if err := s.endStepsHeld(ctx, q, taskID, r.Owner, r.Ended); err != nil {
			return err
		}
		return rowsChanged(q.ExecContext(ctx, query, args...))
	}
	var err error
	switch {
	case r.Durable && r.Last:
		err = s.h.DurableLast(ctx, write)
	case r.Durable:
		err = s.h.Durable(ctx, write)
	case len(r.Ended) == 0:
		err = write(s.h.Q())
	default:
		var tx *sqlstore.Txn
		if tx, err = s.h.Begin(ctx); err == nil {
			defer tx.Rollback()
			if err = write(tx); err == nil {
				err = tx.Commit()
			}
		}
	}
	if err != nil {
		if r.Keep {
			return fmt.Errorf("record progress of task %s: %w", taskID, err)
		}
		return fmt.Errorf("release lease of task %s: %w", taskID, err)
	}
	return nil
}

// ReleaseLease records the run's final status and stage and gives the lease
// up, only while owner holds it (Release). ErrConflict: owner lost the
// lease.
func (s *Store) ReleaseLease(ctx context.Context, taskID, owner, status, stage string) error {
	return s.Release(ctx, taskID, Release{Owner: owner, Status: status, Stage: stage})
}

// ReleaseLeaseSync is ReleaseLease committed durably against power loss,
// together with every earlier commit (as Sync, in the same commit): the last
// business write of a command.
func (s *Store) ReleaseLeaseSync(ctx context.Context, taskID, owner, status, stage string) error {
	return s.Release(ctx, taskID, Release{Owner: owner, Status: status, Stage: stage, Durable: true})
}

// RecordProgress records the run's status and stage while owner keeps the
// lease (ReleaseLeases lets go of it later). ErrConflict: owner does not
// hold the lease.
func (s *Store) RecordProgress(ctx context.Context, taskID, owner, status, stage string) error {
	return s.Release(ctx, taskID, Release{Owner: owner, Status: status, Stage: stage, Keep: true})
}

// ReleaseLeases gives up owner's leases of the tasks taskIDs, in one
// statement, keeping their status; tasks owner does not hold are left as
// they are.
func (s *Store) ReleaseLeases(ctx context.Context, owner string, taskIDs []string) error {
	if len(taskIDs) == 0 {
		return nil
	}
	// One parameter per task (an IN list both databases take); a chunk
	// holds tens of tasks, far below either's parameter limit.
	args := make([]any, 0, 1+len(taskIDs))
	args = append(args, owner)
	for _, id := range taskIDs {
		args = append(args, id)
	}
	_, err := s.h.Q().ExecContext(ctx, s.q.releaseLeases(len(taskIDs)), args...)
	if err != nil {
		return fmt.Errorf("release %d leases: %w", len(taskIDs), err)
	}
	return nil
}

// EndHeld records that the run owner drives at epoch ended failed, with
// stage, the failure's code and message: the task moves running → failed
// in one guarded update, while owner holds it at epoch, so that what the
// run ended as is in the business store before its checkpoint, and a stop
// written after it is refused (the task is no longer running). The lease
// stays owner's until its release, which keeps the status. Errors:
// ErrStopped (a stop came first: nothing is written, and the run ends
// interrupted), ErrLeaseLost, ErrNotFound.
func (s *Store) EndHeld(ctx context.Context, taskID, owner string, epoch int64, stage, code, msg string) error {
	res, err := s.h.Q().ExecContext(ctx, s.q.endHeld, stage, code, msg, formatTime(s.now()), taskID, owner, epoch)
	if err := rowsChanged(res, err); errors.Is(err, ErrConflict) {
		return s.whyNotHeld(ctx, taskID, owner, epoch)
	} else if err != nil {
		return fmt.Errorf("record the end of task %s: %w", taskID, err)
	}
	return nil
}

// StaleTasks returns the running tasks whose lease holder is gone: no
// holder, or a holder whose lease may be taken over at now (check as for
// AcquireLease). These are what `recover` resumes.
func (s *Store) StaleTasks(ctx context.Context, now time.Time, check func(Lease) Liveness) ([]TaskRecord, error) {
	running, err := s.ListTasks(ctx, "", "running")
	if err != nil {
		return nil, err
	}
	var out []TaskRecord
	for _, t := range running {
		if t.Lease.Owner == "" || MayTakeOver(t.Lease, now, check) {
			out = append(out, t)
		}
	}
	return out, nil
}

// StillLeasedTo returns the check that task taskID's lease is still
// owner's at epoch, whatever the task's status, read in the caller's
// transaction q: a stop that found the task's holder gone judges it in the
// transaction that writes the stop, so that no process took the task over
// since that look (docs/recovery.md "Operator stop"). Errors: ErrConflict
// when the lease moved, or the database's.
func (s *Store) StillLeasedTo(taskID, owner string, epoch int64) func(ctx context.Context, q sqlstore.Querier) error {
	return func(ctx context.Context, q sqlstore.Querier) error {
		var cur sql.NullString
		var status string
		var curEpoch int64
		if err := q.QueryRowContext(ctx, s.q.leaseState, taskID).Scan(&cur, &status, &curEpoch); err != nil {
			return fmt.Errorf("lease of task %s: %w", taskID, err)
		}
		if cur.String != owner || curEpoch != epoch {
			return fmt.Errorf("task %s: its lease moved to %q at epoch %d: %w", taskID, cur.String, curEpoch, ErrConflict)
		}
		return nil
	}
}

// HeldRunning returns the check that task taskID is still running under
// the lease owner holds at epoch, read in the caller's transaction q: the
// submit's business transaction judges it before it makes an application
// (business.SubmitCheck), so that a stop or a takeover committed before
// that transaction wins over the submit, and one committed after it finds
// the application (docs/recovery.md "Operator stop"). Both stores write
// under one lock (SQLite's file lock; PostgreSQL's write advisory lock), so
// nothing commits between the check and the submit's writes. Errors:
// ErrStopped when the task is no longer running, ErrLeaseLost when another
// lease holds it (both match ErrConflict), ErrNotFound.
func (s *Store) HeldRunning(taskID, owner string, epoch int64) func(ctx context.Context, q sqlstore.Querier) error {
	return func(ctx context.Context, q sqlstore.Querier) error {
		var cur sql.NullString
		var status string
		var curEpoch int64
		err := q.QueryRowContext(ctx, s.q.leaseState, taskID).Scan(&cur, &status, &curEpoch)
		if err == nil && status == "running" && cur.String == owner && curEpoch == epoch {
			return nil
		}
		return s.whyNotHeldOn(ctx, q, taskID, owner, epoch)
	}
}
