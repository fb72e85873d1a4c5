package returns

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"assistant/flow"
	"assistant/runs"
)

// Timeline messages for steps that did not complete.
const (
	msgInterrupted = runs.MsgInterrupted
	msgProcessGone = runs.MsgProcessGone
)

// driven is one run for drive to drive: what it does, how its head is
// viewed, and how it is ended failed when a guard stops it.
type driven struct {
	// do runs the graph; it returns the run's error.
	do func(ctx context.Context) error
	// view reads the head the run reached as a View.
	view func(ctx context.Context) (*View, error)
	// fail ends the run at its head with the failure f, in a checkpoint of
	// its own (a guard stop: attempts exhausted, recursion limit).
	fail func(ctx context.Context, f Failure) error
}

// drive runs d while holding the task's lease (taken already: acquire,
// CreateLeasedTask or CreateBatch). Before each superstep the run checks
// that it still holds the task running (beforeStep); with a heartbeat
// (r.policy) the lease is renewed and the run's context cancelled when an
// operator stops the task or another process takes it over.
//
// How it ends:
//   - taken over (lease lost): nothing more is written, not even the
//     status; the error matches ErrConflict;
//   - stopped by an operator: the stop's commit closed its half-done
//     step, this run writes no step end after it, and the task stays
//     interrupted (a stop is final for the run it stopped);
//   - ended by SIGINT or SIGTERM part-way: interrupted, as with a stop;
//   - a guard stop (a node failed MaxAttempts times, the recursion limit):
//     failed at once, with a checkpoint that says why, so recover does not
//     try it again;
//   - otherwise the lease is released the policy's way with the status the
//     run reached, read back from the head.
func (r *runner) drive(ctx context.Context, t runs.TaskRecord, d driven) (*View, error) {
	r.holds.Store(t.ID, t.Lease)
	defer r.holds.Delete(t.ID)
	defer r.endedHere.Delete(t.ID)
	rec, recovering := r.recoveries.LoadAndDelete(t.ID)
	_, wasStopped := r.resumedStopped.LoadAndDelete(t.ID)
	cause, runErr := r.runWithHeartbeat(ctx, t.ID, d.do)
	// The ends of the run's last steps, for its last commit to record.
	ended := r.steps.take(t.ID)
	bg := context.WithoutCancel(ctx)
	if errors.Is(cause, errLeaseLost) || errors.Is(runErr, runs.ErrLeaseLost) || errors.Is(runErr, flow.ErrFenced) {
		return nil, errorf(Hint{Before: "run", Do: DoShow, Task: t.ID}, "task %s: lease lost: another process took it over while this one ran it, and nothing more of this run was written: %w", t.ID, ErrConflict)
	}
	if f, ok := guardStop(runErr); ok {
		if err := d.fail(bg, f); err != nil {
			return nil, fmt.Errorf("%w; then ending it failed: %w", runErr, err)
		}
		runErr = nil
	}
	v, err := d.view(bg)
	if err != nil {
		return nil, r.unreadable(bg, t, ended, runErr, err)
	}
	if stopped(cause, runErr, v) {
		// The last checkpoint is the resume point.
		if err := r.recordInterrupted(bg, t.ID, ended); err != nil {
			return nil, err
		}
		v.Status, runErr, ended = StatusInterrupted, nil, nil
	}
	// On a failed run (storage, a conflict, an answer that no longer fits)
	// the status is what the head shows, so resume or recover can continue
	// a run left part-way; but a stopped task whose answer was refused
	// under the lease (another answer was saved meanwhile) stays stopped:
	// nothing of this run moved it, and the stop stands until a resume
	// that runs (docs/design.md "A stop is final").
	if wasStopped && v.Status == StatusRunning && (errors.Is(runErr, ErrInvalid) || errors.Is(runErr, ErrConflict)) {
		v.Status = StatusInterrupted
	}
	if err := r.release(bg, t.ID, v, ended); err != nil && runErr == nil {
		return nil, fmt.Errorf("record progress of %s: %w", t.ID, err)
	}
	if runErr == nil && r.policy.release == releaseDurable && (v.Status == StatusDone || v.Status == StatusCancelled) {
		r.endedAfterStop(bg, t.ID, v)
	}
	if recovering {
		v.Recovery = rec.(*recovery).report(r.svc.now())
	}
	return runResult(t.ID, v, r.submittedThen(bg, t, v, runErr))
}

// submittedThen is runErr, a run's failure, saying that the run's submit
// made its application already when it did: a run whose checkpoint or
// record a busy store kept it from writing after the submit's business
// commit submitted the request all the same, and the next resume or
// recover only records that end (docs/json.md "result"). runErr stays
// what it is otherwise; a failed read changes nothing.
func (r *runner) submittedThen(ctx context.Context, t runs.TaskRecord, v *View, runErr error) error {
	if runErr == nil || v.Result != nil || t.Kind != runs.KindReturn || !errors.Is(Classify(runErr), ErrBusy) {
		return runErr
	}
	upd, err := nodes{Deps{Desk: r.desk}}.submitted(ctx, State{Task: t.ID, User: t.User})
	if err != nil || upd.Result == nil {
		return runErr
	}
	return fmt.Errorf("task %s: its application %s was made (the request is submitted), but the end of its run is not recorded yet: %w", t.ID, upd.Result.ApplicationID, runErr)
}

// endedAfterStop sets the record of task, whose run just ended as v (done
// or cancelled: its last step committed) and was released, to v when a
// stop written while that step ran left it interrupted: the stop came too
// late and stopped nothing (docs/recovery.md "Operator stop"), so the
// record follows the run, as a later stop's repair (tooLate) would set it.
// Best effort: a failure leaves the record interrupted for that repair.
func (r *runner) endedAfterStop(ctx context.Context, task string, v *View) {
	t, err := r.runs.Task(ctx, task)
	if err != nil || t.Status != StatusInterrupted || r.svc.holderAlive(t.Lease) {
		return
	}
	_ = r.repair(ctx, t, v)
}

// stopped reports whether a run that ended with cause (why its context
// ended, if it did) and runErr, at the head viewed as v, was stopped before
// its end: by an operator (also when it reached a question meanwhile), or
// by SIGINT/SIGTERM before a question or its end.
func stopped(cause, runErr error, v *View) bool {
	operator := errors.Is(cause, errStopped) || errors.Is(runErr, runs.ErrStopped)
	return (operator && !v.done()) || (cause != nil && v.Status == StatusRunning)
}

// guardStop returns the failure a run ends with when err is a guard stop
// that no retry can get past.
func guardStop(err error) (Failure, bool) {
	var rl *flow.RecursionLimitError
	switch {
	case errors.Is(err, runs.ErrAttemptsExhausted):
		return Failure{Code: CodeAttemptsExhausted, Message: err.Error()}, true
	case errors.As(err, &rl):
		return Failure{Code: CodeRecursionLimit, Message: err.Error()}, true
	}
	return Failure{}, false
}

// unreadable ends a run whose head cannot be read: it lets go of the lease
// and leaves the task running, so recover can try again, unless the head's
// state no longer decodes with this build (a guard stop): then the task
// ends failed, and recover leaves it (history shows the stored state). The
// ends of the run's last steps are recorded with it.
func (r *runner) unreadable(ctx context.Context, t runs.TaskRecord, ended []runs.StepEnd, runErr, err error) error {
	status, stage := StatusRunning, t.Stage
	var de *flow.StateDecodeError
	if errors.As(err, &de) {
		status, stage = StatusFailed, StageFailed
	}
	_ = r.runs.Release(ctx, t.ID, runs.Release{Owner: r.svc.me.owner, Status: status, Stage: stage, Ended: ended, Durable: true})
	if runErr == nil {
		return err
	}
	return fmt.Errorf("%w; then reading its state: %w", runErr, err)
}

// runWithHeartbeat runs fn, under a heartbeat when the policy has one, and
// returns why the context fn ran on ended, if it did (errStopped,
// errLeaseLost, or the caller's context's error: SIGINT, SIGTERM), and
// fn's error.
func (r *runner) runWithHeartbeat(ctx context.Context, task string, fn func(context.Context) error) (cause, err error) {
	if !r.policy.heartbeat {
		err := fn(ctx)
		return ctx.Err(), err
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.heartbeat(rctx, task, done, cancel)
	}()
	err = fn(rctx)
	close(done)
	wg.Wait()
	if rctx.Err() != nil {
		cause = context.Cause(rctx)
	}
	return cause, err
}

// recordInterrupted closes the timeline of a run that ends interrupted:
// the ends of its steps that ended (ended), then its running steps failed
// "run interrupted". Both are the holder's writes (runs.EndStepsHeld,
// runs.FailRunningStepsHeld): a run an operator stopped writes none of
// them, since the stop's own commit ended its running steps and a step
// that ended is never rewritten; a run ended by a signal still holds its
// task running and records them. Nothing is recorded for a node that was
// due and never ran: the timeline holds only steps that ran, so the
// attempts it counts are real ones.
func (r *runner) recordInterrupted(ctx context.Context, task string, ended []runs.StepEnd) error {
	owner := r.svc.me.owner
	if err := r.runs.EndStepsHeld(ctx, task, owner, ended); err != nil {
		return err
	}
	_, err := r.runs.FailRunningStepsHeld(ctx, task, owner, msgInterrupted, r.svc.now().UTC())
	return err
}

// release records the run's status and stage, and the ends of its last
// steps (ended), and ends its hold on the task the policy's way, in one
// commit.
//
// The run's business commits (lease, timeline, task record) were made at
// synchronous=NORMAL; a command's durable release is its one durable commit
// to business.sqlite, which makes them all durable before the caller
// reports. The engine synced the checkpoints when the run ended, before
// this, so the task record is never durable ahead of its head. A batch's row
// reports to nobody: its chunk commits durably once, and the batch when it
// ends.
func (r *runner) release(ctx context.Context, task string, v *View, ended []runs.StepEnd) error {
	code, msg := failureOf(v)
	rel := runs.Release{Owner: r.svc.me.owner, Status: v.Status, Stage: v.Stage, ErrorCode: code, Error: msg, Ended: ended}
	switch r.policy.release {
	case keepLease:
		if len(ended) == 0 { // recorded by the chunk
			r.progress = append(r.progress, runs.Progress{Task: task, Status: v.Status, Stage: v.Stage, ErrorCode: code, Error: msg, At: r.svc.now()})
			r.held = append(r.held, task)
			return nil
		}
		rel.Keep = true
	case releaseDurable:
		rel.Durable, rel.Last = true, r.svc.oneRun
	}
	err := r.runs.Release(ctx, task, rel)
	switch {
	case err == nil && rel.Keep:
		r.held = append(r.held, task)
	case err != nil && rel.Durable:
		_ = r.runs.Sync(ctx) // the lease was lost: still sync what this run wrote
	}
	return err
}

// failureOf is the code and message the task record keeps of view v: its
// failure's when it failed, "" otherwise (runs.Release.ErrorCode).
func failureOf(v *View) (code, msg string) {
	if v.Status != StatusFailed || v.Error == nil {
		return "", ""
	}
	return v.Error.Code, v.Error.Message
}

// runResult is what drive returns for a run that ended with runErr: the
// view, or the error in the terms of this package.
func runResult(task string, v *View, runErr error) (*View, error) {
	switch {
	case runErr == nil:
		return v, nil
	case errors.Is(runErr, ErrInvalid), errors.Is(runErr, ErrConflict):
		return nil, runErr
	case errors.Is(runErr, flow.ErrConflict), errors.Is(runErr, flow.ErrUnknownInterrupt), errors.Is(runErr, flow.ErrNoPendingInterrupt):
		return nil, fmt.Errorf("task %s changed under the request (another process advanced it): %w", task, ErrConflict)
	}
	return nil, fmt.Errorf("run task %s: %w", task, runErr)
}

// driveReturn drives a return task's run and views its head. fn runs the
// graph g (the run's fenced graph, graphFor) and returns the head the run
// ended at (nil when it does not know it); a run that ended without error
// is viewed from it, as the lease kept anyone else from moving the head
// since, and any other is viewed from the head read back.
func (r *runner) driveReturn(ctx context.Context, t runs.TaskRecord, fn func(ctx context.Context, g *flow.Runnable[State]) (*flow.Snapshot[State], error)) (*View, error) {
	g := r.graphFor(t)
	var head *flow.Snapshot[State]
	return r.drive(ctx, t, driven{
		do: func(ctx context.Context) error {
			snap, err := fn(ctx, g)
			if err == nil {
				head = snap
			}
			return err
		},
		view: func(ctx context.Context) (*View, error) {
			if head != nil {
				return view(t, head), nil
			}
			// Stopped or failed before its first checkpoint, the run has
			// no head: the record is its only trace, and resume rebuilds
			// the run from it.
			snap, err := headOrNil(r.graph.State(ctx, t.ID))
			if err != nil {
				return nil, err
			}
			return view(t, snap), nil
		},
		fail: func(ctx context.Context, f Failure) error {
			upd, err := r.endOfGiveUp(ctx, g, t.ID, f)
			if err != nil {
				return err
			}
			snap, err := g.UpdateState(ctx, t.ID, upd, NodeGiveUp)
			if err == nil {
				head = snap
			}
			return err
		},
	})
}

// endOfGiveUp is the update that ends task's run at a guard stop with the
// failure f: failed, unless the business file holds the task's
// application, which ends it submitted with it, reused, whatever failed
// since (docs/recovery.md "When the two files disagree": nothing marks such a
// task failed).
// That is a submit whose business commit landed while its checkpoint did
// not, attempt after attempt (killed at submit:after-business-commit until
// the attempts ran out). Errors: storage errors.
func (r *runner) endOfGiveUp(ctx context.Context, g *flow.Runnable[State], task string, f Failure) (State, error) {
	failed := State{Stage: StageFailed, Error: &f}
	head, err := headOrNil(g.State(ctx, task))
	if err != nil || head == nil {
		return failed, err
	}
	done, err := nodes{Deps{Desk: r.desk}}.submitted(ctx, head.Values)
	if err != nil || done.Stage == "" {
		return failed, err
	}
	done.Decision = ActionApprove
	return done, nil
}

// headOrNil passes a thread's head snapshot on, with a thread that has no
// checkpoint yet (created, then killed before its first one) as nil.
func headOrNil[S any](snap *flow.Snapshot[S], err error) (*flow.Snapshot[S], error) {
	if errors.Is(err, flow.ErrThreadNotFound) {
		return nil, nil
	}
	return snap, err
}
