package returns

import (
	"context"
	"errors"
	"fmt"
	"time"

	"assistant/business"
	"assistant/runs"
)

// Stop asks the process driving a running task to stop (docs/recovery.md
// "Operator stop"): the task goes running → interrupted at once, and Stop
// waits up to wait for the driving process to notice and let go of the
// task. Errors: ErrNotFound, ErrConflict when the task is not running (a
// task that finished first keeps its finished status), or when its run
// finished before it saw the stop (tooLate; the view is returned too), or
// when its trail holds a cancel (cancelledFirst);
// ErrInvalid for a negative wait, before anything is written.
func (s *Service) Stop(ctx context.Context, task, user string, wait time.Duration) (*View, error) {
	if wait < 0 {
		return nil, errorf(Hint{}, "%w: %s must not be negative, not %s", ErrInvalid, InputWait, wait)
	}
	t, err := s.task(ctx, task, user)
	if err != nil {
		return nil, err
	}
	// The stop and the check that the task made no application are one
	// transaction, and the submit's transaction checks that the task is
	// still running under its run's lease (Deps.Held): both write under
	// one lock, so either the stop comes first and no application is ever
	// made by the run it stopped, or the application does and the stop is
	// too late and writes nothing (docs/recovery.md "Operator stop").
	// A run that made its application and whose process died before it
	// let go has nobody left to end it: the stop is written all the same,
	// and tooLate, below, sets its record to what the run ended as.
	// A cancel is judged the same way: once the trail holds it, the live
	// run carrying it out ends the task cancelled whatever a stop says, so
	// a stop after it is too late.
	// The stop ends the steps the run left running (they end "run
	// interrupted" at the stop's time), so the timeline shows where it cut
	// the run short even if the process dies without letting go.
	var (
		sub *business.SubmittedError
		can *business.CancelledError
	)
	err = s.runs.RequestStop(ctx, t.ID, s.desk.NotSubmitted(t.ID), s.desk.NotCancelled(t.ID))
	if errors.As(err, &sub) {
		if l, _, lerr := s.runs.TaskLease(ctx, t.ID); lerr != nil || s.holderAlive(l) {
			return nil, submittedFirst(t.ID, sub.Application.ID)
		}
		err = s.runs.RequestStopOfEnded(ctx, t.ID)
	}
	if errors.As(err, &can) {
		// A cancel whose run died before it carried it out is carried out
		// by nobody but a later resume: the stop is written all the same
		// (the cancel stays in the trail), unless a process took the task
		// over since this look at its holder.
		l, _, lerr := s.runs.TaskLease(ctx, t.ID)
		if lerr != nil || s.holderAlive(l) {
			return nil, cancelledFirst(t.ID, can.Decision)
		}
		err = s.runs.RequestStop(ctx, t.ID, s.desk.NotSubmitted(t.ID), s.runs.StillLeasedTo(t.ID, l.Owner, l.Epoch))
		if errors.As(err, &sub) {
			return nil, submittedFirst(t.ID, sub.Application.ID)
		}
		if errors.Is(err, runs.ErrConflict) {
			if now, terr := s.runs.Task(ctx, t.ID); terr == nil && now.Status == StatusRunning {
				return nil, cancelledFirst(t.ID, can.Decision)
			}
		}
	}
	if errors.Is(err, runs.ErrConflict) {
		return nil, s.notRunning(ctx, t)
	} else if err != nil {
		return nil, fmt.Errorf("stop %s: %w", t.ID, err)
	}
	// RequestStop's commit is durable: no Sync follows it, which another
	// writer holding the lock could make fail after the stop was written.
	if err := s.awaitRelease(ctx, t.ID, wait); err != nil {
		return nil, err
	}
	v, err := s.recordedView(ctx, t.ID, user)
	if err != nil {
		return nil, err
	}
	return withActions(v, user), s.tooLate(ctx, t.ID, v)
}

// submittedFirst is the refusal of a stop of task whose run, still
// driven by a live process, made application before the stop could be
// written: the stop wrote nothing, and the run ends done.
func submittedFirst(task, application string) error {
	return errorf(Hint{Before: "see it with", Do: DoShow, Task: task},
		"stop %s: too late: submitted: application %s was made before the stop, so the stop changed nothing and the task ends done: %w", task, application, ErrConflict)
}

// cancelledFirst is the refusal of a stop of task whose trail held d, a
// cancel, before the stop could be written, while a live process carries
// it out: the stop wrote nothing, and that run ends the task cancelled.
func cancelledFirst(task string, d business.Decision) error {
	return errorf(Hint{Before: "see it with", Do: DoShow, Task: task},
		"stop %s: too late: cancelled: %s cancelled the request at %s, before the stop, so the stop changed nothing and the run carrying the cancel out ends the task cancelled: %w",
		task, d.By, d.At.UTC().Format(time.RFC3339), ErrConflict)
}

// tooLate checks a stop of task once its holder let go, v being the task
// as show reads it then: when the run had already finished (its last step,
// a submit say, ran before it saw the stop, and its checkpoint stands),
// the stop stopped nothing. The record, which the stop set interrupted, is
// set to what the run ended as (taking the lease, as a resume's repair
// does), so that list, show and the record agree, and the stop is refused
// as too late: ErrConflict, as for a task that finished before the stop
// was written. nil when the stop took effect, or the holder has not let go
// yet (the run may still stop).
func (s *Service) tooLate(ctx context.Context, task string, v *View) error {
	if !v.done() {
		return nil
	}
	t, err := s.runs.Task(ctx, task)
	if err != nil {
		return fmt.Errorf("stop %s: %w", task, err)
	}
	if t.Status == StatusInterrupted && !s.holderAlive(t.Lease) {
		if err := s.cmd.repair(ctx, t, v); err != nil {
			return fmt.Errorf("stop %s: the run had ended %s before it saw the stop; setting its record right: %w", task, v.Status, err)
		}
	}
	what := v.Status
	if v.Result != nil && v.Result.ApplicationID != "" {
		what += ", application " + v.Result.ApplicationID + " submitted"
	} else if v.Error != nil && v.Error.Code != "" {
		what += " (" + v.Error.Code + ")"
	}
	return errorf(Hint{Before: "see it with", Do: DoShow, Task: task},
		"stop %s: too late: its run ended (%s) before it saw the stop, so the stop changed nothing and the task keeps what it ended as: %w", task, what, ErrConflict)
}

// notRunning is the conflict of a stop of task t that is not running: what
// the task does instead, read again (it may have changed since t was
// read), and what to do.
func (s *Service) notRunning(ctx context.Context, t runs.TaskRecord) error {
	if now, err := s.runs.Task(ctx, t.ID); err == nil {
		t = now
	}
	var (
		what string
		hint Hint
	)
	switch t.Status {
	case StatusWaiting:
		what = "it is not running: it waits for a person's answer, and nothing runs until one comes"
		hint = Hint{Before: "see the question with", Do: DoShow, Task: t.ID}
		if d, verify := s.disagreement(ctx, t); d != "" {
			what, hint = "it is not running, and "+d, verify
		}
	case StatusInterrupted:
		if !s.holderAlive(t.Lease) {
			// A stop that came too late, whose holder let go after the
			// stop's wait: its run ended, and this stop says so too
			// (tooLate sets the record right).
			if v, err := s.recordedView(ctx, t.ID, t.User); err == nil && v.done() {
				return s.tooLate(ctx, t.ID, v)
			}
		}
		what, hint = "it is already stopped", Hint{Before: "continue it with", Do: DoResume, Task: t.ID}
		if s.holderAlive(t.Lease) {
			// The process that ran it has not let go yet: a resume now
			// is refused too.
			what, hint.Before = "it is already stopped, but "+s.stillHolds(t.Lease), "once it has, continue it with"
		}
	case StatusDone, StatusCancelled, StatusFailed:
		what = fmt.Sprintf("it already ended (%s); there is nothing to stop", t.Status)
	default:
		what = fmt.Sprintf("it is %s, not running; only a running task can be stopped", t.Status)
	}
	return errorf(hint, "stop %s: %s: %w", t.ID, what, ErrConflict)
}

// awaitRelease polls the task's lease until no live process holds it, for
// at most wait. Errors: ctx's.
func (s *Service) awaitRelease(ctx context.Context, task string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		l, _, err := s.runs.TaskLease(ctx, task)
		if err != nil || !s.holderAlive(l) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
