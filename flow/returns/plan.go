package returns

import (
	"context"
	"fmt"
	"slices"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// plan checks o against the task's head and returns the command that
// answers or continues its run, and a note for the person when it chose
// which question an answer goes to. Errors (nothing changed): ErrInvalid
// for an answer of the wrong kind or draft, ErrConflict for an answer that
// contradicts the decision already recorded, for an answer bound to a
// superseded draft version (stale), for a second answer of one person to
// the approvals of one draft, or for an answer to a run that asks no
// question.
func (r *runner) plan(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) (flow.Command, string, error) {
	if len(snap.Interrupts) == 0 {
		// A run stopped part-way (crash, stop, breakpoint). An answer given
		// now must be one the run has recorded already (applied, or saved
		// as a pending write by the process that died): it can only be
		// re-affirmed. Any other answer would answer a question nobody saw.
		if o.answering() {
			// Who gave the answer first: another person's answer, or
			// another answer, is refused saying who answered what.
			if err := r.carriedBy(ctx, t.ID, o); err != nil {
				return flow.Command{}, "", err
			}
			recorded, err := recordedAnswer(t.ID, snap, o)
			if err != nil {
				return flow.Command{}, "", err
			}
			if !recorded {
				return flow.Command{}, "", noQuestion(t.ID, "its run stopped part-way, and the answer given was not recorded")
			}
		}
		return flow.Command{}, "", nil
	}
	if !o.answering() {
		in := snap.Interrupts[0]
		return flow.Command{}, "", errorf(answerHint(t.ID, kindOf(in.Value)), "%w: task %s is waiting for an answer (%s)", ErrInvalid, t.ID, kindOf(in.Value))
	}
	if retried(snap, o) {
		return flow.Command{}, "", errAnswerSaved
	}
	approvals := openApprovals(snap.Interrupts)
	if o.Action == ActionApprove && snap.Values.Approvals >= 2 && o.User == snap.Values.User {
		return flow.Command{}, "", requesterApproves(t.ID, o.User, snap.Values.Approvals)
	}
	if o.Action != "" && snap.Values.Approvals >= 2 {
		if err := inFlight(t.ID, snap, o); err != nil {
			return flow.Command{}, "", err
		}
	}
	if o.InterruptID != "" && !slices.ContainsFunc(snap.Interrupts, func(in flow.PendingInterrupt) bool { return in.ID == o.InterruptID }) {
		// A question no longer open: answered already (a retry of a
		// command whose reply was lost, or someone else's answer), or
		// unknown (pick's ErrInvalid below).
		if err := r.answeredQuestion(ctx, t.ID, snap, o); err != nil {
			return flow.Command{}, "", err
		}
		if err := r.supersededQuestion(ctx, t.ID, snap, o); err != nil {
			return flow.Command{}, "", err
		}
	}
	var in flow.PendingInterrupt
	var err error
	if o.InterruptID == "" && o.Action != "" && len(approvals) > 1 {
		// Two approval questions open: the first one (none of them is
		// answered yet; an answered one is no longer open).
		in = approvals[0]
	} else if in, err = pick(snap.Interrupts, o.InterruptID); err != nil {
		return flow.Command{}, "", errorf(Hint{}, "%w: task %s: %w", ErrInvalid, t.ID, err)
	}
	answer, err := r.answerFor(ctx, t.ID, in, snap.Values, o)
	if err != nil {
		return flow.Command{}, "", err
	}
	cmd := flow.Command{ResumeMap: map[string]any{in.ID: answer}}
	a, ok := answer.(ApprovalAnswer)
	if !ok || snap.Values.Approvals < 2 {
		return cmd, "", nil
	}
	var ahead []business.Decision
	if a.Action == ActionApprove {
		if ahead, err = r.aheadApprovals(ctx, snap); err != nil {
			return flow.Command{}, "", fmt.Errorf("resume %s: %w", t.ID, err)
		}
	}
	carried := ""
	if i := slices.IndexFunc(ahead, func(d business.Decision) bool { return d.By == o.User }); i >= 0 {
		// o.User's approval the trail holds and the head lacks (its
		// command was killed after recording it, before saving it):
		// this approve carries it out, under its own decision id, so
		// the trail keeps it once.
		d := ahead[i]
		ahead = slices.Delete(ahead, i, i+1)
		a = carriedAnswer(d)
		cmd.ResumeMap[in.ID] = a
		carried = fmt.Sprintf(" (the approval %s gave at %s, recorded in %s)", d.By, d.At.UTC().Format(time.RFC3339), r.businessName())
	} else if err := r.secondAnswer(ctx, t.ID, a.DraftID, o); err != nil {
		return flow.Command{}, "", err
	}
	if a.Action != ActionApprove {
		// One cancel (edit, revise) ends the round: it answers every open
		// approval question of the draft, recorded once in the trail.
		for _, q := range approvals {
			cmd.ResumeMap[q.ID] = answer
		}
		return cmd, fmt.Sprintf("%s answers every open approval question of draft %s", a.Action, a.DraftID), nil
	}
	asked := approvalSlot(in.Value)
	note := fmt.Sprintf("approved as approver %d of %d (interrupt %s)%s", asked.Approver, asked.Approvals, in.ID, carried)
	// Another person's approval the trail holds and the head lacks counts
	// as given: it answers another open question now.
	for _, q := range approvals {
		if len(ahead) == 0 {
			break
		}
		if _, answered := cmd.ResumeMap[q.ID]; answered {
			continue
		}
		d := ahead[0]
		ahead = ahead[1:]
		cmd.ResumeMap[q.ID] = carriedAnswer(d)
		note += fmt.Sprintf("; %s's approval of %s, recorded in %s, counts as approver %d (interrupt %s)", d.By, d.At.UTC().Format(time.RFC3339), r.businessName(), approvalSlot(q.Value).Approver, q.ID)
	}
	return cmd, note, nil
}

// carriedAnswer is the approval answer that carries out d, an approval the
// decision trail holds: under d's own id, by d's approver, at d's time.
func carriedAnswer(d business.Decision) ApprovalAnswer {
	return ApprovalAnswer{Action: ActionApprove, DraftID: d.DraftID, By: d.By, At: d.At, DecisionID: d.ID}
}

// requesterApproves is the refusal of an approve by user, the requester
// (owner) of task, which needs approvals approvals from people other than
// its requester (four-eyes, docs/approvals.md "Two approvals"): ErrInvalid,
// nothing is written. The requester may still cancel, edit or revise.
func requesterApproves(task, user string, approvals int) error {
	return errorf(Hint{Before: "ask two of the owner's approvers to approve it; they see it with", Do: DoShow, Task: task},
		"%w: task %s needs %d approvals from people other than its requester, and %s requested it: the approval is refused and nothing changed (the requester may still cancel, edit or revise)",
		ErrInvalid, task, approvals, user)
}
