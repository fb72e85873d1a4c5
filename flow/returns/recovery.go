package returns

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"assistant/flow"
	"assistant/runs"
)

// RecoveryView is what continuing a crashed run cost (docs/recovery.md
// "Recovery figures"): how long the run was left without a live holder,
// how long this recovery took, and how much of the work done before the
// crash was kept or had to be done again. A jump in steps_redone across
// runs of scripts/faults.sh means the checkpoint policy changed.
type RecoveryView struct {
	// SinceCrashMS is the time from the crashed holder's last heartbeat
	// (its lease's expiry less DefaultLeaseTTL) to this recovery's start.
	SinceCrashMS int64 `json:"since_crash_ms"`
	// RecoveryMS is the wall time of the recovery: from taking the task
	// over to the end of its run.
	RecoveryMS int64 `json:"recovery_ms"`
	// StepsKept counts the steps finished before the crash whose work the
	// last checkpoint held: not run again.
	StepsKept int `json:"steps_kept"`
	// StepsRedone counts the steps finished before the crash whose work no
	// checkpoint held (it ended after the last one was written): run again.
	StepsRedone int `json:"steps_redone"`
	// StepsInterrupted counts the steps the crash cut short (left
	// running); they are run again too, but were never finished work.
	StepsInterrupted int `json:"steps_interrupted"`
	// RowsKept counts, for a batch or decide run, the rows handled before
	// the crash that were not run again: those its last checkpoint counted,
	// and those the recovery found finished by their own runs and only
	// looked up. Omitted for a return task.
	RowsKept *int `json:"rows_kept,omitempty"`
	// RowsRedone counts, for a batch or decide run, the rows that ran
	// before the crash and ran again after it: the recovery found their
	// work in the business store (a row's task record and draft, a
	// decision in the trail) without the run that made it (lost with the
	// chunk's checkpoint commit), and ran that run again. Rows rolled back
	// with a chunk's business transaction left no work behind: they are
	// the chunk step the crash cut (StepsInterrupted). Omitted for a
	// return task.
	RowsRedone *int `json:"rows_redone,omitempty"`
	// RedoRatio is the share of finished work done twice; 0 when nothing
	// had finished. For a return task it is StepsRedone / (StepsKept +
	// StepsRedone); for a batch or decide run, whose steps are chunks of
	// rows, RowsRedone / (RowsKept + RowsRedone).
	RedoRatio float64 `json:"redo_ratio"`
}

// recovery is a crashed run being taken over: what is known when the lease
// is acquired, before the run goes on.
type recovery struct {
	started  time.Time
	lastSeen time.Time // the crashed holder's last heartbeat
	before   []runs.TimelineStep
	headAt   time.Time // when the head the run goes on from was written
	// rows is the row tally of a batch or decide run's recovery; nil for
	// a return task.
	rows *rowTally
}

// rowTally counts the rows of a batch or decide run's recovery as its
// chunks commit them (countRows): atomic, as the report reads it after
// the run's goroutines end.
type rowTally struct {
	atHead int // rows the head the recovery goes on from counted handled
	kept   atomic.Int64
	redone atomic.Int64
}

// rowsRun is what a runner's rows came to, for a recovery's tally: rows
// found finished by their own runs (looked up), and rows whose work a
// crashed run left in the business store without its run (run again).
type rowsRun struct{ lookedUp, ranAgain int }

// beginRecovery notes, when the task was left running by a holder that is
// gone (prev is the status AcquireLease found), what the recovery starts
// from; drive reports it in the View. It reads the timeline as the crash
// left it (before acquire settles its running steps), with the steps that
// head shows finished (settlement) taken as ended when head was written.
func (r *runner) beginRecovery(ctx context.Context, t runs.TaskRecord, prev string, head *flow.Checkpoint, now time.Time) {
	if prev != StatusRunning || r.policy.release == keepLease {
		return
	}
	before, err := r.runs.Steps(ctx, t.ID)
	if err != nil {
		return // the figures are a report; the recovery goes on without them
	}
	rec := &recovery{started: now, before: before}
	if t.Kind == runs.KindBatch {
		rec.rows = &rowTally{}
		var b struct {
			Position int `json:"position"`
		}
		if head != nil && json.Unmarshal(head.Values, &b) == nil {
			rec.rows.atHead = b.Position
		}
	}
	if !t.Lease.Until.IsZero() {
		rec.lastSeen = t.Lease.Until.Add(-DefaultLeaseTTL)
	}
	if head != nil {
		rec.headAt = head.CreatedAt
		how := settlement(head)
		for i, st := range rec.before {
			if status, _, ok := how.Ended(st); ok {
				rec.before[i].Status, rec.before[i].EndedAt = status, head.CreatedAt
			}
		}
	}
	r.recoveries.Store(t.ID, rec)
}

// report is what the recovery came to, at now.
func (rec *recovery) report(now time.Time) *RecoveryView {
	v := &RecoveryView{RecoveryMS: now.Sub(rec.started).Milliseconds()}
	if !rec.lastSeen.IsZero() && rec.started.After(rec.lastSeen) {
		v.SinceCrashMS = rec.started.Sub(rec.lastSeen).Milliseconds()
	}
	for _, st := range rec.before {
		switch {
		case st.Status == runs.StepRunning:
			v.StepsInterrupted++
		case st.Status == runs.StepDone && !rec.headAt.IsZero() && st.EndedAt.After(rec.headAt):
			v.StepsRedone++
		case st.Status == runs.StepDone || st.Status == runs.StepWaiting:
			v.StepsKept++
		}
	}
	if rec.rows != nil {
		kept, redone := rec.rows.atHead+int(rec.rows.kept.Load()), int(rec.rows.redone.Load())
		v.RowsKept, v.RowsRedone = &kept, &redone
		if n := kept + redone; n > 0 {
			v.RedoRatio = float64(redone) / float64(n)
		}
		return v
	}
	if n := v.StepsKept + v.StepsRedone; n > 0 {
		v.RedoRatio = float64(v.StepsRedone) / float64(n)
	}
	return v
}

// countRows adds what rows committed by batch's chunk came to to the
// tally of batch's recovery, when this Service drives one (driveBatch);
// rows of a normal run are not counted.
func (s *Service) countRows(batch string, n rowsRun) {
	v, ok := s.recovering.Load(batch)
	if !ok || (n == rowsRun{}) {
		return
	}
	t := v.(*rowTally)
	t.kept.Add(int64(n.lookedUp))
	t.redone.Add(int64(n.ranAgain))
}
