package returns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// batchRows is the batch graph's node: it handles the next chunk of rows.
// Each row's return task runs to its first question or its end; a row whose
// task exists already is looked up (and continued if it was left running),
// never started twice. The chunk is written in two commits when the
// checkpoint store can buffer (chunkRows), else row by row (oneByOne).
func (s *Service) batchRows(ctx context.Context, b BatchState) (BatchState, error) {
	stop := s.stopOf(ctx, b.Batch)
	chunk := b.Chunk
	if chunk <= 0 {
		chunk = DefaultBatchChunk
	}
	rows, err := s.runs.BatchRows(ctx, b.Batch, b.Position, min(chunk, MaxChunkCommit))
	if err != nil {
		return BatchState{}, err
	}
	counts := maps.Clone(b.Counts)
	if counts == nil {
		counts = map[string]int{}
	}
	if len(rows) == 0 {
		return BatchState{Position: b.Total, Counts: counts}, nil // rows vanished: nothing left to do
	}
	if bf, ok := s.cps.(flow.Bufferer); ok {
		done, err := s.chunkRows(ctx, stop, bf, b, rows, counts)
		if err != nil {
			return BatchState{}, err
		}
		if done > 0 {
			return BatchState{Position: rows[done-1].RowNo, Counts: counts}, nil
		}
	}
	pos, err := s.oneByOne(ctx, stop, b, rows, counts)
	if err != nil {
		return BatchState{}, err
	}
	return BatchState{Position: pos, Counts: counts}, nil
}

// oneByOne runs rows one at a time with the row runner, each row's writes
// in commits of their own, adds their outcomes to counts and returns the
// number of the last row handled.
func (s *Service) oneByOne(ctx, stop context.Context, b BatchState, rows []runs.BatchRow, counts map[string]int) (int, error) {
	r := s.rowRunner()
	pos := b.Position
	for _, row := range rows {
		if err := stop.Err(); err != nil {
			if pos > b.Position {
				break // stopped: keep the rows done
			}
			return 0, err
		}
		outcome, err := s.rowWhenFree(ctx, stop, r, b.User, row)
		if err != nil {
			return 0, fmt.Errorf("row %d (task %s): %w", row.RowNo, row.TaskID, err)
		}
		counts[outcome]++
		pos = row.RowNo
		s.rowDone(pos, b.Total)
	}
	// The rows' task records become durable before the checkpoint that
	// counts them as handled (their own checkpoints were synced per row).
	if err := s.runs.Sync(ctx); err != nil {
		return 0, err
	}
	return pos, nil
}

// rowDone is the fault point and progress report after each batch row.
func (s *Service) rowDone(pos, total int) {
	Fault("batch:after-row")
	if s.progress != nil {
		s.progress(pos, total)
	}
}

// chunkRows runs a chunk of rows with two commits in all: every row's
// business writes (task records, drafts, timeline) in one transaction of
// business.sqlite, committed durably first, then every row's checkpoints in
// one transaction of the checkpoint store (a flow.WriteBuffer from bf). The
// order keeps the storage rule that a checkpoint never names a draft that
// could be lost. A crash before the first commit leaves nothing of the
// chunk; a crash between the two leaves task records without checkpoints,
// which batchRow continues (from their input; the draft, keyed by task id,
// is reused) when the chunk runs again. It adds the rows' outcomes to counts
// and returns how many of rows it handled (a prefix, see below); 0, with
// counts unchanged, when a row failed inside the transaction (everything of
// the chunk is rolled back): the caller then runs the rows one by one. err
// is set when ctx ended or a commit after the business one failed.
//
// The business transaction holds the file's write lock, which this
// process's own lease heartbeat needs too: the chunk ends early, after the
// rows done so far, once it has run for MaxChunkTime, so that the lease
// (DefaultLeaseTTL) never lapses under a live batch however loaded the
// machine.
func (s *Service) chunkRows(ctx, stop context.Context, bf flow.Bufferer, b BatchState, rows []runs.BatchRow, counts map[string]int) (int, error) {
	buf := bf.NewBuffer()
	ids := make([]string, len(rows))
	for i, row := range rows {
		ids[i] = row.TaskID
	}
	// The rows run on a context that cannot be cancelled: with one that
	// can, the driver watches every statement with a goroutine of its own
	// (a third of a row's cost). A stop is seen between rows, by stop.
	rowCtx := context.WithoutCancel(ctx)
	outcomes := map[string]int{}
	var held []string
	err := s.desk.InTx(rowCtx, func(tx *business.Store) error {
		// The rows' heads are read once the business file's write lock is
		// held: another batch over the same tasks commits its rows' records
		// under that lock and keeps their leases until its checkpoints are
		// stored, so what is read now is either stored or still held.
		if err := buf.Preload(rowCtx, ids); err != nil {
			return err
		}
		r, err := s.chunkRunner(tx, buf)
		if err != nil {
			return err
		}
		defer func() { held = r.held }()
		return s.runChunk(stop, r, b, rows, outcomes)
	})
	if err != nil {
		buf.Discard()
		if stop.Err() != nil {
			return 0, stop.Err()
		}
		return 0, nil
	}
	done := 0
	for _, n := range outcomes {
		done += n
	}
	if done == 0 {
		return 0, stop.Err() // stopped before its first row: nothing to keep
	}
	Fault("batch:between-commits")
	if err := buf.Flush(rowCtx); errors.Is(err, flow.ErrConflict) {
		return 0, fmt.Errorf("rows %d-%d of batch %s were run at the same moment by another process (another batch over the same tasks?); run `assistant resume %s` once it is done, which skips the rows it finished: %w (%v)", rows[0].RowNo, rows[done-1].RowNo, b.Batch, b.Batch, ErrConflict, err)
	} else if err != nil {
		return 0, fmt.Errorf("save checkpoints of rows %d-%d: %w", rows[0].RowNo, rows[done-1].RowNo, err)
	}
	Fault("batch:before-release")
	if err := s.runs.ReleaseLeases(rowCtx, s.me.owner, held); err != nil {
		return 0, fmt.Errorf("let go of rows %d-%d: %w", rows[0].RowNo, rows[done-1].RowNo, err)
	}
	for k, n := range outcomes {
		counts[k] += n
	}
	return done, nil
}

// runChunk runs rows with the chunk runner r inside the chunk's
// transaction, counting each row's outcome in outcomes, until the rows end,
// stop ends (an operator stop, a signal: the rows done so far are kept) or
// the chunk has run for MaxChunkTime.
func (s *Service) runChunk(stop context.Context, r *runner, b BatchState, rows []runs.BatchRow, outcomes map[string]int) error {
	rowCtx := context.WithoutCancel(stop)
	began := time.Now()
	for i, row := range rows {
		if stop.Err() != nil || (i > 0 && time.Since(began) > MaxChunkTime) {
			// Stopped, or long enough: the rows done so far are committed,
			// so a stop redoes none of them.
			break
		}
		outcome, err := r.batchRow(rowCtx, b.User, row)
		if err != nil {
			return fmt.Errorf("row %d (task %s): %w", row.RowNo, row.TaskID, err)
		}
		outcomes[outcome]++
		s.rowDone(row.RowNo, b.Total)
	}
	return nil
}

// batchRow runs one row with r and returns its outcome for the counts: the
// row task's stage, "not_found" for an unknown order, "conflict" for a task
// id already used with other input.
func (r *runner) batchRow(ctx context.Context, user string, row runs.BatchRow) (string, error) {
	o := StartOptions{Task: row.TaskID, User: user, Order: row.OrderID, Reason: row.Reason, TTL: business.DefaultDraftTTL}
	t, err := r.runs.Task(ctx, row.TaskID)
	if errors.Is(err, runs.ErrNotFound) {
		// ParseBatch validated the row; the task is known to be new.
		v, err := r.create(ctx, o, fingerprint(o))
		switch {
		case errors.Is(err, ErrNotFound):
			return "not_found", nil
		case errors.Is(err, ErrConflict):
			return "conflict", nil
		case err != nil:
			return "", err
		}
		return v.Stage, nil
	}
	if err != nil {
		return "", err
	}
	if t.User != user || t.Fingerprint != fingerprint(o) {
		return "conflict", nil
	}
	return r.existingRow(ctx, t)
}

// existingRow handles a row whose task exists: a run left part-way by a
// crash or a stop of this batch is continued; a row handled before is
// counted by its stage.
func (r *runner) existingRow(ctx context.Context, t runs.TaskRecord) (string, error) {
	if t.Status != StatusRunning && t.Status != StatusInterrupted {
		// A chunk whose business commit landed and whose checkpoint commit
		// did not (a crash between them) left records without a run.
		if _, err := r.graph.State(ctx, t.ID); errors.Is(err, flow.ErrThreadNotFound) {
			t.Status = StatusRunning
		}
	}
	if t.Status == StatusRunning || t.Status == StatusInterrupted {
		v, err := r.resume(ctx, t, ResumeOptions{Task: t.ID, User: t.User})
		if err != nil {
			return "", err
		}
		return v.Stage, nil
	}
	// Handled before, by a batch process that died before it let go of its
	// rows (between its chunk's last commits): let go of them now.
	if l := t.Lease; l.Owner != "" && !r.svc.holderAlive(l) {
		if err := r.runs.ReleaseLeases(ctx, l.Owner, []string{t.ID}); err != nil {
			return "", err
		}
	}
	return t.Stage, nil
}

// stopOf returns the context whose end stops batch's rows: the run's own,
// which a stop or a signal cancels (driveBatch keeps it), or ctx when the
// batch is not driven here. The batch graph itself runs on a context that
// is not cancelled, so the rows a stopped chunk finished and the checkpoint
// that counts them are still written.
func (s *Service) stopOf(ctx context.Context, batch string) context.Context {
	if v, ok := s.stops.Load(batch); ok {
		return v.(context.Context)
	}
	return ctx
}

// rowWait bounds how long a batch waits for a row another live process
// holds (another batch storing the same task, say): that holder keeps a
// row at most its chunk's time and the commit's busy wait, or a lease.
const rowWait = DefaultLeaseTTL + MaxChunkTime + business.DefaultBusyTimeout

// rowWhenFree runs row with r, waiting while another live process holds
// its task (polling every DefaultHeartbeat, for at most rowWait), so that
// two batches over the same tasks both finish instead of the later one
// failing. Errors: r.batchRow's; stop's when it ends while waiting.
func (s *Service) rowWhenFree(ctx, stop context.Context, r *runner, user string, row runs.BatchRow) (string, error) {
	deadline := time.Now().Add(rowWait)
	for {
		outcome, err := r.batchRow(ctx, user, row)
		if !errors.Is(err, runs.ErrBusy) || time.Now().After(deadline) {
			return outcome, err
		}
		select {
		case <-stop.Done():
			return "", stop.Err()
		case <-time.After(DefaultHeartbeat):
		}
	}
}
