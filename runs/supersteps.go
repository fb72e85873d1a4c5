package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// ErrAttemptsExhausted is matched by *AttemptsError.
var ErrAttemptsExhausted = errors.New("attempts exhausted")

// AttemptsError refuses a step whose node failed Max times in a row on the
// task's timeline (failed, or left running by a process that died, since
// the node last finished a step; a step an operator stopped does not
// count).
type AttemptsError struct {
	Task string
	Node string
	Max  int
}

// Error implements the error interface for *AttemptsError.
func (e *AttemptsError) Error() string {
	return fmt.Sprintf("task %s: node %s failed %d times in a row; it is not tried again", e.Task, e.Node, e.Max)
}

// Is makes errors.Is(err, ErrAttemptsExhausted) true.
func (e *AttemptsError) Is(target error) bool { return target == ErrAttemptsExhausted }

// StepEnd is how a running step ended, kept by its run until the run's
// next bookkeeping commit (BeginSteps of the superstep after, or the
// release) records it with that commit's own writes.
type StepEnd struct {
	Seq    int       // the step's seq
	Status string    // StepDone, StepWaiting or StepFailed
	Error  string    // the failure's message; "" otherwise
	At     time.Time // when the step ended
}

// Superstep is one superstep of a run held under a lease, for BeginSteps.
type Superstep struct {
	// Holder must hold the task running: lease_owner Holder.Owner at
	// fencing epoch Holder.Epoch.
	Holder Lease
	// Renew, when not zero, is the lease's new expiry: the holder renews
	// its lease with the superstep when a renewal is due (as its heartbeat
	// does), and leaves the row unwritten otherwise.
	Renew time.Time
	// Ended are the steps of the run's superstep before, ended since.
	Ended []StepEnd
	// Nodes get one running step each, in this order.
	Nodes []string
	// Now is when the new steps start.
	Now time.Time
	// Max, when > 0, is how many times in a row a node may fail before it
	// is refused (*AttemptsError).
	Max int
}

// BeginSteps is the bookkeeping of one superstep of a held run, in one
// transaction: it checks that the task is still running and held by
// st.Holder at its epoch (renewing the lease to st.Renew in the same
// guarded update when st.Renew is set), records
// how the steps of st.Ended ended, and appends one running step per node of
// st.Nodes. Each new step's attempt is one more than the steps its node has
// had; when st.Max > 0 and the node has failed st.Max times in a row
// already (failed steps since its last finished one, an operator's stop
// excepted), nothing at all is written and a *AttemptsError is returned.
// It returns the new steps' seqs in the order of st.Nodes. Errors:
// ErrStopped (an operator stopped the task), ErrLeaseLost (another process
// holds it), *AttemptsError, ErrNotFound; on any error nothing is written.
func (s *Store) BeginSteps(ctx context.Context, taskID string, st Superstep) ([]int, error) {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	// Without a renewal, the first step's insert checks the hold itself
	// (queries.beginStepHeld): one statement fewer a superstep. Either way
	// nothing is written unless the hold is checked in this transaction.
	checked := false
	if !st.Renew.IsZero() || len(st.Nodes) == 0 {
		if err := s.holds(ctx, tx, taskID, st.Holder, st.Renew); errors.Is(err, ErrConflict) {
			return nil, s.whyNotHeldOn(ctx, tx, taskID, st.Holder.Owner, st.Holder.Epoch)
		} else if err != nil {
			return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
		}
		checked = true
	}
	if err := s.endSteps(ctx, tx, taskID, st.Ended); err != nil {
		return nil, err
	}
	seqs := make([]int, 0, len(st.Nodes))
	now := formatTime(st.Now)
	for _, node := range st.Nodes {
		var seq int
		var err error
		if checked {
			err = tx.QueryRowContext(ctx, s.q.beginStep, taskID, node, now, st.Max, MsgInterrupted).Scan(&seq)
		} else {
			err = tx.QueryRowContext(ctx, s.q.beginStepHeld, taskID, node, now, st.Max, MsgInterrupted, st.Holder.Owner, st.Holder.Epoch).Scan(&seq)
		}
		if errors.Is(err, sql.ErrNoRows) && !checked {
			// Not held, or the node's attempts are used up: the hold
			// is told first, as when it is checked on its own.
			if err := s.holds(ctx, tx, taskID, st.Holder, time.Time{}); errors.Is(err, ErrConflict) {
				return nil, s.whyNotHeldOn(ctx, tx, taskID, st.Holder.Owner, st.Holder.Epoch)
			} else if err != nil {
				return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
			}
		}
		if errors.Is(err, sql.ErrNoRows) {
			return nil, &AttemptsError{Task: taskID, Node: node, Max: st.Max}
		}
		if err != nil {
			return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
		}
		checked = true
		seqs = append(seqs, seq)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
	}
	return seqs, nil
}

// holds checks on q that holder holds the task running at its epoch,
// renewing the lease to renew when it is not zero. ErrConflict: it does not.
func (s *Store) holds(ctx context.Context, q sqlstore.Querier, taskID string, holder Lease, renew time.Time) error {
	if !renew.IsZero() {
		return rowsChanged(q.ExecContext(ctx, s.q.heldRenew, formatTime(renew), taskID, holder.Owner, holder.Epoch))
	}
	var n int
	if err := q.QueryRowContext(ctx, s.q.held, taskID, holder.Owner, holder.Epoch).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return ErrConflict
	}
	return nil
}

// endSteps records the ends of steps of taskID on q; a step no longer
// running (ended by a takeover or a stop) is left as it is: the first end
// wins.
func (s *Store) endSteps(ctx context.Context, q sqlstore.Querier, taskID string, ended []StepEnd) error {
	for _, e := range ended {
		if _, err := q.ExecContext(ctx, s.q.endStep, e.Status, e.Error, formatTime(e.At), taskID, e.Seq); err != nil {
			return fmt.Errorf("end step %d of task %s: %w", e.Seq, taskID, err)
		}
	}
	return nil
}

// endStepsHeld is endSteps by the holder owner of the task: nothing is
// written unless owner holds the task and no stop has ended its run (the
// task is not interrupted). The fence of the lease decides who may write
// a step's end: a process whose run was stopped, or that lost its lease,
// writes none.
func (s *Store) endStepsHeld(ctx context.Context, q sqlstore.Querier, taskID, owner string, ended []StepEnd) error {
	for _, e := range ended {
		if _, err := q.ExecContext(ctx, s.q.endStepHeld, e.Status, e.Error, formatTime(e.At), taskID, e.Seq, owner); err != nil {
			return fmt.Errorf("end step %d of task %s: %w", e.Seq, taskID, err)
		}
	}
	return nil
}

// EndSteps records how the steps ended (StepEnd) on the task's timeline,
// in one commit; a step no longer running is left as it is (endSteps).
func (s *Store) EndSteps(ctx context.Context, taskID string, ended []StepEnd) error {
	return s.endStepsIn(ctx, taskID, ended, s.endSteps)
}

// EndStepsHeld is EndSteps by the holder owner of the task: nothing is
// written unless owner holds it and no stop has ended its run
// (endStepsHeld).
func (s *Store) EndStepsHeld(ctx context.Context, taskID, owner string, ended []StepEnd) error {
	return s.endStepsIn(ctx, taskID, ended, func(ctx context.Context, q sqlstore.Querier, taskID string, ended []StepEnd) error {
		return s.endStepsHeld(ctx, q, taskID, owner, ended)
	})
}

// endStepsIn records ended with write in one transaction.
func (s *Store) endStepsIn(ctx context.Context, taskID string, ended []StepEnd, write func(context.Context, sqlstore.Querier, string, []StepEnd) error) error {
	if len(ended) == 0 {
		return nil
	}
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return fmt.Errorf("end steps of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	if err := write(ctx, tx, taskID, ended); err != nil {
		return err
	}
	return tx.Commit()
}
