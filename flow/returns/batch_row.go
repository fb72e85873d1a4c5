package returns

import (
	"context"
	"errors"
	"fmt"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// rowKind is how the rows of one kind of batch task run: a batch's rows
// start return tasks (batchRow), a decide run's rows answer them
// (decideRow). The fault points after a row and around a chunk's commits
// carry the kind's name ("batch:after-row", "decide:after-row").
type rowKind struct {
	name string // batch or decide
	run  func(ctx context.Context, r *runner, b BatchState, row runs.BatchRow) (runs.RowOutcome, error)
	// prepare reads for the chunk runner r, in a few statements, what the
	// chunk's rows of batch b would read one at a time; nil: nothing.
	prepare func(ctx context.Context, r *runner, b BatchState, rows []runs.BatchRow) error
	// refuseBusy reports a row whose task another live process still
	// holds after rowWait as refused (conflict) rather than failing the
	// run: a decision that cannot be given now is one row's refusal.
	refuseBusy bool
}

var (
	orderRows = rowKind{name: "batch", prepare: prepareOrderRows, run: func(ctx context.Context, r *runner, b BatchState, row runs.BatchRow) (runs.RowOutcome, error) {
		return r.batchRow(ctx, b, row)
	}}
	decisionRows = rowKind{name: "decide", refuseBusy: true, prepare: prepareDecisions, run: func(ctx context.Context, r *runner, b BatchState, row runs.BatchRow) (runs.RowOutcome, error) {
		return r.decideRow(ctx, b.Batch, b.User, row)
	}}
)

// kindOfRows is the rowKind of b's rows.
func kindOfRows(b BatchState) rowKind {
	if b.rowsOf() == RowsOfDecisions {
		return decisionRows
	}
	return orderRows
}

// batchRow runs one batch row with r and returns what it came to: the row
// task's stage (with the error of a failed one), "not_found" for an
// unknown order, "conflict" for a task id already used with other input.
func (r *runner) batchRow(ctx context.Context, b BatchState, row runs.BatchRow) (runs.RowOutcome, error) {
	o := StartOptions{Task: row.TaskID, User: b.User, Order: row.OrderID, Reason: row.Reason, TTL: b.ttl()}
	t, err := r.knownTask(ctx, row.TaskID)
	if errors.Is(err, runs.ErrNotFound) {
		// ParseBatch validated the row; the task is known to be new.
		v, err := r.create(ctx, o, fingerprint(o))
		switch {
		case errors.Is(err, ErrNotFound):
			return runs.RowOutcome{RowNo: row.RowNo, Outcome: CodeNotFound, ErrorCode: CodeNotFound,
				Error: fmt.Sprintf("order %s not found for user %s; no task was made", row.OrderID, b.User)}, nil
		case errors.Is(err, ErrConflict):
			// Made meanwhile by another command: whose it is decides
			// the words, as below.
			if t, rerr := r.runs.Task(ctx, row.TaskID); rerr == nil {
				return r.taken(ctx, row, &t, b.User), nil
			}
			return r.taken(ctx, row, nil, b.User), nil
		case err != nil:
			return runs.RowOutcome{}, err
		}
		return stageOutcome(row.RowNo, v.Stage, v.Error), nil
	}
	if err != nil {
		return runs.RowOutcome{}, err
	}
	if t.User != b.User || t.Fingerprint != fingerprint(o) {
		return r.taken(ctx, row, &t, b.User), nil
	}
	return r.existingRow(ctx, row.RowNo, t)
}

// knownTask returns the record of task id, from what the chunk read
// ahead (runner.ahead) once, else from the store. Errors: the store's;
// runs.ErrNotFound for an unknown task.
func (r *runner) knownTask(ctx context.Context, id string) (runs.TaskRecord, error) {
	t, read := r.ahead.take(id)
	if !read {
		return r.runs.Task(ctx, id)
	}
	if t == nil {
		return runs.TaskRecord{}, fmt.Errorf("task %s: %w", id, runs.ErrNotFound)
	}
	return *t, nil
}

// taken is the outcome of a batch row of user whose task id is another
// task's, t (nil when its record cannot be read), in the words start's
// idTaken uses: user's own task "already exists with other input";
// another user's id "is already taken", offering show only to a person
// who may see that task, and saying nothing of its input. Its error is
// worded by the Service's Wording.
func (r *runner) taken(ctx context.Context, row runs.BatchRow, t *runs.TaskRecord, user string) runs.RowOutcome {
	out := runs.RowOutcome{RowNo: row.RowNo, Outcome: CodeConflict, ErrorCode: CodeConflict}
	var err error
	switch {
	case t != nil && t.User == user:
		err = errorf(Hint{}, "task %s already exists with other input (order, reason or %s); the row was not run", row.TaskID, InputDraftTTL)
	case t != nil && r.visible(ctx, *t, user):
		err = errorf(Hint{Before: "choose another task id, or see that task with", Do: DoShow, Task: row.TaskID}, "task id %s is already taken; the row was not run", row.TaskID)
	default:
		err = errorf(Hint{Before: "choose another task id"}, "task id %s is already taken; the row was not run", row.TaskID)
	}
	out.Error = Say(err, r.svc.words)
	return out
}

// visible reports whether user may see task t (mayDecideRecord); a store
// error counts as not.
func (r *runner) visible(ctx context.Context, t runs.TaskRecord, user string) bool {
	_, ok, err := mayDecideRecord(ctx, r.desk, t, user)
	return err == nil && ok
}

// stageOutcome is the outcome of a row whose task reached stage, with
// failure f (nil unless it failed).
func stageOutcome(rowNo int, stage string, f *Failure) runs.RowOutcome {
	o := runs.RowOutcome{RowNo: rowNo, Outcome: stage}
	if f != nil {
		o.ErrorCode, o.Error = f.Code, f.Message
	}
	return o
}

// existingRow handles batch row rowNo whose task t exists: a run left
// part-way by a crash or a stop of this batch is continued; a row handled
// before is reported by its stage (and a failed one by its error).
func (r *runner) existingRow(ctx context.Context, rowNo int, t runs.TaskRecord) (runs.RowOutcome, error) {
	if t.Status == StatusRunning && t.Lease.Owner != "" && !r.svc.holderAlive(t.Lease) {
		// A chunk records its rows running until its checkpoints are
		// stored and it lets go of them: a batch that died between its
		// chunk's commits left a row whose run goes again (no checkpoint:
		// a row done twice, RecoveryView), or, after both, one whose run
		// is stored and is only looked up (its resume sets the record
		// right and runs nothing).
		if _, err := r.graph.State(ctx, t.ID); errors.Is(err, flow.ErrThreadNotFound) {
			r.rows.ranAgain++
		} else if err == nil {
			r.rows.lookedUp++
		}
	} else if t.Status != StatusRunning && t.Status != StatusInterrupted {
		// A record without a run: an older checkpoints.sqlite put back,
		// or a chunk of an older build whose business commit landed and
		// whose checkpoint commit did not.
		snap, err := r.graph.State(ctx, t.ID)
		switch {
		case errors.Is(err, flow.ErrThreadNotFound):
			// Its work (the record, the draft) is stored, its run is not:
			// the run goes again, a row done twice (RecoveryView).
			t.Status = StatusRunning
			r.rows.ranAgain++
		case err == nil:
			// A run that claims more than the business file holds (an
			// older business.sqlite put back) is inconsistent, as start
			// reports it, not the record's stage.
			if err := r.reconcile(ctx, t.ID, snap); err != nil {
				return runs.RowOutcome{}, err
			}
		}
	}
	if t.Status == StatusRunning || t.Status == StatusInterrupted {
		v, err := r.resume(ctx, t, ResumeOptions{Task: t.ID, User: t.User})
		if err != nil {
			return runs.RowOutcome{}, err
		}
		return stageOutcome(rowNo, v.Stage, v.Error), nil
	}
	r.rows.lookedUp++
	// Handled before, by a batch process that died before it let go of its
	// rows (between its chunk's last commits): let go of them now.
	if l := t.Lease; l.Owner != "" && !r.svc.holderAlive(l) {
		if err := r.runs.ReleaseLeases(ctx, l.Owner, []string{t.ID}); err != nil {
			return runs.RowOutcome{}, err
		}
	}
	if t.Stage != StageFailed {
		return stageOutcome(rowNo, t.Stage, nil), nil
	}
	v, err := r.show(ctx, t.ID)
	if err != nil {
		return runs.RowOutcome{}, err
	}
	return stageOutcome(rowNo, t.Stage, v.Error), nil
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

// rowWhenFree runs a row with run, waiting while another live process
// holds its task (polling every DefaultHeartbeat, for at most rowWait), so
// that two batches over the same tasks both finish instead of the later
// one failing. Errors: run's (runs.ErrBusy once rowWait passed); stop's
// when it ends while waiting.
func (s *Service) rowWhenFree(ctx, stop context.Context, run func() (runs.RowOutcome, error)) (runs.RowOutcome, error) {
	deadline := time.Now().Add(rowWait)
	for {
		out, err := run()
		if !errors.Is(err, runs.ErrBusy) || time.Now().After(deadline) {
			return out, err
		}
		select {
		case <-stop.Done():
			return runs.RowOutcome{}, stop.Err()
		case <-time.After(DefaultHeartbeat):
		}
	}
}
