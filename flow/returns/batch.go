package returns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"assistant/flow"
	"assistant/runs"
)

// Batch limits and defaults.
const (
	// MaxChunkCommit bounds the rows one chunk writes in one transaction
	// (a larger --chunk checkpoints more often): it bounds the memory a
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
	return s
}

// BatchProgress is the batch part of a View.
type BatchProgress struct {
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
}

// StartBatch creates a batch task with its rows and runs it; the same batch
// id with the same file prints its progress, with another file is
// ErrConflict. Errors: ErrInvalid, ErrConflict, storage errors.
func (s *Service) StartBatch(ctx context.Context, o BatchOptions) (*View, error) {
	if err := ValidTaskID(o.Batch); err != nil {
		return nil, fmt.Errorf("%w: batch id: %v", ErrInvalid, err)
	}
	fp := "batch:" + o.Fingerprint
	t, err := s.runs.Task(ctx, o.Batch)
	if err == nil {
		if t.User != o.User || t.Fingerprint != fp {
			return nil, fmt.Errorf("task %s already exists with other input: %w (choose another batch id, or run `assistant show %s`)", o.Batch, ErrConflict, o.Batch)
		}
		v, err := s.Show(ctx, o.Batch, o.User)
		if err == nil && v.Status == StatusDone {
			// Killed after its last checkpoint, before it let go of the
			// task, the record says running: set it right.
			err = s.cmd.repair(ctx, t, v)
		}
		if err != nil {
			return nil, err
		}
		return v, nil
	}
	if !errors.Is(err, runs.ErrNotFound) {
		return nil, fmt.Errorf("start batch %s: %w", o.Batch, err)
	}
	t = runs.TaskRecord{ID: o.Batch, User: o.User, Fingerprint: fp, Status: StatusRunning, Kind: runs.KindBatch, Lease: s.cmd.lease()}
	t.Lease.Epoch = 1 // CreateBatch's
	if err := s.runs.CreateBatch(ctx, t, t.Lease, o.Rows); errors.Is(err, runs.ErrTaskExists) {
		return nil, fmt.Errorf("task %s was created by another process at the same moment: %w", o.Batch, ErrConflict)
	} else if err != nil {
		return nil, err
	}
	chunk := o.Chunk
	if chunk <= 0 {
		chunk = DefaultBatchChunk
	}
	return s.driveBatch(ctx, t, func(ctx context.Context, g *flow.Runnable[BatchState]) error {
		_, err := g.Invoke(ctx, t.ID, BatchState{Batch: t.ID, User: t.User, Total: len(o.Rows), Chunk: chunk})
		if errors.Is(err, flow.ErrThreadExists) {
			_, err = g.Resume(ctx, t.ID, flow.Command{})
		}
		return err
	})
}

// resumeBatch continues a batch; a batch asks no question, so an answer is
// ErrInvalid.
func (s *Service) resumeBatch(ctx context.Context, t runs.TaskRecord, o ResumeOptions) (*View, error) {
	if o.HasReason || o.Action != "" || o.DraftID != "" || o.InterruptID != "" {
		return nil, fmt.Errorf("%w: %s is a batch; it asks no question (run `assistant resume %s` to continue it)", ErrInvalid, t.ID, t.ID)
	}
	snap, err := s.batch.State(ctx, t.ID)
	if err == nil && snap.Done() {
		// A process killed after the batch's last checkpoint and before it
		// let go of the task leaves the record running: set it right.
		v := s.batchView(ctx, t, snap)
		if err := s.cmd.repair(ctx, t, v); err != nil {
			return nil, err
		}
		return v, nil
	}
	if err := s.cmd.acquire(ctx, &t); err != nil {
		return nil, err
	}
	return s.driveBatch(ctx, t, func(ctx context.Context, g *flow.Runnable[BatchState]) error {
		_, err := g.Resume(ctx, t.ID, flow.Command{})
		if errors.Is(err, flow.ErrThreadNotFound) {
			// Created, then killed before its first checkpoint.
			total, cerr := s.runs.CountBatchRows(ctx, t.ID)
			if cerr != nil {
				return cerr
			}
			_, err = g.Invoke(ctx, t.ID, BatchState{Batch: t.ID, User: t.User, Total: total, Chunk: DefaultBatchChunk})
		}
		return err
	})
}

// driveBatch drives a batch's run with the command runner's policy and
// views its head. fn runs the batch graph g (fenced, as graphFor).
func (s *Service) driveBatch(ctx context.Context, t runs.TaskRecord, fn func(ctx context.Context, g *flow.Runnable[BatchState]) error) (*View, error) {
	g := fencedGraph(s.batch, s.cps, t)
	return s.cmd.drive(ctx, t, driven{
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
	v.Batch = &BatchProgress{Counts: map[string]int{}}
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
