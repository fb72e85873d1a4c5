package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"assistant/internal/sqlstore"
)

// Uncounted is an approval of the trail that a submit no longer counts:
// its decision, its approver, and why (Because, in the words the trail
// keeps in decisions.not_counted).
type Uncounted struct {
	DecisionID string
	By         string
	Because    string
}

// UncountedError refuses a submit whose approvals no longer all count
// (ApprovalsCount): the submit writes no application, and marks each
// approval of Uncounted in the trail (decisions.not_counted) in the same
// commit, so that every later reader counts what the submit counted. It
// matches no other error: the caller asks for another approval.
type UncountedError struct {
	Task      string
	Uncounted []Uncounted
}

// Error implements the error interface for *UncountedError.
func (e *UncountedError) Error() string {
	parts := make([]string, 0, len(e.Uncounted))
	for _, u := range e.Uncounted {
		parts = append(parts, fmt.Sprintf("the approval of %s (decision %s) no longer counts: %s", u.By, u.DecisionID, u.Because))
	}
	return fmt.Sprintf("task %s: %s; nothing was submitted", e.Task, strings.Join(parts, "; "))
}

// ApprovalsCount returns the SubmitCheck that every approval of approvals,
// those the submit of draft draftID (version version) of task, owned by
// owner, carries out, still counts at the moment of the submit
// (docs/approvals.md "Approvers", "Two approvals"): each names that draft
// and that version; its approver is the owner, or holds a grant from the
// owner now, read in the submit's transaction; and when the task needs
// need >= 2 approvals, its approver is not the owner (its requester); and
// an approval of another person that an earlier submit marked not counted
// (decisions.not_counted) stays so. A version 0 means 1, as stored before
// drafts had versions. The check reads nothing for an owner's own
// approval of a task that needs one.
// Errors: *UncountedError naming every approval that no longer counts and
// why, the database's.
func (s *Store) ApprovalsCount(task, owner string, need int, draftID string, version int, approvals []Decision) SubmitCheck {
	return func(ctx context.Context, q sqlstore.Querier) error {
		var out []Uncounted
		for _, d := range approvals {
			why, err := s.notCounted(ctx, q, owner, need, draftID, version, d)
			if err != nil {
				return fmt.Errorf("approvals of task %s: %w", task, err)
			}
			if why != "" {
				out = append(out, Uncounted{DecisionID: d.ID, By: d.By, Because: why})
			}
		}
		if len(out) > 0 {
			return &UncountedError{Task: task, Uncounted: out}
		}
		return nil
	}
}

// notCounted is why approval d no longer counts for the submit of draft
// draftID, version version, of a task of owner that needs need approvals;
// "" when it counts.
func (s *Store) notCounted(ctx context.Context, q sqlstore.Querier, owner string, need int, draftID string, version int, d Decision) (string, error) {
	v, dv := max(version, 1), max(d.Version, 1)
	switch {
	case d.DraftID != draftID || dv != v:
		return fmt.Sprintf("it approves version %d of draft %s, and the draft submitted is version %d of draft %s", dv, d.DraftID, v, draftID), nil
	case need >= 2 && d.By == owner:
		return fmt.Sprintf("%s is the task's requester, and its %d approvals must come from people other than its requester", d.By, need), nil
	case d.By == owner:
		return "", nil
	}
	// Marked by an earlier submit whose checkpoint was lost (killed after
	// its commit): the mark stands, a grant given again since or not.
	var mark string
	err := q.QueryRowContext(ctx, s.q.decisionMark, d.ID).Scan(&mark)
	switch {
	case err == nil && mark != "":
		return mark, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return "", fmt.Errorf("decision %s: %w", d.ID, err)
	}
	var one int
	err = q.QueryRowContext(ctx, s.q.grant, owner, d.By).Scan(&one)
	switch {
	case err == nil:
		return "", nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", fmt.Errorf("grant of %s to %s: %w", owner, d.By, err)
	}
	var at string
	err = q.QueryRowContext(ctx, s.q.lastRevoke, owner, d.By).Scan(&at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Sprintf("%s holds no grant from %s", d.By, owner), nil
	case err != nil:
		return "", fmt.Errorf("revokes of %s from %s: %w", d.By, owner, err)
	}
	t, err := parseTime(at)
	if err != nil {
		return "", fmt.Errorf("revokes of %s from %s: %w", d.By, owner, err)
	}
	return fmt.Sprintf("revoked at %s: %s no longer holds a grant from %s", t.UTC().Format(time.RFC3339), d.By, owner), nil
}

// markUncounted writes, in tx, why each approval of e no longer counts
// into its decision of the trail (one marked already keeps its mark).
func (s *Store) markUncounted(ctx context.Context, tx sqlstore.Querier, e *UncountedError) error {
	s.rows.forgetTrail(e.Task)
	for _, u := range e.Uncounted {
		if _, err := tx.ExecContext(ctx, s.q.markUncounted, u.Because, u.DecisionID, e.Task); err != nil {
			return fmt.Errorf("mark decision %s of task %s not counted: %w", u.DecisionID, e.Task, err)
		}
	}
	return nil
}

// keptRefusal reports whether err is a submit's refusal whose decision
// (SubmitDecided) is committed without an application: an expired draft,
// an order no longer eligible, approvals that no longer count (which
// are marked in the same commit).
func keptRefusal(err error) bool {
	var ie *IneligibleError
	var ue *UncountedError
	return errors.Is(err, ErrDraftExpired) || errors.As(err, &ie) || errors.As(err, &ue)
}

// Judge runs check outside any transaction, on the store as it is now,
// and returns what a submit that ran it now would find: nil, or its
// refusal (an *UncountedError for ApprovalsCount). A view judges what it
// offers by the rule the submit judges by. It writes nothing.
func (s *Store) Judge(ctx context.Context, check SubmitCheck) error {
	return check(ctx, s.h.Q())
}
