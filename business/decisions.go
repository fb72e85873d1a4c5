package business

import (
	"context"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// Decision is one answer given to a task's question, as the trail keeps
// it: who gave it, when, what it was, and the draft and version it was
// bound to ("" and 0 for an answer given before any draft).
type Decision struct {
	ID      string    `json:"decision_id"`
	TaskID  string    `json:"task_id"`
	By      string    `json:"by"`
	Action  string    `json:"action"` // reason, approve, cancel, edit, revise
	DraftID string    `json:"draft_id"`
	Version int       `json:"version"`
	At      time.Time `json:"at"` // UTC
	// Comment is what a request for changes (revise) asks for; Reason the
	// reason an edit or a reason answer gives.
	Comment string `json:"comment,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// NotCounted says why a submit no longer counts this approval
	// (SubmitCheck ApprovalsCount, written by the submit that found it);
	// "" for an answer that counts.
	NotCounted string `json:"not_counted_because,omitempty"`
}

// RecordDecision adds d to the trail in a durable commit (a checkpoint
// that carries the answer is written after it). d.ID is the idempotency
// key: a decision recorded already is left as it is, so the node that
// takes an answer may run again.
func (s *Store) RecordDecision(ctx context.Context, d Decision) error {
	if err := checkDecision(d); err != nil {
		return err
	}
	s.rows.forgetTrail(d.TaskID)
	err := s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		wrote, err := s.insertDecision(ctx, tx, d)
		if err == nil && !wrote {
			return sqlstore.ErrNothingWritten
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("record decision %s of task %s: %w", d.ID, d.TaskID, err)
	}
	return nil
}

// SubmitDecided submits draft draftID for user at now as Submit does, and
// adds d, the approval that asked for the submit, to the trail in the same
// durable commit: one commit (and one fsync) where recording the decision
// on its own would take two. The decision is recorded whatever the submit
// comes to: an application made or reused, or refused with ErrDraftExpired,
// an *IneligibleError or an *UncountedError (nothing submitted, the
// decision kept, and the approvals that no longer count marked so in the
// same commit); any other
// error rolls both back. d.ID is the idempotency key, as for
// RecordDecision, so a submit that runs again records it once; a commit
// that writes nothing (a reused application, a decision recorded already
// by an earlier durable commit) is not made. checks are Submit's; one that
// refuses rolls the decision back with the submit. The errors are
// Submit's.
func (s *Store) SubmitDecided(ctx context.Context, d Decision, draftID, user string, now time.Time, checks ...SubmitCheck) (a Application, reused bool, err error) {
	if err := checkDecision(d); err != nil {
		return Application{}, false, err
	}
	if s.h.InTxn() {
		return s.submitDecidedInTx(ctx, d, draftID, user, now, checks)
	}
	var subErr error
	s.rows.forgetTrail(d.TaskID)
	err = s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		wrote, err := s.insertDecision(ctx, tx, d)
		if err != nil {
			return fmt.Errorf("record decision %s of task %s: %w", d.ID, d.TaskID, err)
		}
		a, reused, subErr = s.SubmitTx(ctx, tx, draftID, user, now, checks...)
		var ue *UncountedError
		switch {
		case subErr == nil && !reused:
			return nil
		case subErr != nil && !keptRefusal(subErr):
			return subErr
		case errors.As(subErr, &ue):
			if err := s.markUncounted(ctx, tx, ue); err != nil {
				subErr = err
				return err
			}
			return nil // refused: the decision and its marks are committed
		case wrote:
			return nil // refused or reused: the decision alone is committed
		}
		return sqlstore.ErrNothingWritten
	})
	switch {
	case err != nil && subErr != nil && errors.Is(err, subErr):
		return Application{}, false, subErr
	case err != nil:
		return Application{}, false, fmt.Errorf("submit draft %s: %w", draftID, err)
	case subErr != nil:
		return Application{}, false, subErr
	}
	return a, reused, nil
}

// submitDecidedInTx is SubmitDecided inside a caller's transaction (a
// decide chunk's, which commits durably), without a savepoint of its own
// (two statements; on PostgreSQL two round trips), with the same outcomes.
// Submit's checks run first and write nothing, so what they refuse for
// good (an unknown or another user's draft, a superseded version) or fail
// on leaves nothing written, as the savepoint's rollback did. Then at most
// two statements write: the decision, and the application. A statement
// that fails writes nothing (on PostgreSQL it aborts the transaction); an
// application that fails after its decision was written comes back as the
// database's error, which no caller takes for a refusal (not ErrConflict,
// ErrNotFound or ErrInvalid), so the caller's transaction is rolled back
// whole. The transaction holds the write lock, so nothing can come
// between the checks and the writes.
func (s *Store) submitDecidedInTx(ctx context.Context, d Decision, draftID, user string, now time.Time, checks []SubmitCheck) (Application, bool, error) {
	q := s.h.Q()
	a, reused, draft, subErr := s.submitCheck(ctx, q, draftID, user, now, checks)
	if subErr != nil && !keptRefusal(subErr) {
		return Application{}, false, subErr
	}
	s.rows.forgetTrail(d.TaskID)
	if _, err := s.insertDecision(ctx, q, d); err != nil {
		return Application{}, false, fmt.Errorf("record decision %s of task %s: %w", d.ID, d.TaskID, err)
	}
	if ue := (*UncountedError)(nil); errors.As(subErr, &ue) {
		if err := s.markUncounted(ctx, q, ue); err != nil {
			return Application{}, false, err
		}
	}
	if subErr != nil || reused {
		return a, reused, subErr // refused or reused: the decision alone is written
	}
	a, err := s.insertApplication(ctx, q, draft, now)
	if err != nil {
		return Application{}, false, fmt.Errorf("submit draft %s after its decision %s: %w", draftID, d.ID, err)
	}
	return a, false, nil
}

// checkDecision refuses a decision without its keys.
func checkDecision(d Decision) error {
	if d.ID == "" || d.TaskID == "" {
		return fmt.Errorf("record decision: decision id and task id are required")
	}
	return nil
}

// insertDecision adds d to the trail in tx and reports whether it was new
// (false: a decision with its id is recorded already, left as it is).
func (s *Store) insertDecision(ctx context.Context, tx sqlstore.Querier, d Decision) (bool, error) {
	res, err := tx.ExecContext(ctx, s.q.insertDecision,
		d.ID, d.TaskID, d.By, d.Action, d.DraftID, d.Version, formatTime(d.At), d.Comment, d.Reason, d.NotCounted)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// scanDecision reads one row of a decision's columns (queries).
func scanDecision(sc scanner) (Decision, error) {
	var d Decision
	var at string
	if err := sc.Scan(&d.ID, &d.TaskID, &d.By, &d.Action, &d.DraftID, &d.Version, &at, &d.Comment, &d.Reason, &d.NotCounted); err != nil {
		return Decision{}, err
	}
	var err error
	d.At, err = parseTime(at)
	return d, err
}

// Decisions returns the trail of task taskID in the order the answers were
// given; empty (not nil) when there is none. Inside InTx, a task that
// PreloadTasks read is answered from memory.
func (s *Store) Decisions(ctx context.Context, taskID string) ([]Decision, error) {
	if ds, ok := s.rows.trail(taskID); ok {
		return ds, nil
	}
	out := []Decision{}
	err := scanEach(ctx, s, s.q.decisions, []any{taskID},
		scanDecision, func(d Decision) { out = append(out, d) })
	if err != nil {
		return nil, fmt.Errorf("decisions of task %s: %w", taskID, err)
	}
	return out, nil
}

// DecisionsOf returns the trail of each task of taskIDs as Decisions
// returns it (empty for a task without decisions), read in one statement
// for every 250 tasks instead of one a task: the trails of a group of
// decisions read back for their views.
func (s *Store) DecisionsOf(ctx context.Context, taskIDs []string) (map[string][]Decision, error) {
	out := make(map[string][]Decision, len(taskIDs))
	for _, id := range taskIDs {
		out[id] = []Decision{}
	}
	for len(taskIDs) > 0 {
		n := min(len(taskIDs), preloadTasksPerStatement)
		args := make([]any, n)
		for i, id := range taskIDs[:n] {
			args[i] = id
		}
		err := scanEach(ctx, s, s.q.decisionsOf(n), args,
			scanDecision, func(d Decision) { out[d.TaskID] = append(out[d.TaskID], d) })
		if err != nil {
			return nil, fmt.Errorf("decisions of %d tasks: %w", n, err)
		}
		taskIDs = taskIDs[n:]
	}
	return out, nil
}

// DecidedWaiting returns the ids of user's tasks recorded waiting that
// have at least one answer in the trail (a task no answer reached cannot
// have lost one): one query, for a list to read the heads of those only.
func (s *Store) DecidedWaiting(ctx context.Context, user string) (map[string]bool, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.q.decidedWaiting, user)
	if err != nil {
		return nil, fmt.Errorf("decided waiting tasks of %s: %w", user, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("decided waiting tasks of %s: %w", user, err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("decided waiting tasks of %s: %w", user, err)
	}
	return out, nil
}
