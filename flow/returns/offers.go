package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"assistant/business"
)

// This file holds the one judgement of whether a person's approve of the
// draft a task asks about could be carried out now (docs/json.md "The
// state as it is now"): the card, list --awaiting-me and list --output
// csv offer an approve only to a person for whom it could. It is the
// judgement the answer and the submit make: two approvals need two people
// (secondAnswer), and every approval the submit counts must still count
// (business.ApprovalsCount: the owner, or a grantee now; of a task that
// needs two, not its requester).

// approvalAsk is the approval a task asks for: task, its owner (the
// requester), how many approvals it needs, and the draft and version
// they must name.
type approvalAsk struct {
	task, owner string
	need        int
	draftID     string
	version     int
}

// approveRefused returns why user's approve of what a asks for could not
// be carried out now, in words for a person ("" when it could): the
// approval user gave the draft already, of a task that needs two; or
// why the submit would not count it (business.ApprovalsCount, run now by
// business.Store.Judge). It reads the task's decision trail and, for an
// approver who is not the owner, their grant. It writes nothing. Errors:
// storage errors.
func (s *Service) approveRefused(ctx context.Context, a approvalAsk, user string) (string, error) {
	ds, err := s.desk.Decisions(ctx, a.task)
	if err != nil {
		return "", fmt.Errorf("approvals of task %s: %w", a.task, err)
	}
	if a.need >= 2 && approvedBy(ds, a.draftID, user) != nil {
		return fmt.Sprintf("%s approved version %d already; the other approval must come from another person", user, max(a.version, 1)), nil
	}
	mine := business.Decision{TaskID: a.task, By: user, Action: ActionApprove, DraftID: a.draftID, Version: a.version}
	err = s.desk.Judge(ctx, s.desk.ApprovalsCount(a.task, a.owner, max(a.need, 1), a.draftID, a.version, []business.Decision{mine}))
	var ue *business.UncountedError
	switch {
	case errors.As(err, &ue) && len(ue.Uncounted) > 0:
		return ue.Uncounted[0].Because, nil
	case err != nil:
		return "", err
	}
	return "", nil
}

// approvedBy returns user's approval of draft draftID that the trail ds
// holds and that still counts (no submit marked it not counted), nil
// when there is none: of a task that needs two approvals, user may give
// no second one.
func approvedBy(ds []business.Decision, draftID, user string) *business.Decision {
	for i, d := range ds {
		if d.DraftID == draftID && d.By == user && d.Action == ActionApprove && d.NotCounted == "" {
			return &ds[i]
		}
	}
	return nil
}

// forViewer sets v.NoApprove for user, the person v is shown to: why
// their approve of the draft v asks about could not be carried out now
// (approveRefused), "" when it could or v asks no approval that may
// still submit (an expired draft, an order no longer returnable: the view
// tells those itself). v may be nil. Errors: storage errors.
func (s *Service) forViewer(ctx context.Context, v *View, user string) (*View, error) {
	if v == nil {
		return v, nil
	}
	if v.Batch != nil || v.Draft == nil || v.Kind == nil || *v.Kind != KindApproval || v.Status != StatusWaiting {
		return withActions(v, user), nil
	}
	need := 1
	for _, in := range v.Interrupts {
		need = max(need, approvalSlot(in.Value).Approvals)
	}
	why, err := s.approveRefused(ctx, approvalAsk{task: v.Task, owner: v.User, need: need, draftID: v.Draft.DraftID, version: v.Draft.Version}, user)
	if err != nil {
		return nil, fmt.Errorf("show %s: %w", v.Task, err)
	}
	v.NoApprove = why
	return withActions(v, user), nil
}

// Actions a view offers its viewer (View.Actions), besides the answers
// of the decision trail (ActionApprove, …, ActionReason).
const (
	ActionResume  = "resume"
	ActionRecover = "recover"
	ActionStop    = "stop"
	ActionStart   = "start"
)

// withActions sets v.Actions to what user, the person v is shown to, may
// do now with the task (viewerActions). v may be nil.
func withActions(v *View, user string) *View {
	if v != nil {
		v.Actions = viewerActions(v, user)
	}
	return v
}

// viewerActions is what user may do now with the task v shows, each an
// action that can succeed at the time of the view; the card offers the
// same commands:
//
//   - a draft that expired before it was approved: recover (it ends the
//     task failed) and, for the owner, start (a new request);
//   - a question asked: its answers (reason; approve, cancel, edit,
//     revise), only cancel when the order cannot be returned now, only
//     the standing answer when the trail holds one, no approve when the
//     viewer's could not count (View.NoApprove);
//   - a stopped run: resume, once no live process holds it;
//   - a running run: stop, for the owner, while its process is alive;
//     recover and resume once its process is gone.
//
// A finished task offers nothing.
func viewerActions(v *View, user string) []string {
	if v.DraftExpired() || v.ExpiredNow() {
		if user == v.User {
			return []string{ActionStart, ActionRecover}
		}
		return []string{ActionRecover}
	}
	alive := v.Holder != nil && v.Holder.Alive
	out := []string{}
	add := func(as ...string) {
		for _, a := range as {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	if !(v.Status == StatusInterrupted && alive) {
		for _, in := range v.Interrupts {
			switch {
			case v.Stands != nil:
				add(v.Stands.Action)
			case in.Kind == KindNeedReason:
				add(ActionReason)
			case in.Kind != KindApproval:
			case v.Draft != nil && v.Draft.NotReturnable != nil:
				add(ActionCancel)
			case v.NoApprove != "":
				add(ActionCancel, ActionEdit, ActionRevise)
			default:
				add(ActionApprove, ActionCancel, ActionEdit, ActionRevise)
			}
		}
	}
	switch {
	case v.Status == StatusInterrupted && !alive:
		add(ActionResume)
	case v.Status == StatusRunning && alive && user == v.User && v.Result == nil:
		// Once the submit made its application a stop is too late.
		add(ActionStop)
	case v.Status == StatusRunning && !alive:
		add(ActionRecover, ActionResume)
	}
	return out
}

// recordApproveRefused is approveRefused for user of task id, owned by
// owner, waiting for approval of draft d, with the approvals it needs
// read from its record.
func (s *Service) recordApproveRefused(ctx context.Context, id, owner string, d business.Draft, user string) (string, error) {
	need, err := s.runs.Approvals(ctx, id)
	if err != nil {
		return "", fmt.Errorf("list: %w", err)
	}
	return s.approveRefused(ctx, approvalAsk{task: id, owner: owner, need: need, draftID: d.ID, version: d.Version}, user)
}
