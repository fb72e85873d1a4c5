package returns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// fitsRecord checks an answer to a task whose run is missing (its record
// was committed, its checkpoints were not) against the question the record
// shows: the kind of answer, and the draft it names. Errors as plan's:
// ErrInvalid for a wrong kind or draft, ErrConflict when the record shows
// no question.
func (r *runner) fitsRecord(ctx context.Context, t runs.TaskRecord, o ResumeOptions) error {
	if !o.HasReason && o.Action == "" {
		return nil
	}
	kind := map[string]string{StageDraftReady: KindApproval, StageNeedReason: KindNeedReason}[t.Stage]
	if kind == "" {
		return fmt.Errorf("task %s has no question pending; run `assistant resume %s` to continue it, then answer the question it asks: %w", t.ID, t.ID, ErrConflict)
	}
	if err := wrongKind(t.ID, kind, o); err != nil || o.DraftID == "" {
		return err
	}
	d, err := r.desk.DraftByTask(ctx, t.ID)
	if err != nil && !errors.Is(err, business.ErrNotFound) {
		return err
	}
	return wrongDraft(t.ID, o.DraftID, d.ID)
}

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
	case o.HasReason && reason != "":
		if strings.TrimSpace(o.Reason) != reason {
			return false, fmt.Errorf("task %s was already given the reason %q; the reason %q is refused: %w", task, reason, o.Reason, ErrConflict)
		}
		return true, nil
	case o.HasReason && snap.Values.Reason != "" && strings.TrimSpace(o.Reason) == snap.Values.Reason:
		return true, nil
	}
	return false, nil
}

// endedAnswer checks o against a task whose run has ended (snap.Done()):
// --draft must name the task's draft (ErrInvalid otherwise, as on a
// waiting task); a plain resume, or the answer the run recorded (the same
// decision or reason again: a retry of a command whose reply was lost),
// shows the outcome; any other answer is ErrConflict with a line saying
// what the task ended as. Approve on a submitted task stands too: the
// application it asks for exists.
func endedAnswer(t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) error {
	st := snap.Values
	if o.DraftID != "" {
		draft := ""
		if st.Draft != nil {
			draft = st.Draft.ID
		}
		if o.DraftID != draft {
			if draft == "" {
				return fmt.Errorf("%w: --draft %s is not a draft of task %s (it ended with none); run `assistant show %s`", ErrInvalid, o.DraftID, t.ID, t.ID)
			}
			return fmt.Errorf("%w: --draft %s is not the draft of task %s (%s); run `assistant show %s`", ErrInvalid, o.DraftID, t.ID, draft, t.ID)
		}
	}
	if !o.answering() {
		return nil
	}
	v := view(t, snap)
	action, _ := savedAnswers(snap)
	var same bool
	answer := o.Action
	switch {
	case o.Action != "":
		same = o.Action == action || (o.Action == ActionApprove && v.Status == StatusDone && v.Result != nil)
	default:
		answer = fmt.Sprintf("--reason %q", o.Reason)
		same = strings.TrimSpace(o.Reason) != "" && strings.TrimSpace(o.Reason) == st.Reason
	}
	if same {
		return nil
	}
	return fmt.Errorf("task %s ended as %s; the answer %s changes nothing: %w", t.ID, endedAs(v), answer, ErrConflict)
}

// endedAs names how a finished run ended: its status, with the error code
// of a failed one ("failed (draft_expired)").
func endedAs(v *View) string {
	if v.Status == StatusFailed && v.Error != nil && v.Error.Code != "" {
		return fmt.Sprintf("%s (%s)", v.Status, v.Error.Code)
	}
	return v.Status
}

// savedAnswers returns the decision and the reason the task has recorded:
// the state's decision, overridden by answers saved at the head and not yet
// applied; "" for none.
func savedAnswers(snap *flow.Snapshot[State]) (action, reason string) {
	action = snap.Values.Decision
	for _, ts := range snap.Tasks {
		for _, raw := range ts.Answers {
			switch ts.Node {
			case NodeReview:
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

// plan checks o against the task's head and returns the command that
// answers or continues its run. Errors (nothing changed): ErrInvalid for an
// answer of the wrong kind or draft, ErrConflict for an answer that
// contradicts the decision already recorded, or for an answer to a run that
// asks no question.
func (r *runner) plan(t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) (flow.Command, error) {
	if len(snap.Interrupts) == 0 {
		// A run stopped part-way (crash, stop, breakpoint). An answer given
		// now must be one the run has recorded already (applied, or saved
		// as a pending write by the process that died): it can only be
		// re-affirmed. Any other answer would answer a question nobody saw.
		if o.answering() {
			recorded, err := recordedAnswer(t.ID, snap, o)
			if err != nil {
				return flow.Command{}, err
			}
			if !recorded {
				return flow.Command{}, fmt.Errorf("task %s has no question pending: its run stopped part-way, and the answer given was not recorded; run `assistant resume %s` to continue it, then answer the question it asks: %w", t.ID, t.ID, ErrConflict)
			}
		}
		return flow.Command{}, nil
	}
	if !o.answering() {
		in := snap.Interrupts[0]
		return flow.Command{}, fmt.Errorf("%w: task %s is waiting for an answer (%s); %s", ErrInvalid, t.ID, kindOf(in.Value), hintFor(t.ID, kindOf(in.Value)))
	}
	in, err := pick(snap.Interrupts, o.InterruptID)
	if err != nil {
		return flow.Command{}, fmt.Errorf("%w: task %s: %v", ErrInvalid, t.ID, err)
	}
	answer, err := answerFor(t.ID, in, snap.Values, o)
	if err != nil {
		return flow.Command{}, err
	}
	return flow.Command{ResumeMap: map[string]any{in.ID: answer}}, nil
}

func pick(open []flow.PendingInterrupt, id string) (flow.PendingInterrupt, error) {
	if id == "" {
		if len(open) > 1 {
			return flow.PendingInterrupt{}, fmt.Errorf("%d questions are pending; name one with --interrupt", len(open))
		}
		return open[0], nil
	}
	for _, in := range open {
		if in.ID == id {
			return in, nil
		}
	}
	return flow.PendingInterrupt{}, fmt.Errorf("interrupt %q is not pending", id)
}

// answerFor builds the resume value from the pending interrupt's kind and
// st, the state the question was asked in; an answer of the wrong kind is
// ErrInvalid and nothing is written.
func answerFor(task string, in flow.PendingInterrupt, st State, o ResumeOptions) (any, error) {
	kind := kindOf(in.Value)
	if err := wrongKind(task, kind, o); err != nil {
		return nil, err
	}
	switch kind {
	case KindNeedReason:
		return ReasonAnswer{Reason: o.Reason}, nil
	case KindApproval:
		var q ApprovalQuestion
		if err := json.Unmarshal(approvalView(in.Value, st), &q); err != nil {
			return nil, fmt.Errorf("decode approval question of %s: %w", task, err)
		}
		if o.DraftID != "" {
			if err := wrongDraft(task, o.DraftID, q.DraftID); err != nil {
				return nil, err
			}
		}
		return ApprovalAnswer{Action: o.Action, DraftID: q.DraftID}, nil
	}
	return nil, fmt.Errorf("%w: task %s waits on an interrupt of unknown kind %q", ErrInvalid, task, kindOf(in.Value))
}

func kindOf(v json.RawMessage) string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(v, &k)
	return k.Kind
}

// wrongKind is the error (ErrInvalid) for an answer of the other kind than
// a question of kind asks; nil when it fits or the kind is unknown.
func wrongKind(task, kind string, o ResumeOptions) error {
	switch {
	case kind == KindNeedReason && !o.HasReason:
		return fmt.Errorf("%w: task %s is waiting for a reason, not an action; %s", ErrInvalid, task, hintFor(task, kind))
	case kind == KindApproval && o.Action == "":
		return fmt.Errorf("%w: task %s is waiting for approval, not a reason; %s", ErrInvalid, task, hintFor(task, kind))
	}
	return nil
}

// wrongDraft is the error (ErrInvalid) for --draft given when the draft
// waiting for approval is pending; nil when they are the same.
func wrongDraft(task, given, pending string) error {
	if given == pending {
		return nil
	}
	return fmt.Errorf("%w: --draft %s is not the draft waiting for approval (%s); run `assistant show %s`", ErrInvalid, given, pending, task)
}

func hintFor(task, kind string) string {
	if kind == KindNeedReason {
		return fmt.Sprintf("run `assistant resume %s --reason \"...\"`", task)
	}
	return fmt.Sprintf("run `assistant resume %s --action approve` or `--action cancel`", task)
}
