package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// RequestStop moves a running task to interrupted (an operator stop), and
// ends, in the same commit, every step of its timeline still running:
// failed with MsgInterrupted at the stop's time (the record's updated_at),
// so the timeline shows where the stop cut the run short whatever the
// stopped process does next (one that dies without letting go records
// nothing more). The process driving it sees the stop at its next
// heartbeat or superstep and cancels the node that runs, and writes no
// step end after it (endStepsHeld): the stop's ends stand, the first end
// wins. A task in any
// other status is ErrConflict, naming the status: a task that finished
// first keeps its finished status. The stop is durable against power loss
// when RequestStop returns nil: it commits at synchronous=FULL itself
// (Handle.Durable), so no Sync has to follow it, and a writer that takes
// the file's lock right after the commit cannot make a stop that is
// written report a failure.
//
// Each of unless is judged after the update in the same transaction, under
// the write lock (business.Store.NotSubmitted: the task made no application
// yet); an error from one refuses the stop, is returned as it is, and
// nothing is written.
func (s *Store) RequestStop(ctx context.Context, taskID string, unless ...func(ctx context.Context, q sqlstore.Querier) error) error {
	return s.requestStop(ctx, taskID, true, unless)
}

// RequestStopOfEnded moves a running task whose run has ended already (it
// made its application, and its process died before it let go) to
// interrupted as RequestStop does, leaving its timeline as it is: the
// steps its run left running ended as its checkpoints tell, which the
// repair that follows records (SettleRunningSteps), not cut short.
func (s *Store) RequestStopOfEnded(ctx context.Context, taskID string) error {
	return s.requestStop(ctx, taskID, false, nil)
}

// requestStop is RequestStop's commit; endRunning ends the running steps.
func (s *Store) requestStop(ctx context.Context, taskID string, endRunning bool, unless []func(ctx context.Context, q sqlstore.Querier) error) error {
	return s.h.Durable(ctx, func(q sqlstore.Querier) error {
		now := s.now()
		if err := s.setProgressStatusAt(ctx, q, taskID, "running", "interrupted", now); err != nil {
			return err
		}
		for _, check := range unless {
			if err := check(ctx, q); err != nil {
				return err // rolls the stop back
			}
		}
		if !endRunning {
			return nil
		}
		if _, err := q.ExecContext(ctx, s.q.failRunningSteps, StepFailed, MsgInterrupted, formatTime(now), taskID, StepRunning); err != nil {
			return fmt.Errorf("end the running steps of stopped task %s: %w", taskID, err)
		}
		return nil
	})
}

// SetProgressStatus moves a task from status from to status to, keeping its
// stage; 0 rows is ErrConflict naming the status found, or ErrNotFound.
func (s *Store) SetProgressStatus(ctx context.Context, taskID, from, to string) error {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return fmt.Errorf("set status of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	if err := s.setProgressStatus(ctx, tx, taskID, from, to); err != nil {
		return err
	}
	return tx.Commit()
}

// setProgressStatus is SetProgressStatus's update, in q's transaction.
func (s *Store) setProgressStatus(ctx context.Context, q sqlstore.Querier, taskID, from, to string) error {
	return s.setProgressStatusAt(ctx, q, taskID, from, to, s.now())
}

// setProgressStatusAt is setProgressStatus with now, the record's new
// updated_at.
func (s *Store) setProgressStatusAt(ctx context.Context, q sqlstore.Querier, taskID, from, to string, now time.Time) error {
	res, err := q.ExecContext(ctx, s.q.setStatus, to, formatTime(now), taskID, from)
	if err := rowsChanged(res, err); errors.Is(err, ErrConflict) {
		var current string
		if err := q.QueryRowContext(ctx, s.q.taskStatus, taskID).Scan(&current); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %s: %w", taskID, ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("set status of task %s: %w", taskID, err)
		}
		return fmt.Errorf("task %s is %s, not %s: %w", taskID, current, from, ErrConflict)
	} else if err != nil {
		return fmt.Errorf("set status of task %s: %w", taskID, err)
	}
	return nil
}

// SetKind records the kind of a task (KindReturn or KindBatch).
func (s *Store) SetKind(ctx context.Context, taskID, kind string) error {
	res, err := s.h.Q().ExecContext(ctx, s.q.setKind, kind, taskID)
	if err := rowsChanged(res, err); err != nil {
		return fmt.Errorf("set kind of task %s: %w", taskID, err)
	}
	return nil
}
