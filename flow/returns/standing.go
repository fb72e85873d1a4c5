package returns

import (
	"context"
	"fmt"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// standing returns the answer the business file's decision trail holds
// for the question the head snap asks, which the head neither holds nor
// has saved to replay (the checkpoint that applied it was lost: a power
// loss, an older checkpoints.sqlite): an edit or revise of the draft the
// approval question asks about, or a reason given at a need_reason
// question of that draft. That answer stands and alone carries the task
// on. nil when there is none, or snap asks nothing. Approvals are left to
// the round's own checks (secondAnswer), a cancel to truth, which reads
// it as the task's end. Reads the trail once. Errors: storage errors.
func standing(ctx context.Context, desk *business.Store, task string, snap *flow.Snapshot[State]) (*business.Decision, error) {
	if snap == nil || !snap.Waiting() {
		return nil, nil
	}
	ds, err := desk.Decisions(ctx, task)
	if err != nil {
		return nil, err
	}
	known := decisionIDs(snap)
	draft, asks := "", map[string]bool{}
	if snap.Values.Draft != nil {
		draft = snap.Values.Draft.ID
	}
	for _, in := range snap.Interrupts {
		asks[kindOf(in.Value)] = true
	}
	for i := range ds {
		d := &ds[i]
		if known[d.ID] || d.DraftID != draft {
			continue
		}
		if ((d.Action == ActionEdit || d.Action == ActionRevise) && asks[KindApproval]) ||
			(d.Action == ActionReason && asks[KindNeedReason]) {
			return d, nil
		}
	}
	return nil, nil
}

// StandingHint is the resume that carries out the answer d the trail
// holds for task, word for word: a reason, an edit with its reason, a
// revise with its comment.
func StandingHint(task string, d DecisionView) Hint {
	h := Hint{Do: DoResume, Task: task}
	switch d.Action {
	case ActionReason:
		h.With = []InputValue{{InputReason, d.Reason}}
	case ActionEdit:
		h.With = []InputValue{{InputAction, ActionEdit}, {InputReason, d.Reason}}
	default:
		h.With = []InputValue{{InputAction, d.Action}, {InputComment, d.Comment}}
	}
	return h
}

// standingView is d as printed.
func standingView(d *business.Decision) *DecisionView {
	v := decisionView(d.By, d.Action, d.DraftID, d.Version, d.At, d.Comment, d.Reason)
	return &v
}

// trailAhead checks an answer o to the question the head snap asks against
// the answer the decision trail holds for it (standing), which was given
// and stands. The same answer again carries it out under that decision's
// id, so the trail keeps it once (o's DecisionID is set); any other answer
// is ErrConflict naming it, with the hint that carries it out
// (StandingHint), and nothing is written.
func (r *runner) trailAhead(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o *ResumeOptions) error {
	if !o.answering() {
		return nil
	}
	d, err := standing(ctx, r.desk, t.ID, snap)
	if err != nil {
		return fmt.Errorf("resume %s: %w", t.ID, err)
	}
	if d == nil {
		return nil
	}
	var same bool
	if d.Action == ActionReason {
		same = o.reasonAnswer() && strings.TrimSpace(o.Reason) == d.Reason
	} else {
		same = o.Action == d.Action && sameWords(*o, Decision{Reason: d.Reason, Comment: d.Comment})
	}
	if same {
		o.DecisionID = d.ID
		return nil
	}
	hint := StandingHint(t.ID, *standingView(d))
	hint.Before = "only it carries the task on:"
	return errorf(hint, "task %s was answered %s already (by %s at %s, recorded in %s; the checkpoint that applied it was lost): the answer given is refused and changes nothing; that answer stands: %w",
		t.ID, d.Action, d.By, d.At.UTC().Format(time.RFC3339), r.businessName(), ErrConflict)
}
