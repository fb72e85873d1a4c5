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
	// begin is the bookkeeping of a superstep of the run held by holder
	// (flow.Options.BeforeStep): it checks the run may go on, renews the
	// lease to renew (when not zero), records the ends of the run's steps
	// before and the start of the superstep's tasks. An error stops the run
	// before them: runs.ErrStopped, runs.ErrLeaseLost, *runs.AttemptsError.
	begin(ctx context.Context, ev flow.StepEvent, holder runs.Lease, renew time.Time, maxAttempts int) error
	// onTask records a task's end (a start begin did not record too).
	onTask(ev flow.TaskEvent)
	// fresh says task was created just now and has no steps to count.
	fresh(task string)
	// take returns the ends of the thread's steps not recorded yet, for the
	// run's release to record, and forgets them.
	take(thread string) []runs.StepEnd
}

// directSteps records what a lone command runs, visible to other processes
// as it goes: a held run's superstep in one commit with its check and its
// lease renewal (begin), that superstep's ends in the next one (the next
// begin, or the run's release: take), so a superstep costs one business
// commit. The end of a step is thus recorded after the checkpoint that
// holds its work; a holder that dies between the two leaves the step
// running, and the process that takes the task over settles it from the
// checkpoints (runner.settleSteps). A run outside a lease (no begin)
// writes each step as it starts and ends.
type directSteps struct {
	runs *runs.Store
	now  func() time.Time
	mu   sync.Mutex
	// steps maps thread + engine task id to the running step of the task.
	steps map[string]begun
	// ended maps a held run's thread to the ends of its steps that its
	// next commit records.
	ended map[string][]runs.StepEnd
}

// begun is a running step: its seq, and whether a held run's begin
// recorded it (its end waits for the run's next commit).
type begun struct {
	seq  int
	held bool
}

func newDirectSteps(rs *runs.Store, now func() time.Time) *directSteps {
	return &directSteps{runs: rs, now: now, steps: map[string]begun{}, ended: map[string][]runs.StepEnd{}}
}

func (d *directSteps) fresh(string) {}

// begin records, in one transaction (runs.BeginSteps), that the run still
// holds its task running (a stop or a takeover ends the run here, before
// any of its tasks runs), the lease renewed, the ends of the run's steps
// before and the start of the superstep's tasks. On an error the ends stay
// kept for the release.
func (d *directSteps) begin(ctx context.Context, ev flow.StepEvent, holder runs.Lease, renew time.Time, maxAttempts int) error {
	nodes := make([]string, len(ev.Tasks))
	for i, t := range ev.Tasks {
		nodes[i] = t.Node
	}
	d.mu.Lock()
	ended := d.ended[ev.ThreadID]
	d.mu.Unlock()
	seqs, err := d.runs.BeginSteps(context.WithoutCancel(ctx), ev.ThreadID, runs.Superstep{
		Holder: holder, Renew: renew, Ended: ended, Nodes: nodes, Now: d.now().UTC(), Max: maxAttempts,
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended[ev.ThreadID] = d.ended[ev.ThreadID][len(ended):]
	for i, t := range ev.Tasks {
		d.steps[ev.ThreadID+"\x00"+t.ID] = begun{seq: seqs[i], held: true}
	}
	return nil
}

func (d *directSteps) onTask(ev flow.TaskEvent) {
	ctx := context.Background()
	now := d.now().UTC()
	key := ev.ThreadID + "\x00" + ev.TaskID
	d.mu.Lock()
	st, ok := d.steps[key]
	if ev.Outcome == "" || !ok {
		d.mu.Unlock()
		if ev.Outcome == "" && !ok {
			if seq, err := d.runs.StartStep(ctx, ev.ThreadID, ev.Node, now); err == nil {
				d.mu.Lock()
				d.steps[key] = begun{seq: seq}
				d.mu.Unlock()
			}
		}
		return
	}
	delete(d.steps, key)
	status, msg := stepEnd(ev)
	end := runs.StepEnd{Seq: st.seq, Status: status, Error: msg, At: now}
	if st.held {
		d.ended[ev.ThreadID] = append(d.ended[ev.ThreadID], end)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	_ = d.runs.EndSteps(ctx, ev.ThreadID, []runs.StepEnd{end})
}

func (d *directSteps) take(thread string) []runs.StepEnd {
	d.mu.Lock()
	defer d.mu.Unlock()
	ended := d.ended[thread]
	delete(d.ended, thread)
	return ended
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
// runs and once it ended, and records the chunk's ended steps at the end
// of the chunk (flush), in a statement or two instead of an insert and an
// update a step. Nothing is lost by it: the chunk's transaction is
// invisible to other processes until it commits, so they could never see a
// step running, and a crash drops the chunk whole, steps included. No row
// reads the steps of another row's task (a chunk's rows have distinct
// tasks: a duplicate is refused before it runs).
type stepLog struct {
	runs     *runs.Store // the chunk's transaction
	now      func() time.Time
	mu       sync.Mutex
	next     map[string]int               // task → seq of its next step
	attempts map[string]map[string]int    // task → node → steps so far
	failed   map[string]map[string]int    // task → node → failed attempts so far
	running  map[string]runs.TimelineStep // thread + engine task id → its step
	ended    []runs.TimelineStep          // ended steps not recorded yet
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

// preload tells the log what the timelines of a chunk's tasks hold so
// far (runs.StepTallies), read for all of them in two statements, so that
// their first steps need not count them one task at a time.
func (l *stepLog) preload(tallies map[string]runs.StepTally) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for task, t := range tallies {
		if _, known := l.next[task]; !known {
			l.next[task], l.attempts[task], l.failed[task] = t.Top+1, t.Attempts, t.Failed
		}
	}
}

// begin keeps a running step for each task of the superstep, unless a
// node failed maxAttempts times already (*runs.AttemptsError). A chunk's
// rows have no heartbeat and no status of their own to check: the batch
// checks for a stop between its rows.
func (l *stepLog) begin(_ context.Context, ev flow.StepEvent, _ runs.Lease, _ time.Time, maxAttempts int) error {
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

// take returns nothing: the log records each step once it ended.
func (l *stepLog) take(string) []runs.StepEnd { return nil }

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
	l.ended = append(l.ended, st)
}

// flush records the steps that ended since the last flush, in the
// chunk's transaction (runs.AddSteps). Errors: the insert's; the chunk
// then fails and its rows run one by one.
func (l *stepLog) flush(ctx context.Context) error {
	l.mu.Lock()
	ended := l.ended
	l.ended = nil
	l.mu.Unlock()
	return l.runs.AddSteps(ctx, ended)
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
