package returns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"assistant/flow"
	"assistant/runs"
)

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
	v := &View{Task: t.ID, User: t.User, Kind: nil, Next: []string{}, Interrupts: []InterruptView{}, AwaitingSubmit: []DecisionView{}, Actions: []string{}, Status: StatusRunning}
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
