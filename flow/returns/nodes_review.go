package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
)

// submitDecided submits the state's draft, with the approval that asked
// for it recorded in the trail in the same durable commit
// (business.Store.SubmitDecided): the last approve of the draft in the
// state, given by someone, with an id (an answer saved by an older build
// names nobody). A task that needs two approvals recorded both when they
// were given; its submit records nothing. The submit's transaction judges
// again that this run still holds the task running under its lease
// (Deps.Held): a stop or a takeover committed first refuses the submit
// with runs.ErrStopped or runs.ErrLeaseLost, and nothing is written. It
// judges again too that every approval it carries out still counts
// (countedApprovals, business.ApprovalsCount): a *business.UncountedError
// otherwise, no application written and those approvals marked so in the
// trail in the same commit.
func (n nodes) submitDecided(ctx context.Context, s State) (business.Application, bool, error) {
	var checks []business.SubmitCheck
	if held, ok := n.Held(s.Task); ok {
		checks = append(checks, held)
	}
	if approvals := countedApprovals(s); len(approvals) > 0 {
		checks = append(checks, n.Desk.ApprovalsCount(s.Task, s.User, s.Approvals, s.Draft.ID, VersionOf(s.Draft), approvals))
	}
	if s.Approvals < 2 {
		if d := lastDecision(s, ActionApprove); d != nil && d.DraftID == s.Draft.ID && d.By != "" && d.ID != "" {
			return n.Desk.SubmitDecided(ctx, trailEntry(s.Task, *d), s.Draft.ID, s.User, n.Now(), checks...)
		}
	}
	return n.Desk.Submit(ctx, s.Draft.ID, s.User, n.Now(), checks...)
}

// review returns the node that asks approval question slot (1, or 2 of a
// task that needs two approvals) about the state's draft and takes its
// answer: approve, cancel, edit (a new reason) or revise (a comment).
func (n nodes) review(slot int) flow.NodeFunc[State] {
	return func(ctx context.Context, s State) (State, error) {
		if s.Draft == nil {
			return State{}, errors.New("review: no draft in state")
		}
		q := approvalAsked{Kind: KindApproval}
		if s.Approvals >= 2 {
			q.Approver, q.Approvals = slot, s.Approvals
		}
		for {
			ans, err := flow.Interrupt[ApprovalAnswer](ctx, q)
			if err != nil {
				return State{}, err
			}
			switch {
			case !slices.Contains(Actions, ans.Action):
				q.Problem = fmt.Sprintf("action %q is not one of %s", ans.Action, strings.Join(Actions, ", "))
			case ans.DraftID != s.Draft.ID:
				q.Problem = fmt.Sprintf("the answer names draft %q, the question draft %s", ans.DraftID, s.Draft.ID)
			case ans.Action == ActionEdit && ValidReason(strings.TrimSpace(ans.Reason)) != nil:
				q.Problem = "an edit needs a valid reason: " + ValidReason(strings.TrimSpace(ans.Reason)).Error()
			default:
				return n.decided(ctx, s, ans)
			}
		}
	}
}

// decided is the update of an approval answer: the decision, recorded in
// the trail, and for an edit the new reason, for a revise the comment; an
// edit or revise of the last version allowed ends the request failed.
func (n nodes) decided(ctx context.Context, s State, ans ApprovalAnswer) (State, error) {
	upd := State{Decision: ans.Action}
	d := Decision{ID: ans.DecisionID, By: ans.By, Action: ans.Action, DraftID: s.Draft.ID, Version: VersionOf(s.Draft), At: ans.At}
	switch ans.Action {
	case ActionEdit:
		d.Reason = strings.TrimSpace(ans.Reason)
		upd.Reason = d.Reason
	case ActionRevise:
		d.Comment = strings.TrimSpace(ans.Comment)
		upd.Comment = d.Comment
	}
	if ans.Action == ActionApprove && s.Approvals < 2 {
		// The approval of a task that needs one goes on to submit, which
		// records it in the trail in its own durable commit (submitDecided):
		// one durable commit fewer per approve. Until then the checkpoint
		// after this node carries it, and a run that continues after a
		// crash submits, and records it, from there.
		upd.Decisions = append(upd.Decisions, normalized(d))
		return upd, nil
	}
	if err := n.record(ctx, s, d, &upd); err != nil {
		return State{}, err
	}
	if (ans.Action == ActionEdit || ans.Action == ActionRevise) && VersionOf(s.Draft) >= business.MaxDraftVersions {
		upd.Reason, upd.Comment = "", ""
		upd.Stage, upd.Error = StageFailed, tooManyRevisions(s)
	}
	return upd, nil
}

func (n nodes) submit(ctx context.Context, s State) (State, error) {
	app, reused, err := n.submitDecided(ctx, s)
	if errors.Is(err, business.ErrDraftExpired) {
		return State{Stage: StageFailed, Error: &Failure{
			Code:    CodeDraftExpired,
			Message: fmt.Sprintf("draft %s expired at %s before it was approved; nothing was submitted", s.Draft.ID, s.Draft.ExpiresAt.UTC().Format(time.RFC3339)),
		}}, nil
	}
	var ue *business.UncountedError
	if errors.As(err, &ue) {
		// An approval no longer counts: the trail keeps it, marked why,
		// and the run asks for another (afterSubmit).
		upd := State{}
		for _, u := range ue.Uncounted {
			upd.Uncounted = append(upd.Uncounted, Uncounted{ID: u.DecisionID, By: u.By, Because: u.Because})
		}
		return upd, nil
	}
	var ie *business.IneligibleError
	if errors.As(err, &ie) {
		// Checked again at submit time: the facts changed while the draft
		// waited for approval.
		why := " (its return window closed while the draft waited for approval)"
		switch ie.Code {
		case business.ReasonOpenApplication:
			why = " (made by another task since this one started)"
		case business.ReasonNotDelivered, business.ReasonFinalSale:
			why = " (the order changed while the draft waited for approval)"
		}
		return State{Stage: StageFailed, Error: &Failure{
			Code:    ie.Code,
			Message: eligibilityMessage(ie.Code, s.Order) + why + "; nothing was submitted",
		}}, nil
	}
	if err != nil {
		return State{}, err // business errors name the draft already
	}
	n.Fault("submit:after-business-commit")
	return State{Stage: StageSubmitted, Decision: ActionApprove, Result: &Result{ApplicationID: app.ID, ReviewStatus: app.ReviewStatus, Reused: reused}}, nil
}

// cancel ends the request without an application, unless the business
// file holds one for the task already (a submit whose checkpoint a power
// loss or an older checkpoints.sqlite lost): then the request is submitted,
// whatever the answer, and the application is reported as reused.
func (n nodes) cancel(ctx context.Context, s State) (State, error) {
	if done, err := n.submitted(ctx, s); err != nil || done.Stage != "" {
		return done, err
	}
	return State{Stage: StageCancelled, Decision: ActionCancel}, nil
}

// submitted looks the task's application up in the business file (by its
// draft, through drafts.task_id and applications.draft_id, both unique
// indexes) and returns the update that ends the request submitted with it;
// a zero State when the task has none (or only another user's, which is
// reported nowhere, as another user's records never are).
func (n nodes) submitted(ctx context.Context, s State) (State, error) {
	a, err := n.Desk.ApplicationByTask(ctx, s.Task)
	if errors.Is(err, business.ErrNotFound) || (err == nil && a.User != s.User) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	upd := State{Stage: StageSubmitted, Result: &Result{ApplicationID: a.ID, ReviewStatus: a.ReviewStatus, Reused: true}}
	if s.Draft == nil || s.Draft.ID != a.DraftID {
		d, err := n.Desk.Draft(ctx, a.DraftID)
		if err != nil {
			return State{}, err
		}
		upd.Draft = &DraftRef{ID: d.ID, ExpiresAt: d.ExpiresAt.UTC()}
		if s.Reason == "" {
			upd.Reason = d.Reason
		}
	}
	return upd, nil
}
