package returns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"assistant/flow"
)

// recordedAnswer reports whether the answer in o is the one the task has
// recorded already: applied to the state, or saved at the head by a process
// that died before applying it (the snapshot's task answers, which a
// continued run replays). An answer that contradicts the recorded one is
// ErrConflict.
func recordedAnswer(task string, snap *flow.Snapshot[State], o ResumeOptions) (bool, error) {
	action, reason := savedAnswers(snap)
	switch {
	case o.Action != "" && action != "":
		if o.Action != action {
			return false, fmt.Errorf("task %s was already answered %q; the answer %q is refused: %w", task, action, o.Action, ErrConflict)
		}
		return true, nil
	case o.reasonAnswer() && reason != "":
		if strings.TrimSpace(o.Reason) != reason {
			return false, fmt.Errorf("task %s was already given the reason %q; the reason %q is refused: %w", task, reason, o.Reason, ErrConflict)
		}
		return true, nil
	case o.reasonAnswer() && snap.Values.Reason != "" && strings.TrimSpace(o.Reason) == snap.Values.Reason:
		return true, nil
	}
	return false, nil
}

// eachCheckpointWrites calls fn with the pending writes of each of task's
// checkpoints, newest first, until fn returns true. Errors: storage errors.
func (r *runner) eachCheckpointWrites(ctx context.Context, task string, fn func([]flow.Write) bool) error {
	cps, err := r.cps.List(ctx, task, flow.ListOptions{}) // newest first
	if err != nil {
		return err
	}
	for _, c := range cps {
		cp, err := r.cps.Get(ctx, task, c.ID)
		if err != nil {
			return err
		}
		if cp != nil && fn(cp.PendingWrites) {
			return nil
		}
	}
	return nil
}

// resumeAnswer is the answer w saves, when w is a resume write that decodes
// as one: its question's interrupt id and the answer; ok false otherwise.
func resumeAnswer(w flow.Write) (id string, a ApprovalAnswer, ok bool) {
	if w.Kind != flow.WriteResume || json.Unmarshal(w.Value, &a) != nil {
		return "", ApprovalAnswer{}, false
	}
	return flow.InterruptID(w.TaskID, w.Idx), a, true
}

// savedAnswers returns the decision and the reason the task has recorded:
// the state's decision, overridden by answers saved at the head and not yet
// applied; "" for none.
func savedAnswers(snap *flow.Snapshot[State]) (action, reason string) {
	action = snap.Values.Decision
	for _, ts := range snap.Tasks {
		for _, raw := range ts.Answers {
			switch ts.Node {
			case NodeReview, NodeReview2:
				var a ApprovalAnswer
				if json.Unmarshal(raw, &a) == nil && a.Action != "" {
					action = a.Action
				}
			case NodeAskReason:
				var a ReasonAnswer
				if json.Unmarshal(raw, &a) == nil {
					reason = strings.TrimSpace(a.Reason)
				}
			}
		}
	}
	return action, reason
}

// errAnswerSaved: the answer given is one this user gave already, saved at
// the head and not yet used (its command was killed before it reported),
// or the edit or revise the task took last (retried): a retry, which
// changes nothing and shows the task (Resume: settled).
var errAnswerSaved = errors.New("answer saved already")

// retried reports whether o repeats the edit or revise that snap, a
// waiting task's head, shows applied last: the last decision of the trail is
// that action by o.User with the same reason (edit) or comment (revise),
// bound to the draft and version o names (if any), and the task waits on
// what it led to: the next draft version at approval (edit), or the
// need_reason question carrying the comment (revise). Giving it again is
// a retry of a command whose reply was lost, not a new edit: one more
// version would count towards business.MaxDraftVersions. An edit of the
// new version names it (its version or its draft id).
func retried(snap *flow.Snapshot[State], o ResumeOptions) bool {
	st := snap.Values
	if (o.Action != ActionEdit && o.Action != ActionRevise) || len(st.Decisions) == 0 {
		return false
	}
	d := st.Decisions[len(st.Decisions)-1]
	if d.Action != o.Action || d.By != o.User || !sameWords(o, d) ||
		(o.Version != 0 && o.Version != d.Version) || (o.DraftID != "" && o.DraftID != d.DraftID) {
		return false
	}
	asks := func(kind string) bool {
		return slices.ContainsFunc(snap.Interrupts, func(in flow.PendingInterrupt) bool { return kindOf(in.Value) == kind })
	}
	if o.Action == ActionEdit {
		return asks(KindApproval) && VersionOf(st.Draft) == d.Version+1
	}
	return asks(KindNeedReason) && st.Comment == d.Comment
}

// savedAnswer is errAnswerSaved with the line for the person that says
// what was kept (View.Note).
type savedAnswer struct{ note string }

func (e *savedAnswer) Error() string { return errAnswerSaved.Error() + ": " + e.note }

// Is makes errors.Is(err, errAnswerSaved) true.
func (e *savedAnswer) Is(target error) bool { return target == errAnswerSaved }

// savedNote is the line a *savedAnswer in err carries; "" for none.
func savedNote(err error) string {
	var s *savedAnswer
	if errors.As(err, &s) {
		return s.note
	}
	return ""
}

// carriedBy checks o, an answer to task's run that stopped part-way with
// no question pending, against who gave the answers the run carries: those
// saved to the questions of the newest checkpoint that has any (one round:
// both approvals of a draft, the cancel that answered them, a reason).
// nil (the caller's rule goes on: recordedAnswer continues the run for
// the same answer and refuses another) when o.User gave one of them and,
// when o names one of them, that one. From anyone else, or naming another
// person's question, it is ErrConflict: one line saying who answered what,
// and a hint offering to resume the task, which anyone who may decide the
// task may do (the caller checked that o.User may). nil
// too when the checkpoints hold no answer or one saved without its
// answerer (pruned, or older). Nothing is written. Errors: those, and
// storage errors.
func (r *runner) carriedBy(ctx context.Context, task string, o ResumeOptions) error {
	ids, answers, err := r.lastAnswers(ctx, task)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	if len(ids) == 0 {
		return nil
	}
	for _, id := range ids {
		if answers[id].By == "" {
			return nil // an answer saved without its answerer: not judged
		}
	}
	// o.User's own answer: the same one is a retry; another one is
	// refused by recordedAnswer as before, naming the answer recorded.
	mine := func(id string) bool { return answers[id].By == o.User }
	if _, named := answers[o.InterruptID]; named {
		if mine(o.InterruptID) {
			return nil
		}
	} else if slices.ContainsFunc(ids, mine) {
		return nil
	}
	said := func(id string) string {
		a := answers[id]
		what := a.Action
		if what == "" {
			what = fmt.Sprintf("reason %q", a.Reason)
		}
		line := what + " by " + a.By
		if !a.At.IsZero() {
			line += " at " + a.At.UTC().Format(time.RFC3339)
		}
		return line
	}
	resume := Hint{Before: "run", Do: DoResume, Task: task, After: "to continue it"}
	if _, ok := answers[o.InterruptID]; ok {
		return errorf(resume, "task %s: interrupt %s was answered already (%s), and its run stopped part-way with no question pending; the answer %s by %s changes nothing: %w",
			task, o.InterruptID, said(o.InterruptID), o.given(), o.User, ErrConflict)
	}
	var who []string
	for _, id := range ids {
		who = append(who, fmt.Sprintf("interrupt %s: %s", id, said(id)))
	}
	return errorf(resume, "task %s has no question pending: its run stopped part-way after its questions were answered (%s); the answer %s by %s changes nothing: %w",
		task, strings.Join(who, "; "), o.given(), o.User, ErrConflict)
}

// lastAnswers returns the answers saved to the questions of task's newest
// checkpoint that holds any (by interrupt id, and the ids in the order
// saved): the round of answers its run carries. None when no checkpoint
// holds one. Errors: storage errors.
func (r *runner) lastAnswers(ctx context.Context, task string) ([]string, map[string]ApprovalAnswer, error) {
	var ids []string
	var answers map[string]ApprovalAnswer
	err := r.eachCheckpointWrites(ctx, task, func(writes []flow.Write) bool {
		ids, answers = nil, map[string]ApprovalAnswer{}
		for _, w := range writes {
			id, a, ok := resumeAnswer(w)
			if !ok {
				continue
			}
			if _, seen := answers[id]; !seen {
				ids = append(ids, id)
			}
			answers[id] = a
		}
		return len(ids) > 0
	})
	if err != nil || len(ids) == 0 {
		return nil, nil, err
	}
	return ids, answers, nil
}
