package returns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

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
		return noQuestion(t.ID, "")
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

func pick(open []flow.PendingInterrupt, id string) (flow.PendingInterrupt, error) {
	if id == "" {
		if len(open) > 1 {
			return flow.PendingInterrupt{}, errorf(Hint{Before: "name one with", With: []InputValue{{Input: InputInterrupt}}}, "%d questions are pending", len(open))
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
// st, the state the question was asked in, as answered by o.User now; an
// answer of the wrong kind or draft is ErrInvalid, one bound to a
// superseded version ErrConflict, and nothing is written.
func (r *runner) answerFor(ctx context.Context, task string, in flow.PendingInterrupt, st State, o ResumeOptions) (any, error) {
	kind := kindOf(in.Value)
	if err := wrongKind(task, kind, o); err != nil {
		return nil, err
	}
	id := o.DecisionID
	if id == "" {
		var err error
		if id, err = newDecisionID(); err != nil {
			return nil, err
		}
	}
	at := r.svc.now().UTC()
	switch kind {
	case KindNeedReason:
		return ReasonAnswer{Reason: o.Reason, By: o.User, At: at, DecisionID: id}, nil
	case KindApproval:
		q, err := approvalAsAnswered(in.Value, st)
		if err != nil {
			return nil, fmt.Errorf("decode approval question of %s: %w", task, err)
		}
		if err := r.boundTo(ctx, task, q, o); err != nil {
			return nil, err
		}
		a := ApprovalAnswer{Action: o.Action, DraftID: q.DraftID, By: o.User, At: at, DecisionID: id}
		switch o.Action {
		case ActionEdit:
			a.Reason = strings.TrimSpace(o.Reason)
		case ActionRevise:
			a.Comment = strings.TrimSpace(o.Comment)
		}
		return a, nil
	}
	return nil, fmt.Errorf("%w: task %s waits on an interrupt of unknown kind %q", ErrInvalid, task, kindOf(in.Value))
}

// approvalAsAnswered is the approval question stored as shown
// (approvalView), decoded: the shown question itself, without encoding
// it and decoding it again, when its expiry is a time JSON can encode (a
// year from 0 to 9999; every question of a decoded state is).
func approvalAsAnswered(stored json.RawMessage, st State) (ApprovalQuestion, error) {
	if q, ok := approvalShown(stored, st); ok {
		if y := q.ExpiresAt.Year(); y >= 0 && y <= 9999 {
			return q, nil
		}
	}
	var q ApprovalQuestion
	err := json.Unmarshal(approvalView(stored, st), &q)
	return q, err
}

// boundTo checks the draft and version an answer names against q, the approval question
// asked: an older version of the task's draft is ErrConflict (stale: a
// newer version replaced it), any other mismatch ErrInvalid.
func (r *runner) boundTo(ctx context.Context, task string, q ApprovalQuestion, o ResumeOptions) error {
	if o.DraftID != "" && o.DraftID != q.DraftID {
		d, err := r.desk.Draft(ctx, o.DraftID)
		if err == nil && d.TaskID == task && d.Version < q.Version {
			return stale(task, q, phrasef("%s %s is version %d", InputDraft, o.DraftID, d.Version))
		}
		return wrongDraft(task, o.DraftID, q.DraftID)
	}
	switch {
	case o.Version == 0 && o.DraftID == "" && o.Action == ActionApprove && q.Version > 1:
		return unnamedVersion(task, q)
	case o.Version == 0 || o.Version == q.Version:
		return nil
	case o.Version < q.Version:
		return stale(task, q, phrasef("%s %d", InputVersion, o.Version))
	}
	return errorf(Hint{Before: "run", Do: DoShow, Task: task}, "%w: %s %d: the draft of task %s waiting for approval is version %d", ErrInvalid, InputVersion, o.Version, task, q.Version)
}

// unnamedVersion is the error (ErrInvalid) of an approve of task that
// names neither the draft nor the version it approves while q, the
// question asked, is about version 2 or later: an approval names what it
// approves once the draft has more than one version (docs/approvals.md
// "Answering a question"), so that an edit that landed after the approver
// looked is never approved unseen. The hint is the approve that names the
// draft asked about.
func unnamedVersion(task string, q ApprovalQuestion) error {
	return errorf(Hint{Before: "look at it, then approve it by its id:", Do: DoResume, Task: task, With: []InputValue{{Input: InputAction, Value: ActionApprove}, {Input: InputDraft, Value: q.DraftID}}},
		"%w: task %s: the draft waiting for approval is version %d (%s): an approve must name the draft or the version it approves once a draft has more than one version", ErrInvalid, task, q.Version, q.DraftID)
}

// stale is the error (ErrConflict) of an answer to task bound to a
// superseded draft version (given says which); q is the question asked
// now.
func stale(task string, q ApprovalQuestion, given phrase) error {
	return errorf(Hint{Before: "run", Do: DoShow, Task: task, After: fmt.Sprintf("and answer version %d", q.Version)},
		"task %s: %s, superseded by version %d (%s): the answer is stale and changes nothing: %w", task, given, q.Version, q.DraftID, ErrConflict)
}

// noQuestion is the error (ErrConflict) of an answer to task when it has
// no question pending: its run must be continued first; why, when not "",
// says more ("its run stopped part-way, and the answer given was not
// recorded").
func noQuestion(task, why string) error {
	format := "task %s has no question pending: %w"
	args := []any{task, ErrConflict}
	if why != "" {
		format = "task %s has no question pending: %s: %w"
		args = []any{task, why, ErrConflict}
	}
	return errorf(Hint{Before: "run", Do: DoResume, Task: task, After: "to continue it, then answer the question it asks"}, format, args...)
}

// newDecisionID returns a new decision id: "dec_" and a time-ordered
// UUIDv7.
func newDecisionID() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("decision id: %w", err)
	}
	return "dec_" + u.String(), nil
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
	case kind == KindNeedReason && !o.reasonAnswer():
		return errorf(answerHint(task, kind), "%w: task %s is waiting for a reason, not an action", ErrInvalid, task)
	case kind == KindApproval && o.Action == "":
		return errorf(answerHint(task, kind), "%w: task %s is waiting for approval, not a reason", ErrInvalid, task)
	}
	return nil
}

// wrongDraft is the error (ErrInvalid) for draft given, named by an
// answer, when the draft waiting for approval is pending; nil when they
// are the same.
func wrongDraft(task, given, pending string) error {
	if given == pending {
		return nil
	}
	return errorf(Hint{Before: "run", Do: DoShow, Task: task}, "%w: %s %s is not the draft waiting for approval (%s)", ErrInvalid, InputDraft, given, pending)
}

// answerHint is the hint to answer task's question of kind.
func answerHint(task, kind string) Hint {
	return Hint{Before: "run", Do: DoAnswer, Task: task, Ask: kind}
}
