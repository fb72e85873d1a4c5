package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"assistant/internal/sqlstore"
)

// ActionCancel is the action of a decision that cancels the request
// (Decision.Action).
const ActionCancel = "cancel"

// CancelledError refuses an operator stop of a task whose cancel is in
// its trail already: the cancel was decided before the stop, and the run
// that carries it out ends the request cancelled, as a submit made before
// a stop ends it done (docs/recovery.md "Operator stop").
type CancelledError struct {
	Task     string
	Decision Decision // the first cancel the trail holds
}

// Error implements the error interface for *CancelledError.
func (e *CancelledError) Error() string {
	return fmt.Sprintf("task %s was cancelled by %s", e.Task, e.Decision.By)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *CancelledError) Is(target error) bool { return target == ErrConflict }

// NotCancelled returns the check that task taskID has no cancel in its
// trail, read in the caller's transaction q: an operator stop judges it
// in the transaction that writes the stop, beside NotSubmitted, so that a
// cancel recorded before the stop makes the stop too late and no stop is
// written over it, and a stop committed first finds no cancel (the run it
// stopped carries none out; docs/recovery.md "Operator stop"). Errors:
// *CancelledError naming the cancel, or the database's.
func (s *Store) NotCancelled(taskID string) func(ctx context.Context, q sqlstore.Querier) error {
	return func(ctx context.Context, q sqlstore.Querier) error {
		d, err := scanDecision(q.QueryRowContext(ctx, s.q.firstDecisionOf, taskID, ActionCancel))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("cancel of task %s: %w", taskID, err)
		}
		return &CancelledError{Task: taskID, Decision: d}
	}
}
