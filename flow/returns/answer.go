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
		return fmt.Errorf("task %s has no question pending; run `assistant resume %s` to continue it, then answer the question it asks: %w", t.ID, ShellQuote(t.ID), ErrConflict)
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
		var q ApprovalQuestion
		if err := json.Unmarshal(approvalView(in.Value, st), &q); err != nil {
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

// boundTo checks --draft and --version against q, the approval question
// asked: an older version of the task's draft is ErrConflict (stale: a
// newer version replaced it), any other mismatch ErrInvalid.
func (r *runner) boundTo(ctx context.Context, task string, q ApprovalQuestion, o ResumeOptions) error {
	if o.DraftID != "" && o.DraftID != q.DraftID {
		d, err := r.desk.Draft(ctx, o.DraftID)
		if err == nil && d.TaskID == task && d.Version < q.Version {
			return stale(task, fmt.Sprintf("--draft %s is version %d", o.DraftID, d.Version), q)
		}
		return wrongDraft(task, o.DraftID, q.DraftID)
	}
	switch {
	case o.Version == 0 || o.Version == q.Version:
		return nil
	case o.Version < q.Version:
		return stale(task, fmt.Sprintf("--version %d", o.Version), q)
	}
	return fmt.Errorf("%w: --version %d: the draft of task %s waiting for approval is version %d; run `assistant show %s`", ErrInvalid, o.Version, task, q.Version, ShellQuote(task))
}

// stale is the error (ErrConflict) of an answer bound to a superseded
// draft version.
func stale(task, given string, q ApprovalQuestion) error {
	return fmt.Errorf("task %s: %s, superseded by version %d (%s): the answer is stale and changes nothing: %w; run `assistant show %s` and answer version %d", task, given, q.Version, q.DraftID, ErrConflict, ShellQuote(task), q.Version)
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
	return fmt.Errorf("%w: --draft %s is not the draft waiting for approval (%s); run `assistant show %s`", ErrInvalid, given, pending, ShellQuote(task))
}

func hintFor(task, kind string) string {
	if kind == KindNeedReason {
		return fmt.Sprintf("run `assistant resume %s --reason \"...\"`", ShellQuote(task))
	}
	return fmt.Sprintf("run `assistant resume %s --action approve` (or cancel, edit --reason R, revise --comment C)", ShellQuote(task))
}
