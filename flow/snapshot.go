package flow

import (
	"encoding/json"
	"fmt"
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
}

// TaskState is a task of the superstep due next.
type TaskState struct {
	ID         string
	Node       string
	Done       bool               // finished; its update waits in pending writes
	Error      string             // the last failure, if the task failed
	Interrupts []PendingInterrupt // its questions still unanswered
}

// Waiting reports whether the run waits for a person to answer a question.
func (s *Snapshot[S]) Waiting() bool { return len(s.Interrupts) > 0 }

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

func (e *StateDecodeError) Error() string {
	return fmt.Sprintf("state of thread %s at checkpoint %s (format %d) does not decode: %v", e.ThreadID, e.CheckpointID, e.Format, e.Err)
}

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
	resumes    map[int]json.RawMessage
}

func groupWrites(ws []Write) map[string]*taskWrites {
	m := map[string]*taskWrites{}
	for _, w := range ws {
		t := m[w.TaskID]
		if t == nil {
			t = &taskWrites{node: w.Node, interrupts: map[int]json.RawMessage{}, resumes: map[int]json.RawMessage{}}
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
			t.interrupts[w.Idx] = w.Value
		case WriteResume:
			t.resumes[w.Idx] = w.Value
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
		idxs := make([]int, 0, len(t.interrupts))
		for i := range t.interrupts {
			if _, answered := t.resumes[i]; !answered {
				idxs = append(idxs, i)
			}
		}
		sort.Ints(idxs)
		for _, i := range idxs {
			out = append(out, PendingInterrupt{ID: interruptID(id, i), Node: node, TaskID: id, Idx: i, Value: t.interrupts[i]})
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
		}
		for _, in := range snap.Interrupts {
			if in.TaskID == id {
				ts.Interrupts = append(ts.Interrupts, in)
			}
		}
		snap.Tasks = append(snap.Tasks, ts)
	}
	if len(snap.Interrupts) > 0 {
		snap.Breakpoint = ""
	}
	return snap, err
}
