package returns

import (
	"context"
	"errors"
	"fmt"
	"time"

	"assistant/flow"
	"assistant/runs"
)

// acquireMode is how a runner takes a task's lease (acquire), chosen where
// the runner or the call is made: a value of the runner's policy
// (acquireCommand, acquireFresh, acquireChunk, acquireRecover), or a repair's
// (acquireRepair).
type acquireMode struct {
	rule takeRule
	// fenceFirst raises the checkpoint store's fence to the epoch the
	// lease will take before the lease is taken, also for a record no
	// process holds (fenceBeforeTakeover): a checkpoint file another
	// process holds refuses the command before the business file is
	// written, so the refusal changes no byte of either.
	fenceFirst bool
	// status is the record status the lease is taken under (takeWhile,
	// takeUnchanged).
	status string
}

// takeRule is the statement an acquireMode takes the lease with.
type takeRule int

const (
	// takeAny takes a free lease, or takes over one whose holder is gone
	// or whose lease lapsed (runs.AcquireLease).
	takeAny takeRule = iota
	// takeRead is takeAny after one guarded statement that takes the
	// lease while the record read (under a chunk's write lock) shows it
	// free and is still current (runs.AcquireRead).
	takeRead
	// takeWhile takes the lease only while the record's status is still
	// status (runs.AcquireLeaseIf): a stop written meanwhile stands
	// (*stoppedMeanwhile).
	takeWhile
	// takeUnchanged is takeWhile for a repair: a record another process
	// changed since it was read is errRecordMoved, and the repair writes
	// nothing.
	takeUnchanged
)

var (
	// acquireFresh is a batch row's: any lease it may take, over a holder
	// that is gone.
	acquireFresh = acquireMode{rule: takeAny}
	// acquireCommand is a lone command's: acquireFresh, the checkpoint
	// store fenced first (fenceFirst).
	acquireCommand = acquireMode{rule: takeAny, fenceFirst: true}
	// acquireChunk is a chunk row's: the chunk read its rows' records
	// under its write lock, so one guarded statement takes most leases.
	acquireChunk = acquireMode{rule: takeRead}
	// acquireRecover is recover's continuation of a crashed run: the task
	// must still be recorded running when the lease is taken, so a stop
	// written after recover chose the task stands.
	acquireRecover = acquireMode{rule: takeWhile, status: StatusRunning}
)

// acquireRepair is the mode of a repair of a record read with status: the
// lease is taken only while the record still shows that status.
func acquireRepair(status string) acquireMode {
	return acquireMode{rule: takeUnchanged, status: status}
}

// repairing is the mode a runner whose mode is m repairs a record read
// with status in: recover's repair keeps recover's condition (the task
// still running), any other is acquireRepair(status).
func (m acquireMode) repairing(status string) acquireMode {
	if m.rule == takeWhile {
		status = m.status
	}
	return acquireRepair(status)
}

// acquire takes the task's lease the way of r's policy (acquireWith).
func (r *runner) acquire(ctx context.Context, t *runs.TaskRecord) error {
	return r.acquireWith(ctx, t, r.policy.acquire)
}

// acquireWith takes the task's lease in mode m, marking steps that a dead
// or stopped holder left running as failed, and sets t.Status and t.Lease
// to what the record now holds (running; this process, with the new
// fencing epoch). A live holder is ErrConflict (busy). Under
// acquireRecover the task must still be running when the lease is taken:
// one an operator stopped meanwhile is a *stoppedMeanwhile (ErrConflict),
// and nothing is written.
func (r *runner) acquireWith(ctx context.Context, t *runs.TaskRecord, m acquireMode) error {
	now := r.svc.now().UTC()
	l := r.lease()
	fenced, err := r.fenceBeforeTakeover(ctx, *t, now, m)
	if err != nil {
		return err
	}
	got, err := r.take(ctx, *t, l, now, m)
	if err != nil {
		return r.refused(*t, m, err)
	}
	return r.took(ctx, t, l, got, fenced, now)
}

// fenceNew fences the thread of task, about to be created holding its
// first lease (epoch 1), when r's policy fences first (acquireCommand):
// a checkpoint file another process holds refuses the command before the
// task is recorded, so the refusal changes no byte.
func (r *runner) fenceNew(ctx context.Context, task string) error {
	if !r.policy.acquire.fenceFirst {
		return nil
	}
	return r.fence(ctx, task, 1)
}

// take takes the lease l of task t by m's rule.
func (r *runner) take(ctx context.Context, t runs.TaskRecord, l runs.Lease, now time.Time, m acquireMode) (runs.Acquired, error) {
	switch m.rule {
	case takeRead:
		return r.takeRead(ctx, t, l, now)
	case takeWhile, takeUnchanged:
		return r.runs.AcquireLeaseIf(ctx, t.ID, l, now, r.svc.liveness, m.status)
	}
	return r.runs.AcquireLease(ctx, t.ID, l, now, r.svc.liveness)
}

// takeRead takes the lease of task t for l with one guarded statement
// while the record read (under the chunk's write lock) shows the lease
// free and is still current (runs.AcquireRead), else with
// runs.AcquireLease, which reads the lease again and may take over a
// lapsed one.
func (r *runner) takeRead(ctx context.Context, t runs.TaskRecord, l runs.Lease, now time.Time) (runs.Acquired, error) {
	if got, ok, err := r.runs.AcquireRead(ctx, t, l, now); err != nil || ok {
		return got, err
	}
	return r.runs.AcquireLease(ctx, t.ID, l, now, r.svc.liveness)
}

// refused is acquire's error for err, the store's refusal of t's lease in
// mode m: under a repair, a record that moved is errRecordMoved; else
// leaseRefused's.
func (r *runner) refused(t runs.TaskRecord, m acquireMode, err error) error {
	if m.rule == takeUnchanged && (errors.Is(err, runs.ErrStopped) || errors.Is(err, runs.ErrConflict)) {
		return fmt.Errorf("%w: %w", errRecordMoved, err)
	}
	return r.leaseRefused(t, err)
}

// leaseRefused is acquire's error for err, the store's refusal of t's
// lease: a stop written meanwhile, a live holder (busy), or another
// process that took the task at the same moment, each ErrConflict; any
// other error as it is.
func (r *runner) leaseRefused(t runs.TaskRecord, err error) error {
	var held *runs.LeaseHeldError
	switch {
	case errors.Is(err, runs.ErrStopped):
		// Recover chose the task while it ran; an operator stopped it
		// before recover's lease: the stop stands.
		return &stoppedMeanwhile{task: t.ID, err: err}
	case errors.As(err, &held) && t.Status == StatusInterrupted:
		// Stopped, and the process that ran it has not let go yet: a
		// stop again is refused (already stopped), so offer only what
		// works once it lets go.
		return r.svc.stoppedHeld(held)
	case errors.As(err, &held):
		if t.Status != StatusRunning && t.Status != StatusInterrupted {
			// Another process took the task at the same moment: an answer,
			// a resume or a batch row runs it now.
			return errorf(Hint{Before: "try again in a moment or see where it is with", Do: DoShow, Task: t.ID},
				"%w: %w; that process is running the task now", ErrConflict, err)
		}
		return errorf(Hint{Before: "wait for it to finish, or run", Do: DoStop, Task: t.ID}, "%w: %w", ErrConflict, err)
	case errors.Is(err, runs.ErrConflict):
		return fmt.Errorf("task %s was taken by another process at the same moment: %w", t.ID, ErrConflict)
	}
	return err
}

// took sets t to the lease l just taken (got) and settles what a former
// holder left: the recovery it starts from, the fence at the epoch taken
// (fenced is the one raised before), and the steps it left running.
func (r *runner) took(ctx context.Context, t *runs.TaskRecord, l runs.Lease, got runs.Acquired, fenced int64, now time.Time) error {
	leftRunning := got.PrevStatus == StatusRunning || got.PrevStatus == StatusInterrupted
	var head *flow.Checkpoint
	if leftRunning {
		// What the former holder's checkpoints hold settles the steps it
		// left running; nil when the run has none (or it cannot be read).
		head, _ = r.cps.Get(ctx, t.ID, "")
	}
	r.beginRecovery(ctx, *t, got.PrevStatus, head, now)
	if got.PrevStatus == StatusInterrupted {
		r.resumedStopped.Store(t.ID, struct{}{})
	}
	l.Epoch = got.Epoch
	t.Status, t.Lease = StatusRunning, l
	if got.TookOver && got.Epoch != fenced {
		// Taken over from a holder this process did not see before (it
		// came and went meanwhile): fence at the epoch actually taken.
		if err := r.fence(ctx, t.ID, l.Epoch); err != nil {
			return err
		}
	}
	if !leftRunning {
		return nil
	}
	msg := msgProcessGone
	if got.PrevStatus == StatusInterrupted {
		msg = msgInterrupted
	}
	_, err := r.runs.SettleRunningSteps(ctx, t.ID, settlement(head), msg, now)
	return err
}

// repair records v's status on a task record that lags behind its head,
// taking the lease so that a live process is never overruled. v was read
// with the record t: the lease is taken only while the record's status is
// still t's (acquireRepair), so a repair never writes a view that another
// process made stale meanwhile (an answer that ran and was stopped, a
// stop, a run that ended): that process's record is newer, and the repair
// writes nothing (nil).
func (r *runner) repair(ctx context.Context, t runs.TaskRecord, v *View) error {
	if t.Status == v.Status && t.Stage == v.Stage {
		return nil
	}
	err := r.acquireWith(ctx, &t, r.policy.acquire.repairing(t.Status))
	if errors.Is(err, errRecordMoved) {
		return nil
	}
	if err != nil {
		return err
	}
	r.recoveries.Delete(t.ID) // a repair runs nothing
	r.resumedStopped.Delete(t.ID)
	code, msg := failureOf(v)
	return r.runs.Release(ctx, t.ID, runs.Release{Owner: r.svc.me.owner, Status: v.Status, Stage: v.Stage, ErrorCode: code, Error: msg, Durable: true})
}

// errRecordMoved is acquire's refusal, under a repair, of a task whose
// record another process changed since the repair read it.
var errRecordMoved = errors.New("the task's record changed since it was read")
