package returns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// batchRows is the batch graph's node: it handles the next chunk of rows.
// Each row of a batch runs its return task to its first question or its
// end, each row of a decide run gives its task the row's decision; a row
// handled before (its task exists already, or its decision is recorded) is
// looked up (and its run continued if it was left running), never run
// twice. A row refused before it runs (a duplicate) is only counted. What
// each row came to is stored with the row (runs.RecordRowOutcomes) in the
// commit of the row's own writes. The chunk is written in two commits when
// the checkpoint store can buffer (chunkRows), else row by row (oneByOne).
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
	kind := kindOfRows(b)
	if bf, ok := s.cps.(flow.Bufferer); ok {
		done, err := s.chunkRows(ctx, stop, bf, b, kind, rows, counts)
		if err != nil {
			return BatchState{}, err
		}
		if done > 0 {
			return BatchState{Position: rows[done-1].RowNo, Counts: counts}, nil
		}
	}
	pos, err := s.oneByOne(ctx, stop, b, kind, rows, counts)
	if err != nil {
		return BatchState{}, err
	}
	return BatchState{Position: pos, Counts: counts}, nil
}

// refusedBefore is the outcome of a row refused before its batch task ran
// (a duplicate, stored handled by CreateBatchTTL), ok false for a row to
// run.
func refusedBefore(row runs.BatchRow) (runs.RowOutcome, bool) {
	if row.DuplicateOf == 0 {
		return runs.RowOutcome{}, false
	}
	return runs.RowOutcome{RowNo: row.RowNo, Outcome: row.Outcome, ErrorCode: row.ErrorCode, Error: row.Error}, true
}

// oneByOne runs rows one at a time with the row runner, each row's writes
// (and its outcome) in commits of their own, adds their outcomes to counts
// and returns the number of the last row handled.
func (s *Service) oneByOne(ctx, stop context.Context, b BatchState, kind rowKind, rows []runs.BatchRow, counts map[string]int) (int, error) {
	r := s.rowRunner()
	pos := b.Position
	for _, row := range rows {
		if err := stop.Err(); err != nil {
			if pos > b.Position {
				break // stopped: keep the rows done
			}
			return 0, err
		}
		out, done := refusedBefore(row)
		if !done {
			var err error
			out, err = s.rowWhenFree(ctx, stop, func() (runs.RowOutcome, error) {
				r.rows = rowsRun{} // a row tried again after a wait counts once
				return kind.run(ctx, r, b, row)
			})
			if (errors.Is(err, runs.ErrBusy) && kind.refuseBusy) || errors.Is(err, ErrInconsistent) {
				// A task whose two files disagree is refused before
				// anything of it is written, as resume refuses it: the
				// row reports it and the other rows go on.
				out, err = refusal(row.RowNo, err, s.words), nil
			}
			if err != nil {
				return 0, fmt.Errorf("row %d (task %s): %w", row.RowNo, row.TaskID, err)
			}
			if err := s.runs.RecordRowOutcomes(ctx, b.Batch, []runs.RowOutcome{out}); err != nil {
				return 0, err
			}
			s.countRows(b.Batch, r.rows)
			r.rows = rowsRun{}
		}
		counts[out.Outcome]++
		pos = row.RowNo
		s.rowDone(kind, pos, b.Total)
	}
	// The rows' task records and outcomes become durable before the
	// checkpoint that counts them as handled (their own checkpoints were
	// synced per row).
	if err := s.runs.Sync(ctx); err != nil {
		return 0, err
	}
	return pos, nil
}

// rowDone is the fault point and progress report after each row.
func (s *Service) rowDone(kind rowKind, pos, total int) {
	Fault(kind.name + ":after-row")
	if s.progress != nil {
		s.progress(pos, total)
	}
}

// chunkRows runs a chunk of rows with two commits in all: every row's
// business writes (task records, drafts, applications, timeline, the rows'
// outcomes) in one transaction of business.sqlite, committed durably
// first, then every row's checkpoints in one transaction of the checkpoint
// store (a flow.WriteBuffer from bf). The order keeps the storage rule that
// a checkpoint never names a draft or an application that could be lost.
// A crash before the first commit leaves nothing of the chunk; a crash
// between the two leaves task records without checkpoints (or ahead of
// them), which the row continues when the chunk runs again: a batch row
// from its input (the draft, keyed by task id, is reused), a decide row by
// answering again the question its head still asks (the application, keyed
// by draft, is reused). It adds the rows' outcomes to counts and returns
// how many of rows it handled (a prefix, see below); 0, with counts
// unchanged, when a row failed inside the transaction (everything of the
// chunk is rolled back): the caller then runs the rows one by one. err is
// set when ctx ended or a commit after the business one failed.
//
// The business transaction holds the file's write lock, which this
// process's own lease heartbeat needs too: the chunk ends early, after the
// rows done so far, once it has run for MaxChunkTime, so that the lease
// (DefaultLeaseTTL) never lapses under a live batch however loaded the
// machine.
func (s *Service) chunkRows(ctx, stop context.Context, bf flow.Bufferer, b BatchState, kind rowKind, rows []runs.BatchRow, counts map[string]int) (int, error) {
	buf := bf.NewBuffer()
	ids := make([]string, len(rows))
	for i, row := range rows {
		ids[i] = row.TaskID
	}
	// The rows run on a context that cannot be cancelled: with one that
	// can, the driver watches every statement with a goroutine of its own
	// (a third of a row's cost). A stop is seen between rows, by stop.
	rowCtx := context.WithoutCancel(ctx)
	var (
		outs  []runs.RowOutcome
		held  []string
		ran   rowsRun
		ended []runs.Progress
	)
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
		defer func() { held, ran, ended = r.held, r.rows, r.progress }()
		if kind.prepare != nil {
			if err := kind.prepare(rowCtx, r, b, rows); err != nil {
				return err
			}
		}
		if outs, err = s.runChunk(stop, r, b, kind, rows); err != nil {
			return err
		}
		// Until the checkpoints are stored too, each row's task is
		// recorded running under this process's lease, as a run of resume
		// is until it lets go: a crash between the commits leaves it
		// running with its holder gone, which every view and recover
		// read alike, never a record ahead of a run that lacks it.
		if err := r.runs.RecordProgressAll(rowCtx, s.me.owner, stillRunning(r.progress)); err != nil {
			return err
		}
		if log, ok := r.steps.(*stepLog); ok {
			if err := log.flush(rowCtx); err != nil {
				return err
			}
		}
		return r.runs.RecordRowOutcomes(rowCtx, b.Batch, outs)
	})
	if err != nil {
		buf.Discard()
		if stop.Err() != nil {
			return 0, stop.Err()
		}
		return 0, nil
	}
	done := len(outs)
	if done == 0 {
		return 0, stop.Err() // stopped before its first row: nothing to keep
	}
	Fault(kind.name + ":between-commits")
	if err := buf.Flush(rowCtx); errors.Is(err, flow.ErrConflict) {
		return 0, errorf(Hint{Before: "run", Do: DoResume, Task: b.Batch, After: "once it is done, which skips the rows it finished"},
			"rows %d-%d of %s were run at the same moment by another process (another batch over the same tasks?): %w (%v)", rows[0].RowNo, rows[done-1].RowNo, b.Batch, ErrConflict, err)
	} else if err != nil {
		return 0, fmt.Errorf("save checkpoints of rows %d-%d: %w", rows[0].RowNo, rows[done-1].RowNo, err)
	}
	Fault(kind.name + ":before-release")
	if err := s.letGo(rowCtx, ended, held); err != nil {
		return 0, fmt.Errorf("let go of rows %d-%d: %w", rows[0].RowNo, rows[done-1].RowNo, err)
	}
	for _, o := range outs {
		counts[o.Outcome]++
	}
	s.countRows(b.Batch, ran)
	return done, nil
}

// prepareOrderRows reads, for the chunk runner r, the records of the
// tasks that a batch's rows start (runner.ahead: most are new), what the
// timelines of those that exist hold (stepLog.preload) and the rows'
// orders with whether each has an open application (the business store's
// PreloadOrders): four statements or fewer for the chunk instead of four a
// row. Rows refused before they run are left out.
func prepareOrderRows(ctx context.Context, r *runner, b BatchState, rows []runs.BatchRow) error {
	orders := make([]string, 0, len(rows))
	seen := make(map[string]bool, len(rows))
	for _, row := range rows {
		if _, refused := refusedBefore(row); !refused && !seen[row.OrderID] {
			seen[row.OrderID] = true
			orders = append(orders, row.OrderID)
		}
	}
	if err := r.desk.PreloadOrders(ctx, b.User, orders); err != nil {
		return err
	}
	return prepareTasks(ctx, r, rows)
}

// prepareDecisions reads, for the chunk runner r, the records of the
// tasks that rows decide (runner.ahead), what their timelines hold
// (stepLog.preload), their decisions, drafts and applications (the
// business store's PreloadTasks) and their orders with whether each has an
// open application (PreloadOrders, per owner): nine statements or so for
// the chunk instead of about twelve a row. Rows refused before they run
// are left out.
func prepareDecisions(ctx context.Context, r *runner, _ BatchState, rows []runs.BatchRow) error {
	if err := prepareTasks(ctx, r, rows); err != nil {
		return err
	}
	ids := make([]string, 0, len(r.ahead))
	orders := map[string][]string{} // owner → order ids, each once
	seen := map[[2]string]bool{}
	for _, row := range rows {
		rec := r.ahead[row.TaskID]
		if rec == nil || rec.Kind != runs.KindReturn {
			continue
		}
		ids = append(ids, rec.ID)
		if k := [2]string{rec.User, rec.OrderID}; !seen[k] {
			seen[k] = true
			orders[rec.User] = append(orders[rec.User], rec.OrderID)
		}
	}
	if err := r.desk.PreloadTasks(ctx, ids); err != nil {
		return err
	}
	for _, owner := range slices.Sorted(maps.Keys(orders)) {
		if err := r.desk.PreloadOrders(ctx, owner, orders[owner]); err != nil {
			return err
		}
	}
	return nil
}

// prepareTasks reads the records of the tasks of rows (runner.ahead) and
// what the timelines of the return tasks among them hold
// (stepLog.preload). Rows refused before they run are left out.
func prepareTasks(ctx context.Context, r *runner, rows []runs.BatchRow) error {
	ids := make([]string, 0, len(rows))
	for _, row := range rows {
		if _, refused := refusedBefore(row); !refused {
			ids = append(ids, row.TaskID)
		}
	}
	recs, err := r.runs.TasksIn(ctx, ids)
	if err != nil {
		return err
	}
	r.ahead = make(readAhead, len(ids))
	returns := make([]string, 0, len(recs))
	for _, id := range ids {
		rec, ok := recs[id]
		if !ok {
			r.ahead[id] = nil
			continue
		}
		r.ahead[id] = &rec
		if rec.Kind == runs.KindReturn {
			returns = append(returns, id)
		}
	}
	log, ok := r.steps.(*stepLog)
	if !ok || len(returns) == 0 {
		return nil
	}
	tallies, err := r.runs.StepTallies(ctx, returns)
	if err != nil {
		return err
	}
	log.preload(tallies)
	return nil
}

// runChunk runs rows with the chunk runner r inside the chunk's
// transaction and returns what each row it ran came to, until the rows
// end, stop ends (an operator stop, a signal: the rows done so far are
// kept) or the chunk has run for MaxChunkTime. A row that fails (not a
// refusal: a storage error, a task busy in another process) fails the
// chunk.
func (s *Service) runChunk(stop context.Context, r *runner, b BatchState, kind rowKind, rows []runs.BatchRow) ([]runs.RowOutcome, error) {
	rowCtx := context.WithoutCancel(stop)
	began := time.Now()
	outs := make([]runs.RowOutcome, 0, len(rows))
	for i, row := range rows {
		if stop.Err() != nil || (i > 0 && time.Since(began) > MaxChunkTime) {
			// Stopped, or long enough: the rows done so far are committed,
			// so a stop redoes none of them.
			break
		}
		out, done := refusedBefore(row)
		if !done {
			var err error
			if out, err = kind.run(rowCtx, r, b, row); err != nil {
				return nil, fmt.Errorf("row %d (task %s): %w", row.RowNo, row.TaskID, err)
			}
		}
		outs = append(outs, out)
		s.rowDone(kind, row.RowNo, b.Total)
	}
	return outs, nil
}
