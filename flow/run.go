package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/google/uuid"
)

// RecursionLimitError ends an invocation that ran Limit supersteps without
// reaching End, a question or a breakpoint. The last checkpoint stays the
// resume point.
type RecursionLimitError struct {
	ThreadID string
	Limit    int
}

// Error implements the error interface for *RecursionLimitError.
func (e *RecursionLimitError) Error() string {
	return fmt.Sprintf("thread %s: recursion limit of %d supersteps reached without ending", e.ThreadID, e.Limit)
}

// TaskError reports a node that failed. Its finished siblings' writes are
// saved; the failed task runs again when the thread is resumed.
type TaskError struct {
	ThreadID string
	Node     string
	Err      error
}

// Error implements the error interface for *TaskError.
func (e *TaskError) Error() string {
	return fmt.Sprintf("thread %s: node %s: %v", e.ThreadID, e.Node, e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *TaskError) Unwrap() error { return e.Err }

// Invoke starts a new thread with input as its state and runs it until it
// ends, asks a question, pauses at a breakpoint or fails. It returns the
// snapshot of the thread's head. Errors: ErrThreadExists when the thread has
// a checkpoint already, *ConflictError when another process started it at
// the same moment, *TaskError, *RecursionLimitError, storage errors.
func (r *Runnable[S]) Invoke(ctx context.Context, threadID string, input S) (*Snapshot[S], error) {
	head, err := r.opts.Checkpointer.Get(ctx, threadID, "")
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", threadID, err)
	}
	if head != nil {
		return nil, fmt.Errorf("invoke %s: %w", threadID, ErrThreadExists)
	}
	var zero S
	state := r.g.reducer(zero, input)
	next, waiting, err := r.g.successors([]string{Start}, state, nil)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", threadID, err)
	}
	cp, err := r.newCheckpoint(threadID, nil, state, next, Metadata{Source: SourceInput, Step: -1, Waiting: waiting})
	if err != nil {
		return nil, err
	}
	cp.Breakpoint = r.breakpointBefore(next)
	if err := r.opts.Checkpointer.Put(ctx, cp); err != nil {
		return nil, fmt.Errorf("invoke %s: %w", threadID, err)
	}
	return r.loop(ctx, cp, cp.Breakpoint != "", headRead)
}

// Resume continues a thread from its head. With an answer (cmd.Resume or
// cmd.ResumeMap) it answers pending questions first; with an empty Command
// it continues a breakpoint pause or a run stopped part-way. On a thread
// that has ended it returns the snapshot and does nothing.
//
// Errors, all leaving the thread unchanged: ErrThreadNotFound,
// ErrNoPendingInterrupt, ErrAmbiguousResume, *UnknownInterruptError,
// ErrResumeValueRequired, *AnswerInFlightError (matches ErrConflict: the
// question was answered by a request that has not finished). Then as
// Invoke; a *ConflictError means another request committed first.
func (r *Runnable[S]) Resume(ctx context.Context, threadID string, cmd Command) (*Snapshot[S], error) {
	head, err := r.opts.Checkpointer.Get(ctx, threadID, "")
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", threadID, err)
	}
	if head == nil {
		return nil, fmt.Errorf("resume %s: %w", threadID, ErrThreadNotFound)
	}
	return r.resume(ctx, head, cmd, headRead)
}

// ResumeAt is Resume from head, a snapshot of the thread's head that the
// caller read with State, without reading the head again (LangGraph's
// checkpoint_id in a config). Answers, refusals and what runs are Resume's,
// judged on head; the snapshot itself is not changed.
//
// If the thread's head moved since head was read (another request resumed
// or corrected the thread, or deleted it), ResumeAt's first write fails
// with a *ConflictError (errors.Is ErrConflict; Want is head.CheckpointID)
// and nothing is written: writes against head's checkpoint (answers, a
// finished task's update, a question, a failure) go through the
// Checkpointer's HeadWriter power, a compare-and-set as Put is. With an
// answer that check comes before any task runs; continuing without one,
// the tasks of the first superstep run before their writes are refused,
// as when two Resume calls race. A call that writes nothing (the thread
// had ended, the answer is refused) checks nothing. Only the head's id is
// compared: writes another request saved against the same head after the
// snapshot was read (an answer to another question, say) are not seen,
// as when two Resume calls read the head at the same moment.
//
// A snapshot that State did not make (one returned by Invoke, say), or a
// Checkpointer without HeadWriter, costs the read ResumeAt saves: the head
// is read once, and if it is not head's checkpoint the same *ConflictError
// is returned at once. A nil head is an error.
func (r *Runnable[S]) ResumeAt(ctx context.Context, head *Snapshot[S], cmd Command) (*Snapshot[S], error) {
	if head == nil {
		return nil, errors.New("resume at: no snapshot")
	}
	cp, check, err := r.givenHead(ctx, head)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", head.ThreadID, err)
	}
	return r.resume(ctx, cp, cmd, check)
}

// givenHead returns the checkpoint ResumeAt continues snap from and how its
// first write checks it is still the head: a copy of the checkpoint State
// read, checked by HeadWriter, when snap carries it and the Checkpointer
// has that power; else the head read now, which must be snap's checkpoint
// (a *ConflictError otherwise).
func (r *Runnable[S]) givenHead(ctx context.Context, snap *Snapshot[S]) (*Checkpoint, headCheck, error) {
	if _, ok := r.opts.Checkpointer.(HeadWriter); ok && snap.head != nil {
		cp := *snap.head
		// The run appends to the head's writes; the snapshot keeps its own.
		cp.PendingWrites = slices.Clone(snap.head.PendingWrites)
		return &cp, headGiven, nil
	}
	cp, err := r.opts.Checkpointer.Get(ctx, snap.ThreadID, "")
	if err != nil {
		return nil, headRead, err
	}
	if cp == nil || cp.ID != snap.CheckpointID {
		found := ""
		if cp != nil {
			found = cp.ID
		}
		return nil, headRead, &ConflictError{ThreadID: snap.ThreadID, Want: snap.CheckpointID, Head: found}
	}
	return cp, headRead, nil
}

// resume is Resume from head, checked as check says: it saves cmd's
// answers against head, then runs the thread on.
func (r *Runnable[S]) resume(ctx context.Context, head *Checkpoint, cmd Command, check headCheck) (*Snapshot[S], error) {
	writes, err := answerWrites(head, cmd)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", head.ThreadID, err)
	}
	if len(writes) > 0 {
		if err := r.putWritesFor(check)(ctx, head.ThreadID, head.ID, writes); err != nil {
			return nil, fmt.Errorf("resume %s: save answers: %w", head.ThreadID, err)
		}
		head.PendingWrites = append(head.PendingWrites, writes...)
	}
	return r.loop(ctx, head, false, check)
}

// headCheck says how a run makes sure that the checkpoint it starts from
// is still its thread's head when it first writes.
type headCheck int

const (
	// headRead: the head was read by the call that runs (Invoke, Resume),
	// or written by the run itself. Pending writes are saved with
	// PutWrites; the compare-and-set of the next Put catches a head that
	// moved meanwhile.
	headRead headCheck = iota
	// headGiven: the caller gave the head (ResumeAt), read maybe long ago.
	// Pending writes against it are saved with HeadWriter.PutWritesAtHead,
	// a compare-and-set too, so a head that moved is caught before
	// anything is written.
	headGiven
)

// putWritesFunc saves pending writes against a checkpoint: the
// Checkpointer's PutWrites or one of its variants.
type putWritesFunc func(ctx context.Context, threadID, checkpointID string, writes []Write) error

// putWritesFor returns how pending writes against a checkpoint checked as
// check says are saved: with HeadWriter.PutWritesAtHead for a head the
// caller gave, with PutWrites otherwise.
func (r *Runnable[S]) putWritesFor(check headCheck) putWritesFunc {
	if hw, ok := r.opts.Checkpointer.(HeadWriter); ok && check == headGiven {
		return hw.PutWritesAtHead
	}
	return r.opts.Checkpointer.PutWrites
}

// lastPutWritesFor is putWritesFor for the writes that end a run (a
// question, a failure): committed durably where the Checkpointer can
// (DurableWriter), which durable reports. Writes against a head the caller
// gave are checked instead; the Sync at the end of the run covers them.
func (r *Runnable[S]) lastPutWritesFor(check headCheck) (put putWritesFunc, durable bool) {
	if d, ok := r.opts.Checkpointer.(DurableWriter); ok && check == headRead {
		return d.PutWritesDurable, true
	}
	return r.putWritesFor(check), false
}

// answerWrites checks cmd against the questions open at head and returns
// the pending writes that save its answers, sorted by question id; none for
// an empty Command, which continues a run that asks nothing. Errors:
// ErrResumeValueRequired, ErrNoPendingInterrupt, ErrAmbiguousResume,
// *UnknownInterruptError, *AnswerInFlightError, an answer that does not
// encode as JSON.
func answerWrites(head *Checkpoint, cmd Command) ([]Write, error) {
	groups := groupWrites(head.PendingWrites)
	open := pending(head, groups)
	if !cmd.hasValue() {
		if len(open) > 0 {
			return nil, ErrResumeValueRequired
		}
		return nil, nil
	}
	// An answer saved at this head whose task has not finished with it is
	// being used by another request right now (or by one that stopped): a
	// second answer to it is a conflict, not a new question to answer.
	busy := inFlight(head, groups)
	answers, err := answersByID(head.ThreadID, cmd, open, busy)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]PendingInterrupt, len(open))
	for _, in := range open {
		byID[in.ID] = in
	}
	writes := make([]Write, 0, len(answers))
	for _, id := range slices.Sorted(maps.Keys(answers)) {
		in, ok := byID[id]
		if !ok && slices.Contains(busy, id) {
			return nil, &AnswerInFlightError{ThreadID: head.ThreadID, InterruptID: id}
		}
		if !ok {
			return nil, &UnknownInterruptError{ID: id}
		}
		raw, err := json.Marshal(answers[id])
		if err != nil {
			return nil, fmt.Errorf("encode answer to %s: %w", id, err)
		}
		writes = append(writes, Write{TaskID: in.TaskID, Node: in.Node, Kind: WriteResume, Idx: in.Idx, Value: raw})
	}
	return writes, nil
}

// answersByID returns the answers of cmd, which has a value, by question
// id: cmd.ResumeMap, or cmd.Resume for the one open question. open are the
// questions open at the head of thread threadID, busy the ids of answered
// ones still in use. Errors: *AnswerInFlightError or ErrNoPendingInterrupt
// when no question is open, ErrAmbiguousResume.
func answersByID(threadID string, cmd Command, open []PendingInterrupt, busy []string) (map[string]any, error) {
	if len(open) == 0 {
		if len(busy) > 0 {
			return nil, &AnswerInFlightError{ThreadID: threadID, InterruptID: busy[0]}
		}
		return nil, ErrNoPendingInterrupt
	}
	if cmd.Resume == nil {
		return cmd.ResumeMap, nil
	}
	if len(open) > 1 || len(cmd.ResumeMap) > 0 {
		return nil, fmt.Errorf("%d questions pending: %w", len(open), ErrAmbiguousResume)
	}
	return map[string]any{open[0].ID: cmd.Resume}, nil
}

// State returns the snapshot of the thread's head, or ErrThreadNotFound. A
// state that does not decode gives the snapshot with zero Values and a
// *StateDecodeError. The snapshot keeps the checkpoint it was read from, so
// ResumeAt can continue from it without reading the head again.
func (r *Runnable[S]) State(ctx context.Context, threadID string) (*Snapshot[S], error) {
	head, err := r.opts.Checkpointer.Get(ctx, threadID, "")
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", threadID, err)
	}
	if head == nil {
		return nil, fmt.Errorf("state %s: %w", threadID, ErrThreadNotFound)
	}
	snap, err := r.snapshot(head)
	snap.head = head // what ResumeAt continues from
	return snap, err
}

// History returns the thread's snapshots newest first, at most limit (0 = all).
// A checkpoint whose state does not decode is listed with zero Values; the
// first such error is returned beside the full list. Only the head can be
// resumed: forking a run from an older checkpoint is not supported.
func (r *Runnable[S]) History(ctx context.Context, threadID string, limit int) ([]*Snapshot[S], error) {
	cps, err := r.opts.Checkpointer.List(ctx, threadID, ListOptions{Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", threadID, err)
	}
	var first error
	out := make([]*Snapshot[S], 0, len(cps))
	for i, cp := range cps {
		if i == 0 {
			// The head's pending writes tell which questions are open.
			if full, err := r.opts.Checkpointer.Get(ctx, threadID, cp.ID); err == nil && full != nil {
				cp = full
			}
		}
		s, err := r.snapshot(cp)
		if err != nil && first == nil {
			first = err
		}
		out = append(out, s)
	}
	return out, first
}

// UpdateState applies values to the thread's head through the reducer as if
// node asNode had written them, and records the result as a new checkpoint
// (Metadata.Source "update") whose next nodes are asNode's successors.
// Questions pending at the old head are dropped with it. Errors:
// ErrThreadNotFound, an unknown node, *ConflictError, *StateDecodeError,
// storage errors. When the new checkpoint is written but the Checkpointer
// fails to make it durable (Syncer), the snapshot of the new head comes
// back beside that error.
func (r *Runnable[S]) UpdateState(ctx context.Context, threadID string, values S, asNode string) (*Snapshot[S], error) {
	if r.g.nodes[asNode] == nil {
		return nil, fmt.Errorf("update state %s: unknown node %q", threadID, asNode)
	}
	head, err := r.opts.Checkpointer.Get(ctx, threadID, "")
	if err != nil {
		return nil, fmt.Errorf("update state %s: %w", threadID, err)
	}
	if head == nil {
		return nil, fmt.Errorf("update state %s: %w", threadID, ErrThreadNotFound)
	}
	state, err := r.decodeState(head)
	if err != nil {
		return nil, err
	}
	state = r.g.reducer(state, values)
	next, waiting, err := r.g.successors([]string{asNode}, state, head.Metadata.Waiting)
	if err != nil {
		return nil, fmt.Errorf("update state %s: %w", threadID, err)
	}
	upd, err := json.Marshal(values)
	if err != nil {
		return nil, fmt.Errorf("update state %s: encode: %w", threadID, err)
	}
	cp, err := r.newCheckpoint(threadID, head, state, next, Metadata{
		Source: SourceUpdate, Step: head.Metadata.Step + 1, Writes: map[string]json.RawMessage{asNode: upd}, Waiting: waiting,
	})
	if err != nil {
		return nil, err
	}
	// A breakpoint before a node due next holds after a correction too.
	cp.Breakpoint = r.breakpointBefore(next)
	if err := r.opts.Checkpointer.Put(ctx, cp); err != nil {
		return nil, fmt.Errorf("update state %s: %w", threadID, err)
	}
	snap, err := r.snapshot(cp)
	if serr := r.sync(ctx); serr != nil {
		// The correction is the head now; only its durability against a
		// power loss is in doubt, so the caller still sees it.
		return snap, fmt.Errorf("update state %s: sync checkpoints: %w", threadID, serr)
	}
	return snap, err
}

func (r *Runnable[S]) newCheckpoint(threadID string, parent *Checkpoint, state S, next []string, md Metadata) (*Checkpoint, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("new checkpoint id: %w", err)
	}
	vals, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("encode state of %s: %w", threadID, err)
	}
	cp := &Checkpoint{
		ThreadID:  threadID,
		ID:        id.String(),
		Format:    r.g.format,
		Values:    vals,
		Next:      next,
		Metadata:  md,
		CreatedAt: r.opts.Now().UTC(),
	}
	if parent != nil {
		cp.ParentID = parent.ID
	}
	return cp, nil
}

func (r *Runnable[S]) breakpointBefore(next []string) string {
	for _, n := range next {
		if r.before[n] {
			return "before:" + n
		}
	}
	return ""
}

func (r *Runnable[S]) hook(point string) {
	if r.opts.Hook != nil {
		r.opts.Hook(point)
	}
}

// sync makes the run's commits durable against power loss where the
// Checkpointer defers that (Syncer).
func (r *Runnable[S]) sync(ctx context.Context) error {
	if s, ok := r.opts.Checkpointer.(Syncer); ok {
		return s.Sync(context.WithoutCancel(ctx))
	}
	return nil
}

// loop runs supersteps from head until the run ends, asks, pauses or fails.
// paused says head was just written at a breakpoint, so loop stops at once;
// check says how the first superstep's writes check head is still the
// thread's head.
func (r *Runnable[S]) loop(ctx context.Context, head *Checkpoint, paused bool, check headCheck) (snap *Snapshot[S], err error) {
	// synced: the run's last write was durable already (DurableWriter).
	var synced bool
	defer func() {
		if synced {
			return
		}
		if serr := r.sync(ctx); serr != nil && err == nil {
			err = fmt.Errorf("sync checkpoints: %w", serr)
		}
	}()
	cp := head
	for steps := 0; !paused && len(cp.Next) > 0; steps++ {
		if steps >= r.opts.RecursionLimit {
			s, _ := r.snapshot(cp)
			return s, &RecursionLimitError{ThreadID: cp.ThreadID, Limit: r.opts.RecursionLimit}
		}
		if err := ctx.Err(); err != nil {
			s, _ := r.snapshot(cp)
			return s, err
		}
		next, stop, err := r.superstep(ctx, cp, check, &synced)
		if err != nil || stop {
			s, serr := r.snapshot(cp)
			if err == nil {
				err = serr
			}
			return s, err
		}
		cp = next
		check = headRead // the run wrote the head it goes on from
		paused = cp.Breakpoint != ""
	}
	return r.snapshot(cp)
}

type taskResult struct {
	id        string
	node      string
	update    json.RawMessage
	ran       bool // false when its update came from a pending write, or it is parked
	saved     bool // its update is saved as a pending write
	parked    bool // not run: a question it asked is still unanswered
	interrupt []*InterruptError
	err       error
}

// superstep runs the tasks due after cp and, when all finish, writes the next
// checkpoint. stop is true when a task asked a question (its writes are
// saved against cp); err is set when a task failed or storage did. When its
// write is the run's last (a question, a failure, the end, a breakpoint) it
// is made durable where the Checkpointer can, and *synced set. check says
// how writes against cp check it is still the thread's head.
func (r *Runnable[S]) superstep(ctx context.Context, cp *Checkpoint, check headCheck, synced *bool) (next *Checkpoint, stop bool, err error) {
	groups := groupWrites(cp.PendingWrites)
	results, todo := planTasks(cp, groups)
	if err := r.beforeStep(ctx, cp, results, todo); err != nil {
		return nil, false, err
	}
	// Each finished task's update is saved at once when the superstep has
	// siblings, so a sibling's question, failure or a crash does not make it
	// run again. A task alone in its superstep goes straight to the checkpoint.
	r.runTasks(ctx, cp, groups, results, todo, taskSave{each: len(cp.Next) > 1, put: r.putWritesFor(check)})
	out := collect(cp.ThreadID, results)
	if out.halted() {
		if err := r.savePending(ctx, cp, out, check, synced); err != nil {
			return nil, false, err
		}
		return nil, out.asked && len(out.failed) == 0, errors.Join(out.failed...)
	}
	next, err = r.commit(ctx, cp, results, synced)
	return next, false, err
}

// beforeStep asks Options.BeforeStep whether the superstep after cp may run
// the tasks results[i], i in todo.
func (r *Runnable[S]) beforeStep(ctx context.Context, cp *Checkpoint, results []taskResult, todo []int) error {
	if r.opts.BeforeStep == nil || len(todo) == 0 {
		return nil
	}
	ev := StepEvent{ThreadID: cp.ThreadID, Step: cp.Metadata.Step + 1, Tasks: make([]StepTask, 0, len(todo))}
	for _, i := range todo {
		ev.Tasks = append(ev.Tasks, StepTask{ID: results[i].id, Node: results[i].node})
	}
	return r.opts.BeforeStep(ctx, ev)
}

// planTasks lists the tasks of the superstep after cp, one per node due, in
// the order of cp.Next, and returns the indexes of those to run. A task that
// finished already keeps the update saved in its pending writes; one with a
// question still unanswered stays parked.
func planTasks(cp *Checkpoint, groups map[string]*taskWrites) (results []taskResult, todo []int) {
	results = make([]taskResult, len(cp.Next))
	for i, node := range cp.Next {
		id := taskID(cp.ID, node)
		results[i] = taskResult{id: id, node: node}
		t := groups[id]
		switch {
		case t != nil && t.done:
			results[i].update = t.update
		case t != nil && len(t.unanswered()) > 0:
			// A task runs again only when every question it asked has an
			// answer: before that a re-run could only ask the same again.
			results[i].parked = true
		default:
			todo = append(todo, i)
		}
	}
	return results, todo
}

// taskSave says whether and how a finished task's update is saved before
// its superstep's checkpoint is written.
type taskSave struct {
	each bool          // save each update the moment its task finishes
	put  putWritesFunc // how pending writes against the superstep's checkpoint are saved
}

// runTasks runs the tasks results[i] for i in todo, each with the answers
// saved for it in groups, and returns when all have ended. Several run
// concurrently; each saves its update as save says.
func (r *Runnable[S]) runTasks(ctx context.Context, cp *Checkpoint, groups map[string]*taskWrites, results []taskResult, todo []int, save taskSave) {
	var wg sync.WaitGroup
	for _, i := range todo {
		var resumes map[int]json.RawMessage
		if t := groups[results[i].id]; t != nil {
			resumes = t.resumes
		}
		if len(todo) == 1 {
			// A task alone runs on this goroutine: a goroutine of its own
			// would only add a hand-over and a fresh stack to grow.
			r.runTask(ctx, cp, &results[i], resumes, save)
			break
		}
		wg.Add(1)
		go func(res *taskResult) {
			defer wg.Done()
			r.runTask(ctx, cp, res, resumes, save)
		}(&results[i])
	}
	wg.Wait()
}

// stepOutcome is what the tasks of a superstep came to.
type stepOutcome struct {
	failed []error // a *TaskError for each task that failed
	asked  bool    // a task asked a question, or is still parked on one
	// writes are to be saved against the superstep's checkpoint if it
	// halts: failures, questions and the updates not saved yet.
	writes []Write
	saved  []Write // the updates saved already (taskSave.each)
}

// halted reports whether the superstep ends without a checkpoint of its
// own because a task failed or asked.
func (o stepOutcome) halted() bool { return len(o.failed) > 0 || o.asked }

// collect gathers the outcomes of the tasks of a superstep of thread
// threadID, in the order of results.
func collect(threadID string, results []taskResult) stepOutcome {
	var o stepOutcome
	for _, res := range results {
		switch {
		case res.parked:
			o.asked = true
		case res.err != nil:
			o.failed = append(o.failed, &TaskError{ThreadID: threadID, Node: res.node, Err: res.err})
			msg, _ := json.Marshal(res.err.Error())
			o.writes = append(o.writes, Write{TaskID: res.id, Node: res.node, Kind: WriteError, Value: msg})
		case len(res.interrupt) > 0:
			o.asked = true
			for _, ie := range res.interrupt {
				o.writes = append(o.writes, questionWrite(res.id, res.node, ie.Interrupt))
			}
		case res.ran:
			w := Write{TaskID: res.id, Node: res.node, Kind: WriteUpdate, Value: res.update}
			if res.saved {
				o.saved = append(o.saved, w)
			} else {
				o.writes = append(o.writes, w)
			}
		}
	}
	return o
}

// savePending saves the writes of a halted superstep against cp, checked
// as check says. They are the run's last, so they are committed durably
// where lastPutWritesFor can, which sets *synced. The in-memory cp is kept
// in step with what is stored.
func (r *Runnable[S]) savePending(ctx context.Context, cp *Checkpoint, o stepOutcome, check headCheck, synced *bool) error {
	if len(o.writes) > 0 {
		put, durable := r.lastPutWritesFor(check)
		if err := put(context.WithoutCancel(ctx), cp.ThreadID, cp.ID, o.writes); err != nil {
			return fmt.Errorf("save pending writes of %s: %w", cp.ThreadID, err)
		}
		*synced = durable
	}
	cp.PendingWrites = append(cp.PendingWrites, o.saved...)
	cp.PendingWrites = append(cp.PendingWrites, o.writes...)
	return nil
}

// commit merges the updates of a finished superstep into cp's state and
// writes the checkpoint that follows cp, with the nodes due next and the
// breakpoint it pauses at, if any. When that write is the run's last (the
// end, a breakpoint) it is durable where the Checkpointer can, which sets
// *synced. The hooks "after-checkpoint:NODE" run once it is written.
func (r *Runnable[S]) commit(ctx context.Context, cp *Checkpoint, results []taskResult, synced *bool) (*Checkpoint, error) {
	state, ran, written, err := r.merge(cp, results)
	if err != nil {
		return nil, err
	}
	nextNodes, waiting, err := r.g.successors(ran, state, cp.Metadata.Waiting)
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", cp.ThreadID, err)
	}
	ncp, err := r.newCheckpoint(cp.ThreadID, cp, state, nextNodes, Metadata{Source: SourceLoop, Step: cp.Metadata.Step + 1, Writes: written, Waiting: waiting})
	if err != nil {
		return nil, err
	}
	ncp.Breakpoint = r.breakpointAfter(ran, nextNodes)
	if ncp.Breakpoint == "" {
		ncp.Breakpoint = r.breakpointBefore(nextNodes)
	}
	durable, err := r.putCheckpoint(ctx, ncp, len(nextNodes) == 0 || ncp.Breakpoint != "")
	if err != nil {
		return nil, fmt.Errorf("save checkpoint of %s: %w", cp.ThreadID, err)
	}
	*synced = durable
	for _, n := range ran {
		r.hook("after-checkpoint:" + n)
	}
	return ncp, nil
}

// merge applies the tasks' updates to cp's state through the reducer, in
// the order of results (cp.Next, sorted by node name), and returns the new
// state, the nodes that ran and each one's update (for Metadata.Writes).
func (r *Runnable[S]) merge(cp *Checkpoint, results []taskResult) (S, []string, map[string]json.RawMessage, error) {
	state, err := r.decodeState(cp)
	if err != nil {
		return state, nil, nil, err
	}
	ran := make([]string, 0, len(results))
	written := make(map[string]json.RawMessage, len(results))
	for _, res := range results {
		var upd S
		if err := json.Unmarshal(res.update, &upd); err != nil {
			return state, nil, nil, fmt.Errorf("decode update of node %s: %w", res.node, err)
		}
		state = r.g.reducer(state, upd)
		ran = append(ran, res.node)
		written[res.node] = res.update
	}
	return state, ran, written, nil
}

// breakpointAfter returns "after:NODE" for the first node of ran that has a
// breakpoint after it (Options.InterruptAfter), or "". A run that ended
// (next is empty) has nothing to continue, so it does not pause.
func (r *Runnable[S]) breakpointAfter(ran, next []string) string {
	if len(next) == 0 {
		return ""
	}
	for _, n := range ran {
		if r.after[n] {
			return "after:" + n
		}
	}
	return ""
}

// putCheckpoint stores cp as its thread's new head. When last says it is
// the run's last write it is committed durably where the Checkpointer can
// (DurableWriter); durable reports whether it was.
func (r *Runnable[S]) putCheckpoint(ctx context.Context, cp *Checkpoint, last bool) (durable bool, err error) {
	put := r.opts.Checkpointer.Put
	d, durable := r.opts.Checkpointer.(DurableWriter)
	durable = durable && last
	if durable {
		put = d.PutDurable
	}
	return durable, put(context.WithoutCancel(ctx), cp)
}

// questionWrite is the pending write that saves a question of task id.
func questionWrite(id, node string, in PendingInterrupt) Write {
	if len(in.Path) <= 1 {
		return Write{TaskID: id, Node: node, Kind: WriteInterrupt, Idx: in.Idx, Value: in.Value}
	}
	v, _ := json.Marshal(subgraphQuestion{Path: in.Path, Value: in.Value})
	return Write{TaskID: id, Node: node, Kind: WriteSubgraphInterrupt, Idx: in.Idx, Value: v}
}

// runTask runs one node with its saved answers and records the outcome in
// res. With save.each, a finished task's update is saved as a pending write.
func (r *Runnable[S]) runTask(ctx context.Context, cp *Checkpoint, res *taskResult, resumes map[int]json.RawMessage, save taskSave) {
	res.ran = true
	r.observe(TaskEvent{ThreadID: cp.ThreadID, TaskID: res.id, Node: res.node, Step: cp.Metadata.Step + 1})
	defer func() {
		ev := TaskEvent{ThreadID: cp.ThreadID, TaskID: res.id, Node: res.node, Step: cp.Metadata.Step + 1, Outcome: OutcomeDone, Err: res.err}
		switch {
		case res.err != nil:
			ev.Outcome = OutcomeFailed
		case len(res.interrupt) > 0:
			ev.Outcome = OutcomeInterrupted
		}
		r.observe(ev)
	}()
	state, err := r.decodeState(cp)
	if err != nil {
		res.err = err
		return
	}
	sc := &taskScope{taskID: res.id, node: res.node, resumes: resumes}
	tctx := context.WithValue(ctx, scopeKey{}, sc)
	r.hook("before:" + res.node)
	upd, err := callNode(tctx, res.node, r.g.nodes[res.node], state)
	r.hook("after:" + res.node)
	res.interrupt, res.update, res.err = settle(sc, upd, err)
	if res.err != nil || len(res.interrupt) > 0 || !save.each {
		return
	}
	w := []Write{{TaskID: res.id, Node: res.node, Kind: WriteUpdate, Value: res.update}}
	if err := save.put(context.WithoutCancel(ctx), cp.ThreadID, cp.ID, w); err != nil {
		res.err = fmt.Errorf("save update: %w", err)
		return
	}
	res.saved = true
}

// settle turns what a node returned into the task's outcome: the questions
// that park it, its encoded update, or the error that fails it.
func settle[S any](sc *taskScope, upd S, err error) ([]*InterruptError, json.RawMessage, error) {
	sc.mu.Lock()
	raised := slices.Clone(sc.raised)
	sc.mu.Unlock()
	var ie *InterruptError
	switch {
	case errors.As(err, &ie):
		if len(raised) == 0 {
			raised = []*InterruptError{ie}
		}
		// Questions raised concurrently (a subgraph's parallel tasks) are
		// saved in a stable order.
		slices.SortFunc(raised, func(a, b *InterruptError) int { return a.Interrupt.Idx - b.Interrupt.Idx })
		return raised, nil, nil
	case err != nil:
		return nil, nil, err
	case len(raised) > 0:
		return nil, nil, fmt.Errorf("%w (question %s)", ErrInterruptIgnored, raised[0].Interrupt.ID)
	}
	raw, err := json.Marshal(upd)
	if err != nil {
		return nil, nil, fmt.Errorf("encode update: %w", err)
	}
	return nil, raw, nil
}

// callNode runs a node, turning a panic into an error so that bad input
// never takes the process down with a half-written run.
func callNode[S any](ctx context.Context, node string, fn NodeFunc[S], state S) (upd S, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("node %s panicked: %v", node, p)
		}
	}()
	return fn(ctx, state)
}
