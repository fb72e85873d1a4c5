package returns

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"assistant/flow"
	"assistant/runs"
)

// stepRecorder writes the timeline (runs.TimelineStep) from the engine's
// task events (flow.Options.OnTask). Timeline writes must not stop a run,
// so their errors are dropped: the checkpoints stay the source of truth.
type stepRecorder interface {
	// begin records the start of a superstep's tasks for the run held by
	// holder (flow.Options.BeforeStep); an error stops the run before
	// them: runs.ErrStopped, runs.ErrLeaseLost, *runs.AttemptsError.
	begin(ctx context.Context, ev flow.StepEvent, holder runs.Lease, maxAttempts int) error
	// onTask records a task's end (a start begin did not record too).
	onTask(ev flow.TaskEvent)
	// fresh says task was created just now and has no steps to count.
	fresh(task string)
}

// directSteps writes a running step when a task starts and its end when it
// ends: what a lone command records, visible to other processes at once.
type directSteps struct {
	runs *runs.Store
	now  func() time.Time
	seq  sync.Map // thread + engine task id → timeline step seq
}

func newDirectSteps(rs *runs.Store, now func() time.Time) *directSteps {
	return &directSteps{runs: rs, now: now}
}

func (d *directSteps) fresh(string) {}

// begin checks, in the transaction that records the superstep's steps, that
// the run still holds its task running (runs.BeginSteps): a stop or a
// takeover ends the run here, before any of its tasks runs.
func (d *directSteps) begin(ctx context.Context, ev flow.StepEvent, holder runs.Lease, maxAttempts int) error {
	nodes := make([]string, len(ev.Tasks))
	for i, t := range ev.Tasks {
		nodes[i] = t.Node
	}
	seqs, err := d.runs.BeginSteps(context.WithoutCancel(ctx), ev.ThreadID, holder, nodes, d.now().UTC(), maxAttempts)
	if err != nil {
		return err
	}
	for i, t := range ev.Tasks {
		d.seq.Store(ev.ThreadID+"\x00"+t.ID, seqs[i])
	}
	return nil
}

func (d *directSteps) onTask(ev flow.TaskEvent) {
	ctx := context.Background()
	now := d.now().UTC()
	key := ev.ThreadID + "\x00" + ev.TaskID
	if ev.Outcome == "" {
		if _, begun := d.seq.Load(key); begun {
			return
		}
		if seq, err := d.runs.StartStep(ctx, ev.ThreadID, ev.Node, now); err == nil {
			d.seq.Store(key, seq)
		}
		return
	}
	v, ok := d.seq.LoadAndDelete(key)
	if !ok {
		return
	}
	status, msg := stepEnd(ev)
	_ = d.runs.EndStep(ctx, ev.ThreadID, v.(int), status, msg, now)
}

// stepEnd is the timeline status and message of a task's end.
func stepEnd(ev flow.TaskEvent) (status, msg string) {
	switch ev.Outcome {
	case flow.OutcomeInterrupted:
		return runs.StepWaiting, ""
	case flow.OutcomeFailed:
		if errors.Is(ev.Err, context.Canceled) {
			return runs.StepFailed, msgInterrupted
		}
		return runs.StepFailed, fmt.Sprint(ev.Err)
	}
	return runs.StepDone, ""
}

// stepLog keeps the timeline of a batch chunk's rows in memory while a step
// runs and records the step once it ended, in one insert instead of an
// insert and an update. Nothing is lost by it: the chunk's transaction is
// invisible to other processes until it commits, so they could never see a
// step running, and a crash drops the chunk whole, steps included.
type stepLog struct {
	runs     *runs.Store // the chunk's transaction
	now      func() time.Time
	mu       sync.Mutex
	next     map[string]int               // task → seq of its next step
	attempts map[string]map[string]int    // task → node → steps so far
	failed   map[string]map[string]int    // task → node → failed attempts so far
	running  map[string]runs.TimelineStep // thread + engine task id → its step
}

func newStepLog(rs *runs.Store, now func() time.Time) *stepLog {
	return &stepLog{runs: rs, now: now, next: map[string]int{}, attempts: map[string]map[string]int{}, failed: map[string]map[string]int{}, running: map[string]runs.TimelineStep{}}
}

// fresh tells the log that task has no steps yet (it was created in this
// chunk), so its first step need not count them.
func (l *stepLog) fresh(task string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next[task], l.attempts[task], l.failed[task] = 1, map[string]int{}, map[string]int{}
}

// begin keeps a running step for each task of the superstep, unless a
// node failed maxAttempts times already (*runs.AttemptsError). A chunk's
// rows have no heartbeat and no status of their own to check: the batch
// checks for a stop between its rows.
func (l *stepLog) begin(_ context.Context, ev flow.StepEvent, _ runs.Lease, maxAttempts int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now().UTC()
	for _, t := range ev.Tasks {
		if err := l.start(ev.ThreadID+"\x00"+t.ID, ev.ThreadID, t.Node, now, maxAttempts); err != nil {
			return err
		}
	}
	return nil
}

func (l *stepLog) onTask(ev flow.TaskEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now().UTC()
	key := ev.ThreadID + "\x00" + ev.TaskID
	if ev.Outcome == "" {
		if _, begun := l.running[key]; !begun {
			_ = l.start(key, ev.ThreadID, ev.Node, now, 0)
		}
		return
	}
	st, ok := l.running[key]
	if !ok {
		return
	}
	delete(l.running, key)
	st.Status, st.Error = stepEnd(ev)
	st.EndedAt = now
	_ = l.runs.AddStep(context.Background(), st)
}

// start keeps a running step of node for task under key, counting the
// task's steps from the store the first time the log meets the task; with
// maxAttempts > 0 a node that failed that often is refused.
func (l *stepLog) start(key, task, node string, now time.Time, maxAttempts int) error {
	if _, known := l.next[task]; !known {
		top, attempts, err := l.runs.StepCounts(context.Background(), task)
		if err != nil {
			return err
		}
		l.next[task], l.attempts[task] = top+1, attempts
		l.failed[task], err = l.runs.FailedSteps(context.Background(), task)
		if err != nil {
			return err
		}
	}
	if maxAttempts > 0 && l.failed[task][node] >= maxAttempts {
		return &runs.AttemptsError{Task: task, Node: node, Max: maxAttempts}
	}
	a := l.attempts[task]
	a[node]++
	l.running[key] = runs.TimelineStep{Task: task, Seq: l.next[task], Node: node, Attempt: a[node], StartedAt: now}
	l.next[task]++
	return nil
}
