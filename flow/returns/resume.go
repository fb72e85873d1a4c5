package returns

import (
	"context"
	"errors"
	"fmt"
	"time"

	"assistant/flow"
	"assistant/runs"
)

// Resume answers the task's pending question, or continues its run. On a
// task that has ended it changes nothing: a plain resume, or the answer the
// run recorded given again, returns its progress (with result.reused true
// when approve is repeated on a submitted task); any other answer is
// ErrConflict saying what the task ended as (endedAnswer).
// Errors: ErrInvalid (answer of the wrong kind, a draft named that is not the
// task's, unknown interrupt id), ErrNotFound, ErrConflict (another process
// advanced the task, the answer contradicts the decision already recorded,
// or the task ended otherwise).
func (s *Service) Resume(ctx context.Context, o ResumeOptions) (*View, error) {
	return s.resumeWith(ctx, s.cmd, o)
}

// resumeWith is Resume with the runner r: the command runner, or recover's
// (recoverRunner).
func (s *Service) resumeWith(ctx context.Context, r *runner, o ResumeOptions) (*View, error) {
	if err := checkResume(o); err != nil {
		return nil, err
	}
	t, err := s.decidable(ctx, o.Task, o.User)
	if err != nil {
		return nil, err
	}
	if t.Kind == runs.KindBatch {
		return s.resumeBatch(ctx, r, t, o)
	}
	v, err := r.resume(ctx, t, o)
	deadline := time.Now().Add(AnswerBusyWait)
	for wait := answerRetryFirst; waitsForHolder(t, o, err) && time.Now().Add(wait).Before(deadline); wait = min(2*wait, answerRetryMax) {
		// Another live process holds the task: most often an answer that
		// took it a moment earlier. Its run ends within moments, so this
		// answer waits for it and is judged again against what it
		// left (the same approve: reused, exit 0; another answer: a
		// conflict naming the one recorded), as on PostgreSQL, whose lock
		// waits alike (docs/approvals.md "Answers that race").
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		if t, err = s.decidable(ctx, o.Task, o.User); err != nil {
			return nil, err
		}
		v, err = r.resume(ctx, t, o)
	}
	v = v.markExpired(s.now())
	if err != nil {
		return v, err
	}
	if v, err = s.withTrail(ctx, v); err != nil {
		return nil, err
	}
	return s.forViewer(ctx, v, o.User)
}

// How long an answer waits for a live process that holds its task
// (waitsForHolder) before it is refused busy: long enough for a run that
// took the task a moment earlier to end, and well inside the lease's TTL,
// so that a holder paused or slow on another host is refused busy, never
// taken over by an answer that came while it held the task. It polls the
// lease from answerRetryFirst, doubling up to answerRetryMax.
const (
	AnswerBusyWait   = DefaultLeaseTTL * 2 / 5
	answerRetryFirst = 10 * time.Millisecond
	answerRetryMax   = 200 * time.Millisecond
)

// waitsForHolder reports whether err, the outcome of answer o to task t
// (its record as read), is a live holder's lease refusal (another process
// runs the task now) that o waits out: an answer to a task that is not
// stopped (a stopped task's former process lets go when its node ends;
// its refusal says when a resume will work).
func waitsForHolder(t runs.TaskRecord, o ResumeOptions, err error) bool {
	var held *runs.LeaseHeldError
	return err != nil && o.answering() && t.Status != StatusInterrupted && errors.As(err, &held)
}

// resume is Resume of the return task t with r's policy.
func (r *runner) resume(ctx context.Context, t runs.TaskRecord, o ResumeOptions) (*View, error) {
	snap, err := r.graph.State(ctx, t.ID)
	var de *flow.StateDecodeError
	switch {
	case errors.Is(err, flow.ErrThreadNotFound) && !recordEnded(t):
		return r.resumeWithoutRun(ctx, t, o)
	case errors.Is(err, flow.ErrThreadNotFound):
		snap = nil // ended, as its record says (truth); not run again
	case errors.As(err, &de) && t.Status == StatusRunning && !o.answering():
		return nil, r.undecodable(ctx, t, err)
	case err != nil:
		return nil, fmt.Errorf("resume %s: %w", t.ID, err)
	}
	head := snap
	if snap, err = r.truth(ctx, t, snap); err != nil {
		return nil, err
	}
	// The task's own application ends a request whose head has not ended
	// submitted with it, whatever the answer (docs/recovery.md "A business
	// file ahead of its checkpoints"); any other recorded end is answered
	// as the same end would be with the files in step.
	applied := (head == nil || !head.Done()) && snap.Done() && snap.Values.Result != nil
	if snap.Done() && !applied {
		if err := r.endedAnswer(ctx, t, snap, o); err != nil {
			return nil, err
		}
	}
	if applied {
		if err := r.endedInterrupt(ctx, t.ID, head, o); err != nil {
			return nil, err
		}
		if err := r.approvedAnswer(ctx, t, snap, o); err != nil {
			return nil, err
		}
	}
	if snap.Done() || (snap.Waiting() && !o.answering() && t.Status != StatusWaiting) {
		v, err := r.settled(ctx, t, snap, o)
		if err == nil && applied && o.answering() && o.Action != ActionApprove {
			v.Note = fmt.Sprintf("%s holds the task's application %s: the request ended submitted with it, and the answer changes nothing", r.businessName(), v.Result.ApplicationID)
		}
		return v, err
	}
	if err := r.trailAhead(ctx, t, snap, &o); err != nil {
		return nil, err
	}
	planned, err := r.checkAnswer(ctx, t, snap, o)
	if errors.Is(err, errAnswerSaved) {
		// The same answer again, saved by a command that was killed or
		// taken already: show the task, which waits for the other approval.
		note := savedNote(err)
		v, err := r.settled(ctx, t, snap, o)
		if err == nil && v.Status == StatusRunning {
			v.Status = StatusWaiting
		}
		if err == nil {
			v.Note = note
		}
		return v, err
	} else if err != nil {
		return nil, err
	}
	// The head read above is still the head once the lease is held when
	// nobody held the task when its record was read and nobody took it
	// before this process did (the fencing epoch rose by exactly one):
	// every writer of a thread holds its task's lease.
	free, epoch := t.Lease.Owner == "", t.Lease.Epoch
	Fault("resume:before-lease")
	if err := r.acquire(ctx, &t); err != nil {
		return nil, r.busyFor(ctx, t, snap, o, err)
	}
	if !free || t.Lease.Epoch != epoch+1 {
		snap, planned = nil, nil
	}
	return r.answer(ctx, t, snap, o, planned)
}

// answerPlan is what plan made of an answer against a head: the command
// that gives it and the note for the person.
type answerPlan struct {
	cmd  flow.Command
	note string
}

// checkAnswer checks o against the head before anything is written: a live
// process driving the task is told first (any answer now would meet a run
// part-way, and the reason is that it is busy: ErrConflict), then the
// answer must fit the question (plan's errors). A wrong answer changes
// nothing. It returns plan's command for snap, which answer gives while
// snap is still the head.
func (r *runner) checkAnswer(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) (*answerPlan, error) {
	if o.answering() && len(snap.Interrupts) == 0 {
		if l, _, err := r.runs.TaskLease(ctx, t.ID); err == nil && r.svc.holderAlive(l) {
			if t.Status == StatusInterrupted {
				return nil, r.svc.stoppedHeld(&runs.LeaseHeldError{Task: t.ID, Lease: l})
			}
			// Both refusals wrap the holder's lease (a live process runs
			// the task: waitsForHolder), printed as nothing.
			held := &runs.LeaseHeldError{Task: t.ID, Lease: l}
			if err := r.answeredMeanwhile(ctx, t, snap, l, held); err != nil {
				return nil, err
			}
			return nil, errorf(Hint{Before: "wait for it to ask its question (", Do: DoShow, Task: t.ID, After: ")"},
				"task %s is being run by process %d on %s: %w%.0w", t.ID, l.PID, l.Host, ErrConflict, held)
		}
	}
	cmd, note, err := r.plan(ctx, t, snap, o)
	if err != nil {
		return nil, err
	}
	return &answerPlan{cmd: cmd, note: note}, nil
}

// answeredMeanwhile is the refusal of an answer that lost a race: the
// process holding lease l runs t past a question, and the decision trail
// holds the answer that took it (on any machine; the last one): the
// run's, in its head snap, or else the business store's. It names that
// answer and says that this one changes nothing (ErrConflict, nothing
// written), wrapping held, the holder's lease refusal. nil when neither
// trail holds an answer (the run has not asked its first question yet).
func (r *runner) answeredMeanwhile(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], l runs.Lease, held error) error {
	var by, action string
	var at time.Time
	if ds := snap.Values.Decisions; len(ds) > 0 {
		d := ds[len(ds)-1]
		by, action, at = d.By, d.Action, d.At
	} else if ds, err := r.desk.Decisions(ctx, t.ID); err == nil && len(ds) > 0 {
		d := ds[len(ds)-1]
		by, action, at = d.By, d.Action, d.At
	} else {
		return nil
	}
	return raceLost(t.ID, Decision{By: by, Action: action, At: at}, l, held)
}

// answer runs the answer (or the continuation) o from head, the thread's
// head as read before the lease was taken, or nil when it must be read
// again under the lease. planned, when not nil, is plan's command for
// head, made before the lease was taken: nobody wrote the task between
// (its lease was free and this process took it next), so plan would make
// the same again. The caller holds the lease.
func (r *runner) answer(ctx context.Context, t runs.TaskRecord, head *flow.Snapshot[State], o ResumeOptions, planned *answerPlan) (*View, error) {
	endedBefore := false
	note := ""
	v, err := r.driveReturn(ctx, t, func(ctx context.Context, g *flow.Runnable[State]) (*flow.Snapshot[State], error) {
		if head == nil {
			// Another process may have moved the task between the first
			// read and the lease: read it again.
			cur, err := g.State(ctx, t.ID)
			if err != nil {
				return nil, err
			}
			if cur, err = r.truth(ctx, t, cur); err != nil {
				return nil, err
			}
			if cur.Done() {
				// Ended by another process meanwhile: the answer
				// must be the one it recorded, as on an ended task.
				if err := r.endedAnswer(ctx, t, cur, o); err != nil {
					return nil, err
				}
				endedBefore = true
				return cur, nil
			}
			head = cur
		}
		cmd, n, err := r.planOnce(ctx, t, head, o, planned)
		if errors.Is(err, errAnswerSaved) {
			return head, nil // saved by another process meanwhile
		}
		if err != nil {
			return nil, err
		}
		note = n
		// The trail first: an answer saved at the head is in it already,
		// however the command ends after (recordAnswers).
		if err := r.recordAnswers(ctx, t.ID, head.Values, cmd); err != nil {
			return nil, err
		}
		Fault("answer:after-trail")
		return g.ResumeAt(ctx, head, cmd)
	})
	if err == nil {
		v.Note = noteAfter(note, v)
		if !o.answering() && v.Note == "" {
			// A continued run whose submit no longer counted an
			// approval it carried: say why it waits again, as recover
			// does.
			v.Note = waitsAgain(v)
		}
	}
	if err == nil && endedBefore && o.Action == ActionApprove && v.Result != nil {
		// Another process submitted while this one waited for the lease:
		// this approve made no application of its own.
		v.Result.Reused = true
	}
	return v, err
}

// planOnce is plan's command for head: planned when it is there, else
// made now.
func (r *runner) planOnce(ctx context.Context, t runs.TaskRecord, head *flow.Snapshot[State], o ResumeOptions, planned *answerPlan) (flow.Command, string, error) {
	if planned != nil {
		return planned.cmd, planned.note, nil
	}
	return r.plan(ctx, t, head, o)
}

// settled answers a resume of a task whose head is finished, or parked at a
// question while its record lags behind: a process killed after its last
// checkpoint and before it let go of the task leaves the record behind the
// head, so set it right, and report the progress unchanged.
func (r *runner) settled(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) (*View, error) {
	v := view(t, snap)
	if v.Status == StatusInterrupted {
		// Stopped after it reached its question: resuming it puts the
		// question back to the person.
		v.Status = StatusWaiting
	}
	if err := r.repair(ctx, t, v); err != nil {
		return nil, r.busyFor(ctx, t, snap, o, err)
	}
	if snap.Done() && o.Action == ActionApprove && v.Result != nil {
		// Approving a submitted task again: the application is reused.
		v.Result.Reused = true
	}
	return v, nil
}

// resumeWithoutRun resumes a task created, then killed before its first
// checkpoint: it runs it from its recorded input, as start would, and then
// gives the answer, if any, to the question the run asks again.
func (r *runner) resumeWithoutRun(ctx context.Context, t runs.TaskRecord, o ResumeOptions) (*View, error) {
	ttl, err := r.runs.DraftTTL(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	if t.Approvals, err = r.runs.Approvals(ctx, t.ID); err != nil {
		return nil, err
	}
	// An answer must fit the question the record shows before the run is
	// rebuilt: a wrong answer changes nothing.
	if err := r.fitsRecord(ctx, t, o); err != nil {
		return nil, err
	}
	if err := r.acquire(ctx, &t); err != nil {
		return nil, r.busyFor(ctx, t, nil, o, err)
	}
	v, err := r.invoke(ctx, t, ttl)
	if err != nil || !o.answering() {
		return v, err
	}
	// The answer is for the question the run asks again now (a batch
	// killed between a chunk's two commits leaves records that show the
	// question while the run is missing): answer it, as asked.
	if _, err := r.graph.State(ctx, t.ID); errors.Is(err, flow.ErrThreadNotFound) {
		return nil, fmt.Errorf("task %s has no run to answer: %w", t.ID, ErrConflict)
	}
	cur, err := r.runs.Task(ctx, t.ID)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", t.ID, err)
	}
	return r.resume(ctx, cur, o)
}

// undecodable ends a running task whose head this build cannot decode (a
// guard stop): no retry can get past it, so the task is marked failed and
// recover leaves it; history shows the stored state. It returns the error
// to report.
func (r *runner) undecodable(ctx context.Context, t runs.TaskRecord, err error) error {
	if aerr := r.acquire(ctx, &t); aerr != nil {
		return fmt.Errorf("resume %s: %w", t.ID, err)
	}
	r.recoveries.Delete(t.ID)
	if rerr := r.runs.ReleaseLeaseSync(ctx, t.ID, r.svc.me.owner, StatusFailed, StageFailed); rerr != nil {
		return fmt.Errorf("resume %s: %w; then marking it failed: %w", t.ID, err, rerr)
	}
	return errorf(Hint{Before: "run", Do: DoHistory, Task: t.ID, After: "to see the stored state"}, "resume %s: %w; the task is marked failed", t.ID, err)
}
