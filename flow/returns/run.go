package returns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"assistant/business"
	"assistant/flow"
)

// Lease timing. The holder renews its lease every DefaultHeartbeat; a lease
// not renewed for DefaultLeaseTTL lapses and another process may take the
// task over. The heartbeat also polls for an operator stop, so a stop is
// noticed within DefaultHeartbeat (the issue asks for under a second).
const (
	DefaultLeaseTTL  = 5 * time.Second
	DefaultHeartbeat = 250 * time.Millisecond
)

// Timeline messages for steps that did not complete.
const (
	msgInterrupted = "run interrupted; step not completed"
	msgProcessGone = "process gone; step not completed"
)

// errStopped is the cancel cause when an operator stopped the task.
var errStopped = errors.New("stopped by operator")

// identity is this process as a lease holder.
type identity struct {
	owner string
	pid   int
	host  string
}

func newIdentity() identity {
	host, _ := os.Hostname()
	return identity{owner: uuid.NewString(), pid: os.Getpid(), host: host}
}

// holderGone reports whether a lease's holder is known dead: it ran on this
// host and its pid no longer exists. On another host only expiry tells.
func (s *Service) holderGone(l business.Lease) bool {
	if l.Owner == "" {
		return true
	}
	if l.Host != s.me.host || l.PID <= 0 {
		return false
	}
	if l.PID == s.me.pid {
		return l.Owner != s.me.owner
	}
	err := syscall.Kill(l.PID, 0)
	return errors.Is(err, syscall.ESRCH)
}

// holderAlive reports whether a live process holds the lease now: there is
// a holder, its lease has not lapsed, and it is not known dead.
func (s *Service) holderAlive(l business.Lease) bool {
	return l.Owner != "" && l.Until.After(s.now()) && !s.holderGone(l)
}

func (s *Service) lease() business.Lease {
	ttl := DefaultLeaseTTL
	if s.inChunk() {
		// A batch chunk's row keeps its lease, without a heartbeat, until
		// the chunk's checkpoints are committed: the chunk runs at most
		// MaxChunkTime, and that commit may wait the busy timeout.
		ttl += MaxChunkTime + business.DefaultBusyTimeout
	}
	return business.Lease{Owner: s.me.owner, PID: s.me.pid, Host: s.me.host, Until: s.now().UTC().Add(ttl)}
}

// acquire takes the task's lease, marking steps that a dead or stopped
// holder left running as failed, and sets t.Status to running, as the
// record now is. A live holder is ErrConflict (busy).
func (s *Service) acquire(ctx context.Context, t *business.Task) error {
	prev, err := s.desk.AcquireLease(ctx, t.ID, s.lease(), s.now().UTC(), s.holderGone)
	var held *business.LeaseHeldError
	switch {
	case errors.As(err, &held):
		if t.Status != StatusRunning && t.Status != StatusInterrupted {
			// A batch holds the row while it stores its run.
			return fmt.Errorf("%w: %v; a batch is storing it, try again in a moment", ErrConflict, err)
		}
		return fmt.Errorf("%w: %v; wait for it to finish, or run `assistant stop %s`", ErrConflict, err, t.ID)
	case errors.Is(err, business.ErrConflict):
		return fmt.Errorf("task %s was taken by another process at the same moment: %w", t.ID, ErrConflict)
	case err != nil:
		return err
	}
	t.Status = StatusRunning
	if prev == StatusRunning || prev == StatusInterrupted {
		msg := msgProcessGone
		if prev == StatusInterrupted {
			msg = msgInterrupted
		}
		if _, err := s.desk.FailRunningSteps(ctx, t.ID, msg, s.now().UTC()); err != nil {
			return err
		}
	}
	return nil
}

// drive runs fn while holding the task's lease: a heartbeat renews the lease
// and cancels fn's context when an operator stops the task (or the lease is
// lost). Whatever happens, the lease is released with the status the run
// reached, read back from the head by view; a stopped run ends interrupted,
// with its running step failed. The lease must be held already (acquire,
// CreateLeasedTask or CreateBatch).
func (s *Service) drive(ctx context.Context, t business.Task, fn func(context.Context) error, view func(context.Context) (*View, error)) (*View, error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	// A batch's row takes a fraction of a millisecond, and the batch's own
	// heartbeat watches for a stop, which the batch checks between rows:
	// the row needs no heartbeat and no cancel of its own.
	rctx := ctx
	if !inBatch(ctx) {
		var cancel context.CancelCauseFunc
		rctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.heartbeat(rctx, t.ID, done, cancel)
		}()
	}
	runErr := fn(rctx)
	close(done)
	wg.Wait()

	bg := context.WithoutCancel(ctx)
	v, err := view(bg)
	if err != nil {
		// The head cannot be read: let go of the lease, leave it running.
		_ = s.desk.ReleaseLeaseSync(bg, t.ID, s.me.owner, StatusRunning, t.Stage)
		if runErr == nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w; then reading its state: %w", runErr, err)
	}
	if rctx.Err() != nil && v.Status == StatusRunning {
		// Stopped (operator, SIGINT/SIGTERM) before the run reached a
		// question or its end: the last checkpoint is the resume point. A
		// run that finished although a stop came keeps its finished status.
		n, err := s.desk.FailRunningSteps(bg, t.ID, msgInterrupted, s.now().UTC())
		if err != nil {
			return nil, err
		}
		if n == 0 && len(v.Next) > 0 && !s.endedInterrupted(bg, t.ID) {
			// Stopped between two supersteps: no step was running, so the
			// step that was due is recorded as not completed, and the
			// timeline shows where the run stopped.
			if err := s.desk.InterruptedStep(bg, t.ID, v.Next[0], msgInterrupted, s.now().UTC()); err != nil {
				return nil, err
			}
		}
		v.Status, runErr = StatusInterrupted, nil
	}
	// On a failed run (storage, a conflict, an answer that no longer fits)
	// the status is what the head shows, so resume or recover can continue
	// a run left part-way.
	//
	// The run's business commits (lease, timeline, task record) were made at
	// synchronous=NORMAL; releasing the lease is the command's one durable
	// commit to business.sqlite, which makes them all durable before the
	// caller reports. The engine synced the checkpoints when the run ended,
	// before this, so the task record is never durable ahead of its head. A
	// batch's row reports to nobody: its chunk commits durably once
	// (chunkRows), and the batch when it ends.
	release := s.desk.ReleaseLeaseSync
	switch {
	case s.inChunk():
		// A row in a batch chunk keeps its lease until the chunk's
		// checkpoints are committed too (chunkRows lets go of them then):
		// until that moment its record shows a question whose run is not
		// stored yet, and an answer from another process must wait.
		release = s.desk.RecordProgress
	case inBatch(ctx):
		release = s.desk.ReleaseLease
	}
	err = release(bg, t.ID, s.me.owner, v.Status, v.Stage)
	if err == nil && s.inChunk() {
		s.held = append(s.held, t.ID)
	}
	if err != nil {
		if !inBatch(ctx) {
			_ = s.desk.Sync(bg) // the lease was lost: still sync what this run wrote
		}
		if runErr == nil {
			return nil, fmt.Errorf("record progress of %s: %w", t.ID, err)
		}
	}
	switch {
	case runErr == nil:
		return v, nil
	case errors.Is(runErr, ErrInvalid), errors.Is(runErr, ErrConflict):
		return nil, runErr
	case errors.Is(runErr, flow.ErrConflict), errors.Is(runErr, flow.ErrUnknownInterrupt), errors.Is(runErr, flow.ErrNoPendingInterrupt):
		return nil, fmt.Errorf("task %s changed under the request (another process advanced it): %w", t.ID, ErrConflict)
	}
	return nil, fmt.Errorf("run task %s: %w", t.ID, runErr)
}

// inChunk reports whether s is a batch chunk's Service (withStores): its
// rows write their steps through stepLog and keep their leases until the
// chunk's checkpoints are committed.
func (s *Service) inChunk() bool { return s.steps != nil }

// endedInterrupted reports whether the task's last step already ended
// failed by the stop (the node saw its context cancelled), so that no
// second entry is recorded for the same stop.
func (s *Service) endedInterrupted(ctx context.Context, task string) bool {
	st, err := s.desk.LastStep(ctx, task)
	return err == nil && st.Status == business.StepFailed && st.Error == msgInterrupted
}

// heartbeat renews the lease of task every DefaultHeartbeat until done is
// closed, and cancels the run (errStopped) when the lease is lost or an
// operator stopped the task.
func (s *Service) heartbeat(ctx context.Context, task string, done <-chan struct{}, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(DefaultHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			err := s.desk.RenewLease(ctx, task, s.me.owner, s.now().UTC().Add(DefaultLeaseTTL))
			if errors.Is(err, business.ErrConflict) {
				cancel(errStopped)
				return
			}
		}
	}
}

// driveReturn drives a return task's run and views its head. fn returns
// the head the run ended at (nil when it does not know it); a run that ended
// without error is viewed from it, as the lease kept anyone else from moving
// the head since, and any other is viewed from the head read back.
func (s *Service) driveReturn(ctx context.Context, t business.Task, fn func(context.Context) (*flow.Snapshot[State], error)) (*View, error) {
	var head *flow.Snapshot[State]
	run := func(ctx context.Context) error {
		snap, err := fn(ctx)
		if err == nil {
			head = snap
		}
		return err
	}
	return s.drive(ctx, t, run, func(ctx context.Context) (*View, error) {
		if head != nil {
			return s.view(t, head), nil
		}
		// Stopped or failed before its first checkpoint, the run has no
		// head: the record is its only trace, and resume rebuilds the run
		// from it.
		snap, err := headOrNil(s.graph.State(ctx, t.ID))
		if err != nil {
			return nil, err
		}
		return s.view(t, snap), nil
	})
}

// onTask records the timeline: a running step when a task starts, its end
// when it ends. Timeline writes must not stop the run, so their errors are
// dropped; the checkpoints stay the source of truth.
func (s *Service) onTask(ev flow.TaskEvent) {
	if s.steps != nil {
		s.steps.onTask(s.desk, ev, s.now().UTC())
		return
	}
	ctx := context.Background()
	now := s.now().UTC()
	if ev.Outcome == "" {
		seq, err := s.desk.StartStep(ctx, ev.ThreadID, ev.Node, now)
		if err == nil {
			s.stepSeq.Store(ev.ThreadID+"\x00"+ev.TaskID, seq)
		}
		return
	}
	v, ok := s.stepSeq.LoadAndDelete(ev.ThreadID + "\x00" + ev.TaskID)
	if !ok {
		return
	}
	status, msg := stepEnd(ev)
	_ = s.desk.EndStep(ctx, ev.ThreadID, v.(int), status, msg, now)
}

// stepEnd is the timeline status and message of a task's end.
func stepEnd(ev flow.TaskEvent) (status, msg string) {
	switch ev.Outcome {
	case flow.OutcomeInterrupted:
		return business.StepWaiting, ""
	case flow.OutcomeFailed:
		if errors.Is(ev.Err, context.Canceled) {
			return business.StepFailed, msgInterrupted
		}
		return business.StepFailed, fmt.Sprint(ev.Err)
	}
	return business.StepDone, ""
}

// stepLog keeps the timeline of a batch chunk's rows in memory while a step
// runs and records the step once it ended, in one insert instead of an
// insert and an update. Nothing is lost by it: the chunk's transaction is
// invisible to other processes until it commits, so they could never see a
// step running, and a crash drops the chunk whole, steps included.
type stepLog struct {
	mu       sync.Mutex
	next     map[string]int            // task → seq of its next step
	attempts map[string]map[string]int // task → node → steps so far
	running  map[string]business.Step  // thread + engine task id → its step
}

func newStepLog() *stepLog {
	return &stepLog{next: map[string]int{}, attempts: map[string]map[string]int{}, running: map[string]business.Step{}}
}

// fresh tells the log that task has no steps yet (it was created in this
// chunk), so its first step need not count them.
func (l *stepLog) fresh(task string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next[task], l.attempts[task] = 1, map[string]int{}
}

func (l *stepLog) onTask(desk *business.Store, ev flow.TaskEvent, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx := context.Background()
	key := ev.ThreadID + "\x00" + ev.TaskID
	if ev.Outcome == "" {
		if _, known := l.next[ev.ThreadID]; !known {
			top, attempts, err := desk.StepCounts(ctx, ev.ThreadID)
			if err != nil {
				return
			}
			l.next[ev.ThreadID], l.attempts[ev.ThreadID] = top+1, attempts
		}
		a := l.attempts[ev.ThreadID]
		a[ev.Node]++
		l.running[key] = business.Step{Task: ev.ThreadID, Seq: l.next[ev.ThreadID], Node: ev.Node, Attempt: a[ev.Node], StartedAt: now}
		l.next[ev.ThreadID]++
		return
	}
	st, ok := l.running[key]
	if !ok {
		return
	}
	delete(l.running, key)
	st.Status, st.Error = stepEnd(ev)
	st.EndedAt = now
	_ = desk.AddStep(ctx, st)
}

// Stop asks the process driving a running task to stop (DESIGN.md "operator
// stop"): the task goes running → interrupted at once, and Stop waits up to
// wait for the driving process to notice and let go of the task. Errors:
// ErrNotFound, ErrConflict when the task is not running (a task that
// finished first keeps its finished status).
func (s *Service) Stop(ctx context.Context, task, user string, wait time.Duration) (*View, error) {
	t, err := s.task(ctx, task, user)
	if err != nil {
		return nil, err
	}
	if err := s.desk.RequestStop(ctx, t.ID); errors.Is(err, business.ErrConflict) {
		return nil, fmt.Errorf("stop %s: %v; only a running task can be stopped: %w", t.ID, err, ErrConflict)
	} else if err != nil {
		return nil, fmt.Errorf("stop %s: %w", t.ID, err)
	}
	if err := s.desk.Sync(ctx); err != nil {
		return nil, fmt.Errorf("stop %s: %w", t.ID, err)
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		l, _, err := s.desk.TaskLease(ctx, t.ID)
		if err != nil || !s.holderAlive(l) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return s.Show(ctx, t.ID, user)
}

// Recovered is one line of Recover's report.
type Recovered struct {
	Task   string `json:"task"`
	User   string `json:"user"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	Error  string `json:"error,omitempty"`
}

// Recover resumes every running task whose lease holder is gone, through the
// same path as Resume without an answer, and reports each. A task another
// process takes first is reported with its error and skipped.
func (s *Service) Recover(ctx context.Context) ([]Recovered, error) {
	stale, err := s.desk.StaleTasks(ctx, s.now().UTC(), s.holderGone)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	out := []Recovered{}
	for _, t := range stale {
		// Look again: recovering an earlier task (a batch) may have
		// continued this one (its row) already.
		cur, err := s.desk.Task(ctx, t.ID)
		if err != nil || cur.Status != StatusRunning {
			continue
		}
		v, err := s.Resume(ctx, ResumeOptions{Task: t.ID, User: t.User})
		r := Recovered{Task: t.ID, User: t.User}
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Status, r.Stage = v.Status, v.Stage
		}
		out = append(out, r)
	}
	return out, nil
}
