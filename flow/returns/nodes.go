package returns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
)

func (n nodes) lookup(ctx context.Context, s State) (State, error) {
	o, err := n.Desk.Order(ctx, s.Order, s.User)
	if errors.Is(err, business.ErrNotFound) {
		return n.refused(ctx, s, &Failure{Code: CodeOrderNotFound, Message: fmt.Sprintf("order %s not found", s.Order)})
	}
	if err != nil {
		return State{}, err
	}
	code, err := n.Desk.Eligibility(ctx, o, n.Now())
	if err != nil {
		return State{}, err
	}
	if code != "" {
		return n.refused(ctx, s, &Failure{Code: code, Message: eligibilityMessage(code, o.ID)})
	}
	return State{}, nil
}

// refused ends a request whose order lookup refused it with f, unless the
// business file holds an application of the task already: the business
// file is the truth for side effects, so a task whose run was lost (an
// older checkpoints.sqlite, say) and runs again is submitted, not refused
// for the open application it made itself. Only a refused lookup reads
// the application, so an eligible order costs no extra query.
func (n nodes) refused(ctx context.Context, s State, f *Failure) (State, error) {
	done, err := n.submitted(ctx, s)
	if err != nil || done.Stage != "" {
		return done, err
	}
	return State{Stage: StageFailed, Error: f}, nil
}

func eligibilityMessage(code, order string) string {
	switch code {
	case "not_delivered":
		return fmt.Sprintf("order %s has not been delivered yet; a return can be requested after delivery", order)
	case "return_window_closed":
		return fmt.Sprintf("order %s was delivered more than 30 days ago; the return window is closed", order)
	case "final_sale":
		return fmt.Sprintf("order %s is a final-sale item and cannot be returned", order)
	case "open_application":
		return fmt.Sprintf("order %s already has an open return application", order)
	}
	return fmt.Sprintf("order %s cannot be returned (%s)", order, code)
}

// askReason asks until the answer is a valid reason. Each refused answer
// asks a new question (the next Interrupt call of this node), so the answers
// given so far are replayed in order when the node runs again.
func (n nodes) askReason(ctx context.Context, s State) (State, error) {
	q := ReasonQuestion{Kind: KindNeedReason, OrderID: s.Order, Prompt: fmt.Sprintf("Why do you want to return order %s?", s.Order)}
	if s.Draft != nil && s.Comment != "" {
		// Sent back by a request for changes: the question carries it.
		q.Comment = s.Comment
		if d := lastDecision(s, ActionRevise); d != nil {
			q.RequestedBy = d.By
		}
	} else if err := ValidReason(s.Reason); s.Reason != "" && err != nil {
		q.Problem = err.Error()
	}
	for {
		ans, err := flow.Interrupt[ReasonAnswer](ctx, q)
		if err != nil {
			return State{}, err
		}
		r := strings.TrimSpace(ans.Reason)
		if err := ValidReason(r); err != nil {
			q.Problem = err.Error()
			continue
		}
		upd := State{Reason: r}
		d := Decision{ID: ans.DecisionID, By: ans.By, Action: ActionReason, At: ans.At, Reason: r}
		if s.Draft != nil {
			d.DraftID, d.Version = s.Draft.ID, VersionOf(s.Draft)
		}
		if err := n.record(ctx, s, d, &upd); err != nil {
			return State{}, err
		}
		return upd, nil
	}
}

// record adds d, the answer a node took, to the business file's trail
// (keyed by its id, so a node that runs again records it once) and to
// upd. An answer saved by an older build names nobody and is not recorded.
func (n nodes) record(ctx context.Context, s State, d Decision, upd *State) error {
	if d.By == "" || d.ID == "" {
		return nil
	}
	d = normalized(d)
	if err := n.Desk.RecordDecision(ctx, trailEntry(s.Task, d)); err != nil {
		return err
	}
	upd.Decisions = append(upd.Decisions, d)
	return nil
}

// normalized is d as the trail stores it: its time in UTC, to the
// millisecond.
func normalized(d Decision) Decision {
	d.At = d.At.UTC().Truncate(time.Millisecond)
	return d
}

// trailEntry is decision d of task as the business file's trail keeps it.
func trailEntry(task string, d Decision) business.Decision {
	return business.Decision{
		ID: d.ID, TaskID: task, By: d.By, Action: d.Action, DraftID: d.DraftID, Version: d.Version,
		At: d.At, Comment: d.Comment, Reason: d.Reason,
	}
}

// lastDecision returns the state's last decision of action, or nil.
func lastDecision(s State, action string) *Decision {
	for i := len(s.Decisions) - 1; i >= 0; i-- {
		if s.Decisions[i].Action == action {
			return &s.Decisions[i]
		}
	}
	return nil
}

// prepare makes the task's draft: version 1 the first time, the next
// version after an edit or a request for changes (the state holds a draft
// then), whose order is checked again, as lookup checked it for the first.
func (n nodes) prepare(ctx context.Context, s State) (State, error) {
	ttl := time.Duration(s.TTLSeconds) * time.Second
	if ttl <= 0 {
		ttl = business.DefaultDraftTTL
	}
	version := VersionOf(s.Draft) + 1
	if version > business.MaxDraftVersions {
		return State{Stage: StageFailed, Error: tooManyRevisions(s)}, nil
	}
	if version > 1 {
		if f, err := n.recheck(ctx, s); err != nil || f != nil {
			if f != nil {
				return n.refused(ctx, s, f) // the task's own application ends it submitted
			}
			return State{}, err
		}
	}
	d, _, err := n.Desk.PrepareDraftVersion(ctx, s.Task, version, s.Order, s.User, strings.TrimSpace(s.Reason), ttl, n.Now())
	if err != nil {
		return State{}, fmt.Errorf("prepare draft: %w", err)
	}
	upd := State{Draft: &DraftRef{ID: d.ID, ExpiresAt: d.ExpiresAt.UTC(), Version: d.Version}, Stage: StageDraftReady}
	if d.Reason != s.Reason {
		// The draft's reason is the request's reason from here on (State
		// keeps it once); they differ only if s.Reason was not trimmed.
		upd.Reason = d.Reason
	}
	return upd, nil
}

// recheck looks the order up again before a new draft version is made:
// a failure when it may no longer be returned, nil when it may.
func (n nodes) recheck(ctx context.Context, s State) (*Failure, error) {
	o, err := n.Desk.Order(ctx, s.Order, s.User)
	if errors.Is(err, business.ErrNotFound) {
		return &Failure{Code: CodeOrderNotFound, Message: fmt.Sprintf("order %s not found", s.Order)}, nil
	}
	if err != nil {
		return nil, err
	}
	code, err := n.Desk.Eligibility(ctx, o, n.Now())
	if err != nil || code == "" {
		return nil, err
	}
	return &Failure{Code: code, Message: eligibilityMessage(code, o.ID) + "; no new draft was made"}, nil
}

// tooManyRevisions is the failure of a request whose next draft would be
// past business.MaxDraftVersions.
func tooManyRevisions(s State) *Failure {
	return &Failure{Code: CodeTooManyRevisions, Message: fmt.Sprintf(
		"task %s has %d draft versions, the most one task may have; the last edit or request for changes was not applied and nothing was submitted (start a new task to try again)",
		s.Task, business.MaxDraftVersions)}
}
