package returns

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
)

// roundAnswer is an answer saved at a head to one of its approval
// questions: the question's id, the answer, and whether its task has run
// with it (done: its update waits for the other approval).
type roundAnswer struct {
	interrupt string
	answer    ApprovalAnswer
	done      bool
}

// roundAnswers returns the answers saved at the head snap to the approval
// questions of the superstep due (review, review_2), those its tasks ran
// with included (the snapshot carries only the answers not used yet), in
// the order they were saved. It reads the head checkpoint once. Errors:
// storage errors.
func (r *runner) roundAnswers(ctx context.Context, snap *flow.Snapshot[State]) ([]roundAnswer, error) {
	done := map[string]bool{}
	for _, ts := range snap.Tasks {
		if ts.Node == NodeReview || ts.Node == NodeReview2 {
			done[ts.ID] = ts.Done
		}
	}
	if len(done) == 0 {
		return nil, nil
	}
	cp, err := r.cps.Get(ctx, snap.ThreadID, snap.CheckpointID)
	if err != nil || cp == nil {
		return nil, err
	}
	var out []roundAnswer
	for _, w := range cp.PendingWrites {
		d, ok := done[w.TaskID]
		id, a, saved := resumeAnswer(w)
		if !ok || !saved {
			continue
		}
		out = append(out, roundAnswer{interrupt: id, answer: a, done: d})
	}
	return out, nil
}

// answeredQuestion checks o, whose interrupt names a question the head
// snap no longer has open, against the answer saved to it in this round
// (roundAnswers): o.User's own answer given again, the same action, is a
// retry of a command whose reply was lost (a *savedAnswer: it changes
// nothing, exit 0); any other answer to it is ErrConflict naming who
// answered it and how. nil when no answer of the round was given to
// that question (an unknown id: the caller refuses it as ErrInvalid).
func (r *runner) answeredQuestion(ctx context.Context, task string, snap *flow.Snapshot[State], o ResumeOptions) error {
	ras, err := r.roundAnswers(ctx, snap)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	for _, ra := range ras {
		if ra.interrupt != o.InterruptID {
			continue
		}
		a := ra.answer
		when := ""
		if !a.At.IsZero() {
			when = " at " + a.At.UTC().Format(time.RFC3339)
		}
		if a.By == o.User && a.Action == o.Action && sameWords(o, Decision{Reason: a.Reason, Comment: a.Comment}) {
			return &savedAnswer{note: fmt.Sprintf("%s answered %s to interrupt %s already%s; that answer stands and counts once", o.User, a.Action, o.InterruptID, when)}
		}
		by := a.By
		if by == "" {
			by = "someone"
		}
		hint := Hint{Before: "run", Do: DoShow, Task: task, After: "to see what is still asked"}
		if o.Action != ActionApprove {
			hint = Hint{Before: fmt.Sprintf("a %s answers every open approval question: give it without", o.Action), With: []InputValue{{Input: InputInterrupt}}}
		}
		return errorf(hint, "task %s: interrupt %s was answered already (%s by %s%s); the answer %s changes nothing: %w", task, o.InterruptID, a.Action, by, when, o.Action, ErrConflict)
	}
	return nil
}

// supersededQuestion checks o's interrupt, which names a question the
// head snap no longer has open and nobody answered in this round, against
// every question the task's run asked: one it asked before this round (an
// earlier draft version's, answered or not) is stale, ErrConflict naming
// the question asked now, as a superseded draft or version is; an id the
// task never asked is ErrInvalid. The same two codes hold once the task
// has ended (endedInterrupt, endedAnswer). Nothing is written. Errors:
// those, and storage errors.
func (r *runner) supersededQuestion(ctx context.Context, task string, snap *flow.Snapshot[State], o ResumeOptions) error {
	asked, _, err := r.askedAnswered(ctx, task, snap)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	if !asked[o.InterruptID] {
		return errorf(Hint{Before: "run", Do: DoHistory, Task: task, After: "to see its questions"}, "%w: task %s never asked interrupt %q", ErrInvalid, task, o.InterruptID)
	}
	open := make([]string, 0, len(snap.Interrupts))
	for _, in := range snap.Interrupts {
		open = append(open, in.ID)
	}
	return errorf(Hint{Before: "run", Do: DoShow, Task: task, After: "and answer the question it asks now"},
		"task %s: interrupt %s was superseded: the task waits on interrupt %s now; the answer is stale and changes nothing: %w", task, o.InterruptID, strings.Join(open, ", "), ErrConflict)
}

// aheadApprovals returns the approvals of the draft the head snap asks
// about (a task that needs two) that the business file's decision trail
// holds, still counted, and the head neither holds nor has saved: recorded by a command
// killed after it recorded the answer and before it saved it (the trail
// is written first, recordAnswers), or whose checkpoint was lost. Each
// counts as given and is carried out by the next approve (plan). One per
// person, oldest first. Reads the trail, and the head checkpoint only
// when the trail holds an approval the snapshot does not show. Errors:
// storage errors.
func (r *runner) aheadApprovals(ctx context.Context, snap *flow.Snapshot[State]) ([]business.Decision, error) {
	st := snap.Values
	if st.Approvals < 2 || st.Draft == nil {
		return nil, nil
	}
	ds, err := r.desk.Decisions(ctx, snap.ThreadID)
	if err != nil {
		return nil, err
	}
	known := decisionIDs(snap)
	var ahead []business.Decision
	for _, d := range ds {
		if d.Action == ActionApprove && d.DraftID == st.Draft.ID && !known[d.ID] && d.NotCounted == "" {
			ahead = append(ahead, d)
		}
	}
	if len(ahead) == 0 {
		return nil, nil
	}
	ras, err := r.roundAnswers(ctx, snap)
	if err != nil {
		return nil, err
	}
	for _, ra := range ras {
		known[ra.answer.DecisionID] = true
	}
	out, by := ahead[:0], map[string]bool{}
	for _, d := range ahead {
		if !known[d.ID] && !by[d.By] {
			by[d.By] = true
			out = append(out, d)
		}
	}
	return out, nil
}

// inFlight checks o against the approval answers saved at the head whose
// task has not run with them yet (a command killed part-way; the task
// runs when the other approval is given): the same answer by the same
// user again is errAnswerSaved (a *savedAnswer), their approve of the
// other question (named by its interrupt id) ErrConflict, a cancel, edit or revise
// after their approve is taken as anyone's, another answer by them
// ErrConflict.
func inFlight(task string, snap *flow.Snapshot[State], o ResumeOptions) error {
	for _, ts := range snap.Tasks {
		if ts.Done || (ts.Node != NodeReview && ts.Node != NodeReview2) {
			continue
		}
		for _, raw := range ts.Answers {
			var a ApprovalAnswer
			if json.Unmarshal(raw, &a) != nil || a.By != o.User {
				continue
			}
			switch {
			case a.Action == ActionApprove && o.Action == ActionApprove && o.InterruptID != "" &&
				slices.ContainsFunc(snap.Interrupts, func(in flow.PendingInterrupt) bool { return in.ID == o.InterruptID }):
				return fmt.Errorf("task %s: %s has approved it already (saved, waiting for the other approval); the other approval must come from another person: %w", task, o.User, ErrConflict)
			case a.Action == o.Action:
				return &savedAnswer{note: fmt.Sprintf("%s answered %s already (saved, waiting for the other approval); that answer stands and counts once", o.User, a.Action)}
			case a.Action == ActionApprove && o.Action != ActionApprove:
				// A cancel, edit or revise after one's own approval
				// answers the open questions, as anyone's does.
				continue
			}
			return fmt.Errorf("task %s: %s answered %s already (saved, waiting for the other approval); the answer %s is refused: %w", task, o.User, a.Action, o.Action, ErrConflict)
		}
	}
	return nil
}

// openApprovals returns the open approval questions, in the order asked.
func openApprovals(open []flow.PendingInterrupt) []flow.PendingInterrupt {
	var out []flow.PendingInterrupt
	for _, in := range open {
		if kindOf(in.Value) == KindApproval {
			out = append(out, in)
		}
	}
	return out
}

// approvalSlot decodes which approval of how many a question asks.
func approvalSlot(v json.RawMessage) approvalAsked {
	var q approvalAsked
	_ = json.Unmarshal(v, &q)
	return q
}

// secondAnswer checks an answer o to an approval question of draftID
// against the approvals o.User gave it already: two approvals need two
// people. The same approve again, naming no interrupt, is a retry of a
// command whose reply was lost (a *savedAnswer: it changes nothing and
// counts once); an approve of the other question named by its interrupt is
// ErrConflict. A cancel, edit or revise by the first approver is taken:
// it answers every open question of the draft, as anyone's does. The
// business file's trail holds the answers of a round not yet merged into
// the state.
func (r *runner) secondAnswer(ctx context.Context, task, draftID string, o ResumeOptions) error {
	if o.Action != ActionApprove {
		return nil
	}
	ds, err := r.desk.Decisions(ctx, task)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	// An approval a submit no longer counted leaves its approver free to
	// approve again (approvedBy).
	d := approvedBy(ds, draftID, o.User)
	switch {
	case d == nil:
		return nil
	case o.InterruptID == "":
		return &savedAnswer{note: fmt.Sprintf("%s approved draft %s already (at %s); that approval stands and counts once: the other approval must come from another person",
			o.User, draftID, d.At.UTC().Format(time.RFC3339))}
	}
	return fmt.Errorf("task %s: %s has approved draft %s already; the other approval must come from another person: %w", task, o.User, draftID, ErrConflict)
}
