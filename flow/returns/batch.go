package returns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// Batch limits and defaults.
const (
	// MaxChunkCommit bounds the rows one chunk writes in one transaction
	// (a larger chunk checkpoints more often): it bounds the memory a
	// chunk holds until its commit.
	MaxChunkCommit = 100
	// MaxChunkTime ends a chunk early, after the rows done so far, so that
	// its transaction never holds business.sqlite's write lock for long:
	// other processes wait for it, and so does this process's own lease
	// heartbeat (see chunkRows).
	MaxChunkTime = 500 * time.Millisecond
	// DefaultBatchChunk is how many rows one superstep of a batch handles:
	// progress is checkpointed after each chunk, so a crash redoes at most
	// one chunk, and those rows are looked up and skipped, not run again.
	DefaultBatchChunk = 100
	// MaxBatchRows bounds a batch file.
	MaxBatchRows = 100_000
	// maxBadLines is how many bad lines a refused batch file reports.
	maxBadLines = 10
	// NodeRows is the batch graph's one node: it handles the next chunk.
	NodeRows = "rows"
	// StageBatchDone is the stage of a batch whose rows all ran.
	StageBatchDone = "finished"
)

// BatchState is the batch graph's state: where the walk through the rows
// stands. The rows themselves live in business.sqlite (batch_rows).
type BatchState struct {
	Batch    string `json:"batch,omitempty"`
	User     string `json:"user,omitempty"`
	Total    int    `json:"total,omitempty"`
	Chunk    int    `json:"chunk,omitempty"`
	Position int    `json:"position,omitempty"` // rows handled so far
	// Counts are the handled rows per outcome: the row task's stage
	// (draft_ready, need_reason, failed, …), or "not_found" for an unknown
	// order, "conflict" for a task id already used with other input.
	Counts map[string]int `json:"counts,omitempty"`
	// Failure is why a guard stopped the batch (attempts exhausted, the
	// recursion limit); nil while it runs or when it finished.
	Failure *Failure `json:"error,omitempty"`
	// Of is what the rows are: RowsOfOrders ("" in a state stored before
	// decide runs existed) or RowsOfDecisions.
	Of string `json:"of,omitempty"`
	// TTLSeconds is the draft validity the rows' tasks are started with
	// (BatchOptions.TTL); 0 means business.DefaultDraftTTL.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// What the rows of a batch task are (BatchState.Of, BatchProgress.Of).
const (
	// RowsOfOrders: a batch's rows, each a return task to start for an
	// order (StartBatch).
	RowsOfOrders = "orders"
	// RowsOfDecisions: a decide run's rows, each a decision to give a
	// waiting task (StartDecide).
	RowsOfDecisions = "decisions"
)

// rowsOf is what b's rows are, RowsOfOrders for a state stored before the
// field existed.
func (b BatchState) rowsOf() string {
	if b.Of == "" {
		return RowsOfOrders
	}
	return b.Of
}

// ttl is the draft validity of b's row tasks.
func (b BatchState) ttl() time.Duration {
	if b.TTLSeconds <= 0 {
		return business.DefaultDraftTTL
	}
	return time.Duration(b.TTLSeconds) * time.Second
}

func reduceBatch(s, u BatchState) BatchState {
	if u.Batch != "" {
		s.Batch = u.Batch
	}
	if u.User != "" {
		s.User = u.User
	}
	if u.Total != 0 {
		s.Total = u.Total
	}
	if u.Chunk != 0 {
		s.Chunk = u.Chunk
	}
	if u.Position != 0 {
		s.Position = u.Position
	}
	if u.Counts != nil {
		s.Counts = maps.Clone(u.Counts)
	}
	if u.Failure != nil {
		f := *u.Failure
		s.Failure = &f
	}
	if u.Of != "" {
		s.Of = u.Of
	}
	if u.TTLSeconds != 0 {
		s.TTLSeconds = u.TTLSeconds
	}
	return s
}

// BatchProgress is the batch part of a View.
type BatchProgress struct {
	// Of is what the rows are: RowsOfOrders (a batch) or RowsOfDecisions
	// (a decide run).
	Of       string         `json:"of"`
	Position int            `json:"position"` // rows handled
	Total    int            `json:"total"`
	Counts   map[string]int `json:"counts"` // rows per outcome (stage)
}

// buildBatch returns the batch graph: one node that handles a chunk of rows
// and loops until every row was handled.
func (s *Service) buildBatch() *flow.Graph[BatchState] {
	g := flow.NewGraph(reduceBatch)
	g.StateFormat(BatchStateFormat, batchStateUpgrades)
	g.AddNode(NodeRows, s.batchRows)
	g.AddEdge(flow.Start, NodeRows)
	g.AddNode(NodeGiveUp, func(context.Context, BatchState) (BatchState, error) { return BatchState{}, nil })
	g.AddEdge(NodeGiveUp, flow.End)
	g.AddConditionalEdges(NodeRows, func(b BatchState) []string {
		if b.Position < b.Total {
			return []string{NodeRows}
		}
		return []string{flow.End}
	})
	return g
}

// BatchOptions are the input of StartBatch.
type BatchOptions struct {
	Batch       string
	User        string
	Rows        []runs.BatchRow
	Fingerprint string // of the file, from ParseBatch
	Chunk       int    // rows per checkpoint; 0 means DefaultBatchChunk
	// TTL is the draft validity of every row's task (InputDraftTTL),
	// part of the batch's input; 0 means business.DefaultDraftTTL.
	TTL time.Duration
	// AllowOverlap starts a new batch even when a running or stopped
	// batch of the user holds some of its orders (InputAllowOverlap);
	// without it that is ErrConflict (overlap). Not part of the input.
	AllowOverlap bool
}

// StartBatch creates a batch task with its rows and runs it; the same batch
// id with the same file (and draft validity) continues it (continueRows:
// a stopped or abandoned batch runs to its end, a finished one is reported,
// one another live process runs is ErrConflict naming that process), with
// another file is ErrConflict. A row whose order an earlier row names
// already is not run: it is stored handled, duplicate_order, naming the
// earlier row's line (markDuplicates). Errors: ErrInvalid, ErrConflict,
// storage errors.
func (s *Service) StartBatch(ctx context.Context, o BatchOptions) (*View, error) {
	if err := ValidTaskID(o.Batch); err != nil {
		return nil, fmt.Errorf("%w: batch id: %v", ErrInvalid, err)
	}
	if err := ValidDraftTTL(o.TTL); err != nil {
		return nil, errorf(Hint{}, "%w (%s)", err, InputDraftTTL)
	}
	if o.TTL == 0 {
		o.TTL = business.DefaultDraftTTL
	}
	fp := "batch:" + o.Fingerprint
	if o.TTL != business.DefaultDraftTTL {
		// The default keeps the form batches were recorded with before
		// the validity was part of their input.
		fp += fmt.Sprintf(":ttl=%d", int64(o.TTL/time.Second))
	}
	rows := markDuplicates(o.Rows, func(r runs.BatchRow) string { return r.OrderID }, OutcomeDuplicateOrder, "order")
	if !o.AllowOverlap {
		if err := s.overlap(ctx, o.Batch, o.User, rows); err != nil {
			return nil, err
		}
	}
	return s.startRows(ctx, rowsTask{id: o.Batch, user: o.User, fingerprint: fp, total: len(rows), each: eachOf(rows), chunk: o.Chunk, ttl: o.TTL, of: RowsOfOrders, idName: "batch id"})
}

// overlapShown is how many of the orders a new batch shares with a held
// one its overlap error names.
const overlapShown = 3

// overlap checks, before a new batch id is created, that no batch of
// user that is running (or left running by a process that died) or
// stopped holds an order of rows (runs.Store.HeldOrders): two batches
// over the same orders would make two tasks per order, and the second
// task's draft meets the first's open application. A batch id that exists
// already is the same batch given again (or another input, which
// startRows refuses): nothing is checked. Errors: ErrConflict naming the
// first such batch, how many orders it shares and a few of them; storage
// errors.
func (s *Service) overlap(ctx context.Context, id, user string, rows []runs.BatchRow) error {
	if _, err := s.runs.Task(ctx, id); !errors.Is(err, runs.ErrNotFound) {
		return nil // the same batch again, or startRows' error to report
	}
	orders := make(map[string]bool, len(rows))
	for _, r := range rows {
		if r.DuplicateOf == 0 {
			orders[r.OrderID] = true
		}
	}
	for _, status := range []string{StatusRunning, StatusInterrupted} {
		held, err := s.runs.ListTasks(ctx, user, status)
		if err != nil {
			return fmt.Errorf("batches of %s: %w", user, err)
		}
		for _, b := range held {
			if b.Kind != runs.KindBatch || !strings.HasPrefix(b.Fingerprint, "batch:") || b.ID == id {
				continue
			}
			var shared []string
			n := 0
			err := s.runs.HeldOrders(ctx, b.ID, func(order string) bool {
				if orders[order] {
					delete(orders, order) // a row of b is counted once
					if n++; len(shared) < overlapShown {
						shared = append(shared, order)
					}
				}
				return true
			})
			if err != nil {
				return err
			}
			if n > 0 {
				return overlapError(b, n, shared)
			}
		}
	}
	return nil
}

// overlapError is the error of a new batch whose rows name n orders that
// batch b holds, shared the first of them: ErrConflict (exit 3).
func overlapError(b runs.TaskRecord, n int, shared []string) error {
	anyway := &Hint{Before: "to run this one over the same orders anyway, give the same command with", With: []InputValue{{Input: InputAllowOverlap}}}
	state, h := "running", Hint{Before: "let that batch finish first (see it with", Do: DoShow, Task: b.ID, After: ");", Then: anyway}
	if b.Status == StatusInterrupted {
		state, h = "stopped", Hint{Before: "finish that batch first with", Do: DoResume, Task: b.ID, After: ";", Then: anyway}
	}
	some := strings.Join(shared, ", ")
	if n > len(shared) {
		some += ", …"
	}
	return errorf(h,
		"batch %s (%s) already holds %d of this file's orders (%s); a second task for an order would meet the first one's application, so this batch was not started and nothing was written: %w", b.ID, state, n, some, ErrConflict)
}

// Outcomes of rows refused before they run (runs.BatchRow.Outcome).
const (
	// OutcomeDuplicateOrder: a batch row whose order an earlier row of the
	// file names; no task and no draft is made for it.
	OutcomeDuplicateOrder = "duplicate_order"
	// OutcomeDuplicateTask: a decide row whose task an earlier row of the
	// file decides; it is not applied.
	OutcomeDuplicateTask = "duplicate_task"
)

// markDuplicates marks in rows, and returns them, every row whose key (of what) an
// earlier row has marked handled as outcome, error code conflict, naming
// the earlier row's line; the first row of each key is left to run.
func markDuplicates(rows []runs.BatchRow, key func(runs.BatchRow) string, outcome, what string) []runs.BatchRow {
	// Marked in place: a copy of a file's rows would double the peak
	// memory of parsing a large file.
	first := make(map[string]int, len(rows))
	for i := range rows {
		r := &rows[i]
		k := key(*r)
		if line, ok := first[k]; ok {
			markDuplicate(r, outcome, what, k, line)
		} else {
			first[k] = r.FileLine()
		}
	}
	return rows
}

// markDuplicate marks row r, whose key k (of what) the row on line names
// already, handled as outcome, error code conflict.
func markDuplicate(r *runs.BatchRow, outcome, what, k string, line int) {
	r.Outcome, r.ErrorCode, r.DuplicateOf = outcome, CodeConflict, line
	r.Error = fmt.Sprintf("%s %s is already on line %d; this row was not run", what, k, line)
}

// eachOf gives the rows of a slice to add, in order (rowsTask.each).
func eachOf(rows []runs.BatchRow) func(add func(runs.BatchRow) error) error {
	return func(add func(runs.BatchRow) error) error {
		for _, r := range rows {
			if err := add(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// rowsTask is a batch task to create and run: a batch's or a decide run's.
type rowsTask struct {
	id, user    string
	fingerprint string // the task's input binding, with its kind's prefix
	total       int    // rows
	// each gives add the rows, in order, duplicates marked; its error
	// (a file that changed since it was checked) creates nothing.
	each   func(add func(runs.BatchRow) error) error
	chunk  int
	ttl    time.Duration // of the rows' drafts (a batch's)
	of     string        // RowsOfOrders or RowsOfDecisions
	idName any           // what names the id, for messages: "batch id", InputID (idTaken)
}

// startRows creates the batch task o with its rows and runs it. A task of
// that id with the same user and input is continued as Resume would
// (continueRows): the same command again ends only when every row
// ran. With other input it is ErrConflict.
func (s *Service) startRows(ctx context.Context, o rowsTask) (*View, error) {
	t, err := s.runs.Task(ctx, o.id)
	if err == nil {
		if t.User != o.user || t.Fingerprint != o.fingerprint {
			return nil, idTaken(ctx, s.desk, t, o.user, o.idName)
		}
		return s.continueRows(ctx, t)
	}
	if !errors.Is(err, runs.ErrNotFound) {
		return nil, fmt.Errorf("start %s: %w", o.id, err)
	}
	t = runs.TaskRecord{ID: o.id, User: o.user, Fingerprint: o.fingerprint, Status: StatusRunning, Kind: runs.KindBatch, Lease: s.cmd.lease()}
	t.Lease.Epoch = 1 // CreateBatchTTL's
	ttl := o.ttl
	if ttl == 0 {
		ttl = business.DefaultDraftTTL
	}
	if err := s.runs.CreateBatchEach(ctx, t, t.Lease, ttl, o.each); errors.Is(err, runs.ErrTaskExists) {
		return nil, fmt.Errorf("task %s was created by another process at the same moment: %w", o.id, ErrConflict)
	} else if err != nil {
		return nil, err
	}
	chunk := o.chunk
	if chunk <= 0 {
		chunk = DefaultBatchChunk
	}
	in := BatchState{Batch: t.ID, User: t.User, Total: o.total, Chunk: chunk, Of: o.of, TTLSeconds: int64(ttl / time.Second)}
	return s.driveBatch(ctx, s.cmd, t, func(ctx context.Context, g *flow.Runnable[BatchState]) error {
		_, err := g.Invoke(ctx, t.ID, in)
		if errors.Is(err, flow.ErrThreadExists) {
			_, err = g.Resume(ctx, t.ID, flow.Command{})
		}
		return err
	})
}

// continueRows answers the same batch (or decide) command given again for
// batch task t: a batch that ended is reported as it ended (and a record
// that a process killed after the last checkpoint left running is set
// right); one that was stopped (an operator stop, a signal) or whose
// process died part-way is continued to its end, as Resume continues it,
// so that the command's exit says 0 only once every row ran.
// A batch another live process runs is ErrConflict (busy), naming that
// process: this command runs nothing and reports no progress as its own.
func (s *Service) continueRows(ctx context.Context, t runs.TaskRecord) (*View, error) {
	// A live holder is told before anything is tried: taking the lease
	// would wait out the busy timeout when that process holds the
	// business file's write lock (it is inside a chunk, or paused there).
	if snap, err := s.batch.State(ctx, t.ID); err != nil || !snap.Done() {
		if l, _, err := s.runs.TaskLease(ctx, t.ID); err == nil && s.holderAlive(l) {
			return nil, rowsBusy(t.ID, l)
		}
	}
	v, err := s.resumeBatch(ctx, s.cmd, t, ResumeOptions{Task: t.ID, User: t.User})
	var held *runs.LeaseHeldError
	if errors.As(err, &held) {
		return nil, rowsBusy(t.ID, held.Lease)
	}
	return v, err
}

// rowsBusy is the error of a batch command given again while the process
// holding lease l runs batch task id: ErrConflict (exit 3), naming it.
func rowsBusy(id string, l runs.Lease) error {
	return errorf(Hint{Before: "wait for that process to end (", Do: DoWait, Task: id, After: "), then run the same command again"}, "%w: %w, so this command runs none of its rows", ErrConflict, &runs.LeaseHeldError{Task: id, Lease: l})
}

// batchInput is the input of batch task t's run as recorded with the task
// (for a run killed before its first checkpoint): its rows' count, what
// they are (by the input binding's prefix) and their drafts' validity.
func (s *Service) batchInput(ctx context.Context, t runs.TaskRecord) (BatchState, error) {
	total, err := s.runs.CountBatchRows(ctx, t.ID)
	if err != nil {
		return BatchState{}, err
	}
	ttl, err := s.runs.DraftTTL(ctx, t.ID)
	if err != nil {
		return BatchState{}, err
	}
	of := RowsOfOrders
	if strings.HasPrefix(t.Fingerprint, decidePrefix) {
		of = RowsOfDecisions
	}
	return BatchState{Batch: t.ID, User: t.User, Total: total, Chunk: DefaultBatchChunk, Of: of, TTLSeconds: int64(ttl / time.Second)}, nil
}

// answerToBatch is the error (ErrInvalid) of an answer given to batch task
// id (a batch or a decide run): resume's, and a decide row's that names
// one.
func answerToBatch(id string) error {
	return errorf(Hint{Before: "run", Do: DoResume, Task: id, After: "to continue it"}, "%w: %s is a batch; it asks no question", ErrInvalid, id)
}

// resumeBatch continues a batch with the runner r; a batch asks no
// question, so an answer is ErrInvalid.
func (s *Service) resumeBatch(ctx context.Context, r *runner, t runs.TaskRecord, o ResumeOptions) (*View, error) {
	if o.HasReason || o.Action != "" || o.DraftID != "" || o.InterruptID != "" {
		return nil, answerToBatch(t.ID)
	}
	snap, err := s.batch.State(ctx, t.ID)
	if err == nil && snap.Done() {
		// A process killed after the batch's last checkpoint and before it
		// let go of the task leaves the record running: set it right.
		v := s.batchView(ctx, t, snap)
		if err := r.repair(ctx, t, v); err != nil {
			return nil, err
		}
		return v, nil
	}
	if err := r.acquire(ctx, &t); err != nil {
		return nil, err
	}
	return s.driveBatch(ctx, r, t, func(ctx context.Context, g *flow.Runnable[BatchState]) error {
		_, err := g.Resume(ctx, t.ID, flow.Command{})
		if errors.Is(err, flow.ErrThreadNotFound) {
			// Created, then killed before its first checkpoint.
			in, ierr := s.batchInput(ctx, t)
			if ierr != nil {
				return ierr
			}
			_, err = g.Invoke(ctx, t.ID, in)
		}
		return err
	})
}

// driveBatch drives a batch's run with r (the command runner, or
// recover's), views its head; fn runs the batch graph g (fenced).
func (s *Service) driveBatch(ctx context.Context, r *runner, t runs.TaskRecord, fn func(ctx context.Context, g *flow.Runnable[BatchState]) error) (*View, error) {
	g := fencedGraph(s.batch, s.cps, t)
	if rec, ok := r.recoveries.Load(t.ID); ok && rec.(*recovery).rows != nil {
		// The chunks count the rows they find done before the crash.
		s.recovering.Store(t.ID, rec.(*recovery).rows)
		defer s.recovering.Delete(t.ID)
	}
	return r.drive(ctx, t, driven{
		do: func(ctx context.Context) error {
			// The graph runs on a context a stop does not cancel: the node
			// sees the stop (stopOf) between rows and ends its chunk with
			// the rows done, which are then checkpointed; the next
			// superstep's check (beforeStep) ends the run.
			s.stops.Store(t.ID, ctx)
			defer s.stops.Delete(t.ID)
			err := fn(context.WithoutCancel(ctx), g)
			// A row that fails fails the batch's one node, "rows": say which
			// batch and row, not which engine thread and node.
			var te *flow.TaskError
			if errors.As(err, &te) {
				return fmt.Errorf("batch %s: %w", t.ID, te.Err)
			}
			return err
		},
		view: func(ctx context.Context) (*View, error) {
			snap, err := headOrNil(s.batch.State(ctx, t.ID))
			if err != nil {
				return nil, err
			}
			return s.batchView(ctx, t, snap), nil
		},
		fail: func(ctx context.Context, f Failure) error {
			_, err := g.UpdateState(ctx, t.ID, BatchState{Failure: &f}, NodeGiveUp)
			return err
		},
	})
}

// batchView builds the View of a batch task from its head (nil before the
// first checkpoint, when the total comes from the batch's stored rows).
func (s *Service) batchView(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[BatchState]) *View {
	v := &View{Task: t.ID, User: t.User, Kind: nil, Next: []string{}, Interrupts: []InterruptView{}, Status: StatusRunning}
	v.Batch = &BatchProgress{Of: RowsOfOrders, Counts: map[string]int{}}
	if strings.HasPrefix(t.Fingerprint, decidePrefix) {
		v.Batch.Of = RowsOfDecisions
	}
	if snap == nil {
		if t.Status == StatusInterrupted {
			v.Status = StatusInterrupted
		}
		if n, err := s.runs.CountBatchRows(ctx, t.ID); err == nil {
			v.Batch.Total = n
		}
		return v
	}
	b := snap.Values
	v.Next = append(v.Next, snap.Next...)
	v.Batch.Position, v.Batch.Total = b.Position, b.Total
	if b.Counts != nil {
		v.Batch.Counts = maps.Clone(b.Counts)
	}
	switch {
	case snap.Done() && b.Failure != nil:
		v.Status, v.Stage, v.Error = StatusFailed, StageFailed, b.Failure
	case snap.Done():
		v.Status, v.Stage = StatusDone, StageBatchDone
	case t.Status == StatusInterrupted:
		v.Status = StatusInterrupted
	}
	return v
}
