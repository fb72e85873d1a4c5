package returns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

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
	if err := s.cmd.fenceNew(ctx, t.ID); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.id, err)
	}
	ttl := o.ttl
	if ttl == 0 {
		ttl = business.DefaultDraftTTL
	}
	if err := s.runs.CreateBatchEach(ctx, t, t.Lease, ttl, o.each); errors.Is(err, runs.ErrTaskExists) {
		return nil, fmt.Errorf("task %s was created by another process at the same moment: %w", o.id, ErrConflict)
	} else if err != nil {
		return nil, err
	}
	Fault("batch:after-record")
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
