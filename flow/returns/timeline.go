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
	// onTask records a task's start (ev.Outcome "") or end.
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

func (d *directSteps) onTask(ev flow.TaskEvent) {
	ctx := context.Background()
	now := d.now().UTC()
	key := ev.ThreadID + "\x00" + ev.TaskID
	if ev.Outcome == "" {
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
	running  map[string]runs.TimelineStep // thread + engine task id → its step
}

func newStepLog(rs *runs.Store, now func() time.Time) *stepLog {
	return &stepLog{runs: rs, now: now, next: map[string]int{}, attempts: map[string]map[string]int{}, running: map[string]runs.TimelineStep{}}
}

// fresh tells the log that task has no steps yet (it was created in this
// chunk), so its first step need not count them.
func (l *stepLog) fresh(task string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next[task], l.attempts[task] = 1, map[string]int{}
}

func (l *stepLog) onTask(ev flow.TaskEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now().UTC()
	key := ev.ThreadID + "\x00" + ev.TaskID
	if ev.Outcome == "" {
		l.start(key, ev, now)
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

// start keeps a running step for ev under key, counting the task's steps
// from the store the first time the log meets the task.
func (l *stepLog) start(key string, ev flow.TaskEvent, now time.Time) {
	if _, known := l.next[ev.ThreadID]; !known {
		top, attempts, err := l.runs.StepCounts(context.Background(), ev.ThreadID)
		if err != nil {
			return
		}
		l.next[ev.ThreadID], l.attempts[ev.ThreadID] = top+1, attempts
	}
	a := l.attempts[ev.ThreadID]
	a[ev.Node]++
	l.running[key] = runs.TimelineStep{Task: ev.ThreadID, Seq: l.next[ev.ThreadID], Node: ev.Node, Attempt: a[ev.Node], StartedAt: now}
	l.next[ev.ThreadID]++
}
