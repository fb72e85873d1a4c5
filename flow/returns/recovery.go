package returns

import (
	"context"
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
	// RedoRatio is StepsRedone / (StepsKept + StepsRedone): the share of
	// finished work done twice; 0 when nothing had finished.
	RedoRatio float64 `json:"redo_ratio"`
}

// recovery is a crashed run being taken over: what is known when the lease
// is acquired, before the run goes on.
type recovery struct {
	started  time.Time
	lastSeen time.Time // the crashed holder's last heartbeat
	before   []runs.TimelineStep
	headAt   time.Time // when the head the run goes on from was written
}

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
	if n := v.StepsKept + v.StepsRedone; n > 0 {
		v.RedoRatio = float64(v.StepsRedone) / float64(n)
	}
	return v
}
