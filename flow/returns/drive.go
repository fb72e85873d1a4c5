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
	msgInterrupted = "run interrupted; step not completed"
	msgProcessGone = "process gone; step not completed"
)

// drive runs fn while holding the task's lease (taken already: acquire,
// CreateLeasedTask or CreateBatch). With a heartbeat (r.policy) the lease is
// renewed and fn's context cancelled when an operator stops the task or the
// lease is lost. Whatever happens, the lease is released the policy's way
// with the status the run reached, read back from the head by view; a
// stopped run ends interrupted, with its running step failed.
func (r *runner) drive(ctx context.Context, t runs.TaskRecord, fn func(context.Context) error, view func(context.Context) (*View, error)) (*View, error) {
	stopped, runErr := r.runWithHeartbeat(ctx, t.ID, fn)
	bg := context.WithoutCancel(ctx)
	v, err := view(bg)
	if err != nil {
		// The head cannot be read: let go of the lease, leave it running.
		_ = r.runs.ReleaseLeaseSync(bg, t.ID, r.svc.me.owner, StatusRunning, t.Stage)
		if runErr == nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w; then reading its state: %w", runErr, err)
	}
	if stopped && v.Status == StatusRunning {
		// Stopped (operator, SIGINT/SIGTERM) before the run reached a
		// question or its end: the last checkpoint is the resume point. A
		// run that finished although a stop came keeps its finished status.
		if err := r.recordInterrupted(bg, t.ID, v); err != nil {
			return nil, err
		}
		v.Status, runErr = StatusInterrupted, nil
	}
	// On a failed run (storage, a conflict, an answer that no longer fits)
	// the status is what the head shows, so resume or recover can continue
	// a run left part-way.
	if err := r.release(bg, t.ID, v); err != nil && runErr == nil {
		return nil, fmt.Errorf("record progress of %s: %w", t.ID, err)
	}
	return runResult(t.ID, v, runErr)
}

// runWithHeartbeat runs fn, under a heartbeat when the policy has one, and
// returns whether the context fn ran on ended (an operator stop, a lost
// lease, SIGINT or SIGTERM) and fn's error.
func (r *runner) runWithHeartbeat(ctx context.Context, task string, fn func(context.Context) error) (stopped bool, err error) {
	if !r.policy.heartbeat {
		err := fn(ctx)
		return ctx.Err() != nil, err
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
	return rctx.Err() != nil, err
}

// recordInterrupted closes the timeline of a stopped run: its running step
// failed, or, stopped between two supersteps, the step that was due
// recorded as not completed, so the timeline shows where the run stopped.
func (r *runner) recordInterrupted(ctx context.Context, task string, v *View) error {
	now := r.svc.now().UTC()
	n, err := r.runs.FailRunningSteps(ctx, task, msgInterrupted, now)
	if err != nil || n > 0 || len(v.Next) == 0 || r.endedInterrupted(ctx, task) {
		return err
	}
	return r.runs.InterruptedStep(ctx, task, v.Next[0], msgInterrupted, now)
}

// release records the run's status and stage and ends its hold on the task
// the policy's way.
//
// The run's business commits (lease, timeline, task record) were made at
// synchronous=NORMAL; a command's durable release is its one durable commit
// to business.sqlite, which makes them all durable before the caller
// reports. The engine synced the checkpoints when the run ended, before
// this, so the task record is never durable ahead of its head. A batch's row
// reports to nobody: its chunk commits durably once, and the batch when it
// ends.
func (r *runner) release(ctx context.Context, task string, v *View) error {
	owner := r.svc.me.owner
	var err error
	switch r.policy.release {
	case keepLease:
		if err = r.runs.RecordProgress(ctx, task, owner, v.Status, v.Stage); err == nil {
			r.held = append(r.held, task)
		}
	case releaseLazy:
		err = r.runs.ReleaseLease(ctx, task, owner, v.Status, v.Stage)
	default:
		if err = r.runs.ReleaseLeaseSync(ctx, task, owner, v.Status, v.Stage); err != nil {
			_ = r.runs.Sync(ctx) // the lease was lost: still sync what this run wrote
		}
	}
	return err
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

// endedInterrupted reports whether the task's last step already ended
// failed by the stop (the node saw its context cancelled), so that no
// second entry is recorded for the same stop.
func (r *runner) endedInterrupted(ctx context.Context, task string) bool {
	st, err := r.runs.LastStep(ctx, task)
	return err == nil && st.Status == runs.StepFailed && st.Error == msgInterrupted
}

// driveReturn drives a return task's run and views its head. fn returns
// the head the run ended at (nil when it does not know it); a run that ended
// without error is viewed from it, as the lease kept anyone else from moving
// the head since, and any other is viewed from the head read back.
func (r *runner) driveReturn(ctx context.Context, t runs.TaskRecord, fn func(context.Context) (*flow.Snapshot[State], error)) (*View, error) {
	var head *flow.Snapshot[State]
	run := func(ctx context.Context) error {
		snap, err := fn(ctx)
		if err == nil {
			head = snap
		}
		return err
	}
	return r.drive(ctx, t, run, func(ctx context.Context) (*View, error) {
		if head != nil {
			return view(t, head), nil
		}
		// Stopped or failed before its first checkpoint, the run has no
		// head: the record is its only trace, and resume rebuilds the run
		// from it.
		snap, err := headOrNil(r.graph.State(ctx, t.ID))
		if err != nil {
			return nil, err
		}
		return view(t, snap), nil
	})
}

// headOrNil passes a thread's head snapshot on, with a thread that has no
// checkpoint yet (created, then killed before its first one) as nil.
func headOrNil[S any](snap *flow.Snapshot[S], err error) (*flow.Snapshot[S], error) {
	if errors.Is(err, flow.ErrThreadNotFound) {
		return nil, nil
	}
	return snap, err
}
