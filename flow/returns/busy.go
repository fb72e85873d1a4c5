package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// busyRefusal is acquire's refusal of a task another live process holds,
// told for the person who asked (ErrConflict, and runs.ErrBusy through
// held, so that a decide row still waits on it): its message names only
// commands that person may run.
type busyRefusal struct {
	msg  string
	held *runs.LeaseHeldError
}

func (e *busyRefusal) Error() string { return e.msg }

// Unwrap returns ErrConflict and the lease refusal.
func (e *busyRefusal) Unwrap() []error { return []error{ErrConflict, e.held} }

// busyFor is err, acquire's refusal of task t for o, told for o.User when
// err is a live holder's (runs.LeaseHeldError); any other err is returned
// as it is. An answer lost a race: the message names the answer that won,
// as the business trail holds it (one recorded after the head the answer
// was checked against, snap; nil when it had none), or, when the winner
// has not recorded one yet, says to wait and see where the task went. A
// task stopped while its former process still holds it keeps acquire's
// refusal, which says so and offers resume for when it lets go. A
// plain resume by an approver is told to wait: `stop` is its owner's
// alone (docs/cli.md "approvers"). The owner's plain resume keeps
// acquire's hint, which offers stop.
func (r *runner) busyFor(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions, err error) error {
	var held *runs.LeaseHeldError
	if !errors.As(err, &held) {
		return err
	}
	task := ShellQuote(t.ID)
	switch {
	case t.Status == StatusInterrupted:
		// Stopped, its former process not gone yet: acquire's refusal
		// says so and when a resume will work; no process took it.
		return err
	case o.answering():
		if d, ok := r.answeredSince(ctx, t.ID, snap); ok {
			return &busyRefusal{msg: raceLost(t.ID, d, held.Lease).Error(), held: held}
		}
		return &busyRefusal{held: held, msg: fmt.Sprintf("%v: %v; that process is running the task now (it took it at the same moment); this answer changes nothing: "+
			"wait for it, then see where the task went with `assistant show %s`, and answer its next question if it asks one", held, ErrConflict, task)}
	case o.User != t.User:
		return &busyRefusal{held: held, msg: fmt.Sprintf("%v: %v; wait for it to finish, and see where it is with `assistant show %s`", held, ErrConflict, task)}
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
// runs now: it names d and says where to look.
func raceLost(task string, d Decision, l runs.Lease) error {
	return fmt.Errorf("task %s was answered (%s by %s at %s) and process %d on %s is running it now: %w; this answer changes nothing: "+
		"see where the task went with `assistant show %s`, and answer its next question if it asks one",
		task, d.Action, d.By, d.At.UTC().Format(time.RFC3339), l.PID, l.Host, ErrConflict, ShellQuote(task))
}

// idTaken is the refusal (ErrConflict, nothing written) of making a task
// of id t.ID for user when t, the task that has that id, is not the one
// asked for: another user's, or user's own with other input (input names
// what differs, "" to name nothing). what names the id for the person:
// "task id", "batch id", "--id". start, batch and decide refuse alike
// with it. Task ids are global: another user's task is said to be taken,
// and nothing about whose; `assistant show` is offered only to a user
// who may see the task (its owner, or an approver its owner granted, for
// a return task: mayDecideRecord), so that the command offered works.
// A grant that cannot be read offers no show.
func idTaken(ctx context.Context, desk *business.Store, t runs.TaskRecord, user, what, input string) error {
	task := ShellQuote(t.ID)
	if t.User == user {
		if input != "" {
			input = " (" + input + ")"
		}
		return fmt.Errorf("task %s already exists with other input%s: %w (choose another %s, or run `assistant show %s`)", t.ID, input, ErrConflict, what, task)
	}
	if _, visible, err := mayDecideRecord(ctx, desk, t, user); err == nil && visible {
		return fmt.Errorf("task id %s is already taken: %w (choose another %s, or see that task with `assistant show %s`)", t.ID, ErrConflict, what, task)
	}
	return fmt.Errorf("task id %s is already taken: %w (choose another %s)", t.ID, ErrConflict, what)
}
