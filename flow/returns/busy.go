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

// busyFor is err, acquire's refusal of task t for o, told for o.User when
// err is a live holder's (runs.LeaseHeldError); any other err is returned
// as it is. An answer lost a race: the message names the answer that won,
// as the business trail holds it (one recorded after the head the answer
// was checked against, snap; nil when it had none), or, when the winner
// has not recorded one yet, says to wait and see where the task went. A
// task stopped while its former process still holds it keeps acquire's
// refusal, which says so and offers resume for when it lets go. A
// plain resume by an approver is told to wait: a stop is its owner's
// alone (docs/approvals.md "Approvers"). The owner's plain resume keeps
// acquire's hint, which offers stop. Each refusal matches ErrConflict,
// and runs.ErrBusy through the lease refusal, so that a decide row still
// waits on it; its hint names only what that person may do.
func (r *runner) busyFor(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions, err error) error {
	var held *runs.LeaseHeldError
	if !errors.As(err, &held) {
		return err
	}
	switch {
	case t.Status == StatusInterrupted:
		// Stopped, its former process not gone yet: acquire's refusal
		// says so and when a resume will work; no process took it.
		return err
	case o.answering():
		if d, ok := r.answeredSince(ctx, t.ID, snap); ok {
			return raceLost(t.ID, d, held.Lease, held)
		}
		return errorf(Hint{Before: "wait for it, then see where the task went with", Do: DoShow, Task: t.ID, After: ", and answer its next question if it asks one"},
			"%w: %w; that process is running the task now (it took it at the same moment); this answer changes nothing", held, ErrConflict)
	case o.User != t.User:
		return errorf(Hint{Before: "wait for it to finish, and see where it is with", Do: DoShow, Task: t.ID}, "%w: %w", held, ErrConflict)
	}
	return err
}

// answeredSince returns the last decision of task's business trail that
// snap's trail does not hold (all of them when snap is nil): an answer
// another process took after snap was read. ok is false when there is
// none, or the trail cannot be read.
func (r *runner) answeredSince(ctx context.Context, task string, snap *flow.Snapshot[State]) (Decision, bool) {
	ds, err := r.desk.Decisions(ctx, task)
	if err != nil {
		return Decision{}, false
	}
	if len(ds) == 0 {
		return Decision{}, false
	}
	d := ds[len(ds)-1]
	if snap != nil && slices.ContainsFunc(snap.Values.Decisions, func(s Decision) bool { return s.ID == d.ID }) {
		return Decision{}, false
	}
	return Decision{ID: d.ID, By: d.By, Action: d.Action, At: d.At}, true
}

// raceLost is the refusal (ErrConflict, nothing written) of an answer to
// task that lost a race to decision d, which the process holding lease l
// runs now: it names d and says where to look. held, when not nil, is the
// lease refusal it also wraps (runs.ErrBusy), saying nothing of it.
func raceLost(task string, d Decision, l runs.Lease, held error) error {
	format := "task %s was answered (%s by %s at %s) and process %d on %s is running it now: %w; this answer changes nothing"
	args := []any{task, d.Action, d.By, d.At.UTC().Format(time.RFC3339), l.PID, l.Host, ErrConflict}
	if held != nil {
		format += "%.0w" // wrapped, printed as nothing
		args = append(args, held)
	}
	return errorf(Hint{Before: "see where the task went with", Do: DoShow, Task: task, After: ", and answer its next question if it asks one"}, format, args...)
}

// idTaken is the refusal (ErrConflict, nothing written) of making a task
// of id t.ID for user when t, the task that has that id, is not the one
// asked for: another user's, or user's own with other input (input names
// what differs, words or Inputs; none to name nothing). what names the id
// for the person: words ("task id", "batch id"), or the Input that gives
// it (decide's InputID). start, batch and decide refuse alike with it.
// Task ids are global: another user's task is said to be taken, and
// nothing about whose; show is offered only to a user who may see the
// task (its owner, or an approver its owner granted, for a return task:
// mayDecideRecord), so that what is offered works. A grant that cannot be
// read offers no show.
func idTaken(ctx context.Context, desk *business.Store, t runs.TaskRecord, user string, what any, input ...any) error {
	hint := chooseAnother(what)
	if t.User == user {
		hint.Then = &Hint{Before: ", or run", Do: DoShow, Task: t.ID}
		format := "task %s already exists with other input: %w"
		if len(input) > 0 {
			format = "task %s already exists with other input (" + listFormat(len(input)) + "): %w"
		}
		return errorf(hint, format, slices.Concat([]any{t.ID}, input, []any{ErrConflict})...)
	}
	if _, visible, err := mayDecideRecord(ctx, desk, t, user); err == nil && visible {
		hint.Then = &Hint{Before: ", or see that task with", Do: DoShow, Task: t.ID}
	}
	return errorf(hint, "task id %s is already taken: %w", t.ID, ErrConflict)
}

// chooseAnother is the hint to choose another id (idTaken's what): "choose
// another task id", or another value of the Input that gives it.
func chooseAnother(what any) Hint {
	if in, ok := what.(Input); ok {
		return Hint{Before: "choose another", With: []InputValue{{Input: in}}}
	}
	return Hint{Before: fmt.Sprintf("choose another %v", what)}
}

// listFormat is the format of a list of n items in words: "%v", "%v or
// %v", "%v, %v or %v".
func listFormat(n int) string {
	if n <= 1 {
		return "%v"
	}
	return strings.Repeat("%v, ", n-2) + "%v or %v"
}
