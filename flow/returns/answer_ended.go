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
	"assistant/runs"
)

// endedAnswer checks o against a task whose run has ended (snap.Done()),
// by the rule of a waiting task: the draft and the version an answer
// names must name the task's last draft (boundToEnded: a superseded one is ErrConflict, stale;
// one the task never had ErrInvalid). Then a plain resume, or the answer
// the run recorded (the same decision, with the same reason for an edit
// and the same comment for a revise: a retry of a command whose reply was
// lost), shows the outcome; any other answer is ErrConflict with a line
// saying what the task ended as. Approve on a submitted task stands too:
// the application it asks for exists.
func (r *runner) endedAnswer(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) error {
	st := snap.Values
	v := view(t, snap)
	if err := r.boundToEnded(ctx, t.ID, st.Draft, endedAs(v), o); err != nil {
		return err
	}
	if !o.answering() {
		return nil
	}
	if err := r.endedInterrupt(ctx, t.ID, snap, o); err != nil {
		return err
	}
	action, _ := savedAnswers(snap)
	var same bool
	switch {
	case o.Action != "":
		same = o.Action == action && sameWords(o, lastOf(st.Decisions, action))
		same = same || (o.Action == ActionApprove && v.Status == StatusDone && v.Result != nil)
	default:
		same = strings.TrimSpace(o.Reason) != "" && strings.TrimSpace(o.Reason) == st.Reason
	}
	if same {
		return nil
	}
	return errorf(Hint{}, "task %s ended as %s; the answer %s changes nothing: %w", t.ID, endedAs(v), o.given(), ErrConflict)
}

// approvedAnswer checks o, an answer to task t whose head has not ended
// while the business file holds its application (snap: the head as the
// business file has it, ended submitted), against the approve of that
// draft the decision trail holds: the answer that made the application,
// whose checkpoints were lost (a crash between the business and the
// checkpoint commit of a group or a decide chunk, an older
// checkpoints.sqlite put back). That approve ended the task, so o is
// judged as on a task that ended with the files in step (endedAnswer): the
// approve again reports the application, any other answer is ErrConflict
// saying the task ended done. nil when the trail holds no approve of the
// draft (the application alone ends the task then, whatever the answer)
// or o answers nothing. Reads the trail once. Errors: those, and storage
// errors.
func (r *runner) approvedAnswer(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) error {
	if !o.answering() || snap.Values.Draft == nil {
		return nil
	}
	ds, err := r.desk.Decisions(ctx, t.ID)
	if err != nil {
		return fmt.Errorf("resume %s: %w", t.ID, err)
	}
	if !slices.ContainsFunc(ds, func(d business.Decision) bool {
		return d.Action == ActionApprove && d.DraftID == snap.Values.Draft.ID
	}) {
		return nil
	}
	return r.endedAnswer(ctx, t, snap, o)
}

// endedInterrupt checks the interrupt o names, an answer to a task whose
// run has ended (any end: done, cancelled, failed), against the questions
// its run asked and the answers saved to them, from every checkpoint of
// the thread (or the head snap's, when the history holds none): a
// question someone else answered, or that o.User answered otherwise, is
// ErrConflict saying who answered it and how; an id the task never asked
// is ErrInvalid. nil when o names none, for o.User's own answer given
// again (a retry: the caller's rule of an ended task applies), and for a
// question the run asked and nobody answered. Nothing is written.
// Errors: those, and storage errors.
func (r *runner) endedInterrupt(ctx context.Context, task string, snap *flow.Snapshot[State], o ResumeOptions) error {
	if o.InterruptID == "" {
		return nil
	}
	asked, answers, err := r.askedAnswered(ctx, task, snap)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	a, answered := answers[o.InterruptID]
	if !answered && !asked[o.InterruptID] {
		return errorf(Hint{Before: "run", Do: DoHistory, Task: task, After: "to see its questions"}, "%w: task %s never asked interrupt %q", ErrInvalid, task, o.InterruptID)
	}
	if !answered || a.Action == "" {
		return nil // unanswered, or a reason question: the caller's rule
	}
	if a.By == o.User && a.Action == o.Action && sameWords(o, Decision{Reason: a.Reason, Comment: a.Comment}) {
		return nil
	}
	by, when := a.By, ""
	if by == "" {
		by = "someone"
	}
	if !a.At.IsZero() {
		when = " at " + a.At.UTC().Format(time.RFC3339)
	}
	return errorf(Hint{Before: "run", Do: DoShow, Task: task, After: "to see how the task ended"},
		"task %s: interrupt %s was answered already (%s by %s%s) and the task has ended; the answer %s is stale and changes nothing: %w", task, o.InterruptID, a.Action, by, when, o.given(), ErrConflict)
}

// askedAnswered returns the ids of the questions the run of task asked
// and the approval answers saved to them (by interrupt id), read from the
// pending writes of every checkpoint of its thread; a thread whose
// checkpoints are gone (pruned, or lost) gives the questions snap still
// shows. Errors: storage errors.
func (r *runner) askedAnswered(ctx context.Context, task string, snap *flow.Snapshot[State]) (map[string]bool, map[string]ApprovalAnswer, error) {
	asked, answers := map[string]bool{}, map[string]ApprovalAnswer{}
	if snap != nil {
		for _, in := range snap.Interrupts {
			asked[in.ID] = true
		}
	}
	err := r.eachCheckpointWrites(ctx, task, func(writes []flow.Write) bool {
		for _, w := range writes {
			switch w.Kind {
			case flow.WriteInterrupt, flow.WriteSubgraphInterrupt, flow.WriteResume:
				asked[flow.InterruptID(w.TaskID, w.Idx)] = true
			}
			if id, a, ok := resumeAnswer(w); ok {
				answers[id] = a
			}
		}
		return false
	})
	if err != nil {
		return nil, nil, err
	}
	return asked, answers, nil
}

// boundToEnded checks the draft and the version o names against last, the
// draft of a task whose run has ended as ended (nil: it ended with none),
// as boundTo does on a waiting task: the last draft (or none named)
// passes; an older version of the task's draft is ErrConflict
// (stale, saying how the task ended: no version can be answered any
// more); any other draft or version, which the task never had, is
// ErrInvalid.
func (r *runner) boundToEnded(ctx context.Context, task string, last *DraftRef, ended string, o ResumeOptions) error {
	if o.DraftID == "" && o.Version == 0 {
		return nil
	}
	given := phrasef("%s %d", InputVersion, o.Version)
	if o.DraftID != "" {
		given = phrasef("%s %s", InputDraft, o.DraftID)
	}
	show := Hint{Before: "run", Do: DoShow, Task: task}
	if last == nil {
		return errorf(show, "%w: %s is not a draft of task %s (it ended with none)", ErrInvalid, given, task)
	}
	q := ApprovalQuestion{DraftID: last.ID, Version: VersionOf(last)}
	err := r.boundTo(ctx, task, q, o)
	switch {
	case errors.Is(err, ErrInvalid):
		return errorf(show, "%w: %s is not the draft of task %s, nor one it had: it ended with version %d (%s)", ErrInvalid, given, task, q.Version, q.DraftID)
	case errors.Is(err, ErrConflict):
		return errorf(Hint{}, "task %s: %s, superseded by version %d (%s): the answer is stale and changes nothing, and the task ended as %s, so no version can be answered any more: %w", task, given, q.Version, q.DraftID, ended, ErrConflict)
	}
	return err
}

// lastOf returns the latest decision of the trail with action; the
// zero Decision when there is none.
func lastOf(trail []Decision, action string) Decision {
	for i := len(trail) - 1; i >= 0; i-- {
		if trail[i].Action == action {
			return trail[i]
		}
	}
	return Decision{}
}

// sameWords reports whether o carries the words decision d recorded: the
// reason of an edit, the comment of a revise (compared trimmed, as they
// are stored); other actions carry none.
func sameWords(o ResumeOptions, d Decision) bool {
	switch o.Action {
	case ActionEdit:
		return strings.TrimSpace(o.Reason) == d.Reason
	case ActionRevise:
		return strings.TrimSpace(o.Comment) == d.Comment
	}
	return true
}

// endedAs names how a finished run ended: its status, with the error code
// of a failed one ("failed (draft_expired)").
func endedAs(v *View) string {
	if v.Status == StatusFailed && v.Error != nil && v.Error.Code != "" {
		return fmt.Sprintf("%s (%s)", v.Status, v.Error.Code)
	}
	return v.Status
}
