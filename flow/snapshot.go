package flow

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// Snapshot is the state of a thread as of one checkpoint: what a person or a
// later process needs to see where the run stands and what it waits for.
type Snapshot[S any] struct {
	ThreadID     string
	CheckpointID string
	ParentID     string
	Step         int
	CreatedAt    time.Time // UTC
	Metadata     Metadata
	// Values is the state as of the checkpoint (finished sibling tasks'
	// pending writes are not merged until their superstep completes).
	Values S
	// Next lists the nodes due; empty when the run has ended.
	Next []string
	// Tasks are the tasks of the superstep due next, with what each has
	// saved so far.
	Tasks []TaskState
	// Interrupts are the questions still unanswered, in task then call order.
	Interrupts []PendingInterrupt
	// Breakpoint is "before:NODE" or "after:NODE" when the run is paused at a
	// static breakpoint: a pause with no question, continued by an empty
	// Command. It is "" for a question, which Interrupts carries.
	Breakpoint string

	// head is the checkpoint the snapshot was made from, with its pending
	// writes, when State read it as the thread's head: what ResumeAt
	// continues from. nil for other snapshots.
	head *Checkpoint
}

// TaskState is a task of the superstep due next.
type TaskState struct {
	ID         string
	Node       string
	Done       bool               // finished; its update waits in pending writes
	Error      string             // the last failure, if the task failed
	Interrupts []PendingInterrupt // its questions still unanswered
	// Answers are the answers saved for its questions, by call order in the
	// node, that the task has not finished with yet: a run continued from
	// this head replays them. Nil for a done task.
	Answers map[int]json.RawMessage
}

// Waiting reports whether the run waits for a person to answer a question.
func (s *Snapshot[S]) Waiting() bool { return len(s.Interrupts) > 0 }

// AtBreakpoint reports whether the run is paused at a static breakpoint
// (Options.InterruptBefore or InterruptAfter): nodes are due, no question is
// asked, and Resume with an empty Command continues. A UI shows "continue"
// for it, never an answer form.
func (s *Snapshot[S]) AtBreakpoint() bool { return s.Breakpoint != "" && len(s.Interrupts) == 0 }

// Done reports whether the run has ended (no node is due).
func (s *Snapshot[S]) Done() bool { return len(s.Next) == 0 }

// StateDecodeError reports a stored state that no longer decodes: it names the
// thread and checkpoint and keeps the cause. The checkpoint is never dropped.
type StateDecodeError struct {
	ThreadID     string
	CheckpointID string
	Format       int
	Err          error
}

// Error implements the error interface for *StateDecodeError.
func (e *StateDecodeError) Error() string {
	return fmt.Sprintf("state of thread %s at checkpoint %s (format %d) does not decode: %v", e.ThreadID, e.CheckpointID, e.Format, e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *StateDecodeError) Unwrap() error { return e.Err }

// decodeState upgrades and decodes a checkpoint's values.
func (r *Runnable[S]) decodeState(cp *Checkpoint) (S, error) {
	var s S
	raw := []byte(cp.Values)
	format := cp.Format
	if format == 0 {
		format = 1
	}
	if format > r.g.format {
		return s, &StateDecodeError{cp.ThreadID, cp.ID, format, fmt.Errorf("written by a newer state format (this build reads up to %d)", r.g.format)}
	}
	for v := format; v < r.g.format; v++ {
		up := r.g.upgrades[v]
		if up == nil {
			return s, &StateDecodeError{cp.ThreadID, cp.ID, format, fmt.Errorf("no upgrade from state format %d", v)}
		}
		var err error
		if raw, err = up(raw); err != nil {
			return s, &StateDecodeError{cp.ThreadID, cp.ID, format, fmt.Errorf("upgrade from format %d: %w", v, err)}
		}
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, &StateDecodeError{cp.ThreadID, cp.ID, format, err}
	}
	return s, nil
}

// taskWrites groups a checkpoint's pending writes by task.
type taskWrites struct {
	node       string
	update     json.RawMessage
	done       bool
	err        string
	interrupts map[int]json.RawMessage
	paths      map[int][]string // of subgraph questions
	resumes    map[int]json.RawMessage
}

// unanswered returns the call numbers of the task's questions that have no
// answer yet, sorted.
func (t *taskWrites) unanswered() []int {
	var idxs []int
	for i := range t.interrupts {
		if _, answered := t.resumes[i]; !answered {
			idxs = append(idxs, i)
		}
	}
	sort.Ints(idxs)
	return idxs
}

// subgraphQuestion is the Value of a WriteSubgraphInterrupt write.
type subgraphQuestion struct {
	Path  []string        `json:"path"`
	Value json.RawMessage `json:"value"`
}

// put sets m[k] to v, making m first when it is nil, and returns m: a
// task's maps are made only when it has such writes.
func put[V any](m map[int]V, k int, v V) map[int]V {
	if m == nil {
		m = make(map[int]V, 1)
	}
	m[k] = v
	return m
}

// groupWrites groups ws by task; a task's maps are nil while it has no
// write of their kind.
func groupWrites(ws []Write) map[string]*taskWrites {
	m := map[string]*taskWrites{}
	for _, w := range ws {
		t := m[w.TaskID]
		if t == nil {
			t = &taskWrites{node: w.Node}
			m[w.TaskID] = t
		}
		switch w.Kind {
		case WriteUpdate:
			t.update, t.done = w.Value, true
		case WriteError:
			var msg string
			if json.Unmarshal(w.Value, &msg) != nil {
				msg = string(w.Value)
			}
			t.err = msg
		case WriteInterrupt:
			t.interrupts = put(t.interrupts, w.Idx, w.Value)
		case WriteSubgraphInterrupt:
			var q subgraphQuestion
			if json.Unmarshal(w.Value, &q) != nil {
				// Unreadable: still a question, so the task is not run past it.
				q.Value = w.Value
			}
			t.interrupts = put(t.interrupts, w.Idx, q.Value)
			t.paths = put(t.paths, w.Idx, q.Path)
		case WriteResume:
			t.resumes = put(t.resumes, w.Idx, w.Value)
		}
	}
	return m
}

// pending returns the unanswered interrupts of the superstep after cp, in
// node then call order.
func pending(cp *Checkpoint, groups map[string]*taskWrites) []PendingInterrupt {
	var out []PendingInterrupt
	for _, node := range cp.Next {
		id := taskID(cp.ID, node)
		t := groups[id]
		if t == nil || t.done {
			continue
		}
		for _, i := range t.unanswered() {
			path := t.paths[i]
			if path == nil {
				path = []string{node}
			}
			out = append(out, PendingInterrupt{ID: interruptID(id, i), Node: node, TaskID: id, Idx: i, Value: t.interrupts[i], Path: path})
		}
	}
	return out
}

// inFlight returns the ids of the answered questions of the superstep after
// cp whose task has not used the answer yet: the task is not done, asks
// nothing new and has not failed. Another request is running it, or one
// stopped before it could finish.
func inFlight(cp *Checkpoint, groups map[string]*taskWrites) []string {
	var out []string
	for _, node := range cp.Next {
		id := taskID(cp.ID, node)
		t := groups[id]
		if t == nil || t.done || t.err != "" || len(t.unanswered()) > 0 {
			continue
		}
		for _, i := range slices.Sorted(maps.Keys(t.resumes)) {
			out = append(out, interruptID(id, i))
		}
	}
	return out
}

func (r *Runnable[S]) snapshot(cp *Checkpoint) (*Snapshot[S], error) {
	vals, err := r.decodeState(cp)
	snap := &Snapshot[S]{
		ThreadID:     cp.ThreadID,
		CheckpointID: cp.ID,
		ParentID:     cp.ParentID,
		Step:         cp.Metadata.Step,
		CreatedAt:    cp.CreatedAt,
		Metadata:     cp.Metadata,
		Values:       vals,
		Next:         append([]string{}, cp.Next...),
		Breakpoint:   cp.Breakpoint,
	}
	groups := groupWrites(cp.PendingWrites)
	snap.Interrupts = pending(cp, groups)
	for _, node := range cp.Next {
		id := taskID(cp.ID, node)
		ts := TaskState{ID: id, Node: node}
		if t := groups[id]; t != nil {
			ts.Done, ts.Error = t.done, t.err
			if !t.done && len(t.resumes) > 0 {
				ts.Answers = maps.Clone(t.resumes)
			}
		}
		for _, in := range snap.Interrupts {
			if in.TaskID == id {
				ts.Interrupts = append(ts.Interrupts, in)
			}
		}
		snap.Tasks = append(snap.Tasks, ts)
	}
	if len(cp.PendingWrites) > 0 {
		// The superstep after the pause has started (it was continued and
		// then asked, failed or was cut short): the run is no longer paused
		// at the breakpoint.
		snap.Breakpoint = ""
	}
	return snap, err
}
