package returns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"assistant/flow"
	"assistant/runs"
)

// Recovered is one line of Recover's report.
type Recovered struct {
	Task   string `json:"task"`
	User   string `json:"user"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	// Error says why the task could not be recovered; "" when it was.
	Error string `json:"error,omitempty"`
	// Ended is why recover ended a task that was waiting: "draft_expired"
	// for a draft that expired before anyone approved it (the task ends
	// failed with that error code); omitted for a crashed run continued.
	Ended string `json:"ended,omitempty"`
	// Recovery is what continuing the crashed run cost; nil when it was
	// not recovered.
	Recovery *RecoveryView `json:"recovery,omitempty"`
	// Note is, for a task recovered to wait for approval again because an
	// approval it carried out no longer counts, why (waitsAgain: "the
	// approval of bob no longer counts (revoked at …): nothing was
	// submitted, and the task waits for another approval"); "" otherwise.
	// The report's line of the task and a line on stderr say it; not part
	// of the JSON.
	Note string `json:"-"`
	err  error
}

// RecoverError reports the tasks Recover could not recover. It matches
// ErrConflict (errors.Is) when one of them was busy or its file locked, and
// unwraps to each task's error.
type RecoverError struct {
	Failed []Recovered
}

// Error names each task that was not recovered and why, on one line.
func (e *RecoverError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, r := range e.Failed {
		parts[i] = fmt.Sprintf("task %s: %s", r.Task, r.Error)
	}
	return fmt.Sprintf("%d task(s) could not be recovered: %s", len(e.Failed), strings.Join(parts, "; "))
}

// hint is none: the message says each task's, worded as the Service
// words them (Recovered.Error).
func (e *RecoverError) hint() (Hint, bool) { return Hint{}, true }

// Unwrap gives each task's error, for errors.Is and errors.As.
func (e *RecoverError) Unwrap() []error {
	errs := make([]error, len(e.Failed))
	for i, r := range e.Failed {
		errs[i] = r.err
	}
	return errs
}

// Recover resumes every running task whose lease holder is gone, through the
// same path as Resume without an answer, and reports each, with what the
// recovery cost; a task an operator stops between recover's look and its
// lease stays interrupted and is reported so (no error): recover takes only
// a task that is still running under its lease (recoverRunner); then it ends every task (any user's) still waiting for
// approval of a draft that has expired, failed with draft_expired
// (endExpired), and reports each with Ended set. A task it cannot recover
// (busy, a file locked, a storage error) is reported with its error and the
// next one is tried; then the report comes back with a *RecoverError naming
// them (exit 3 when one was busy, else 1). Other errors: reading the task
// list.
func (s *Service) Recover(ctx context.Context) ([]Recovered, error) {
	stale, err := s.runs.StaleTasks(ctx, s.now().UTC(), s.liveness)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	out := []Recovered{}
	var failed []Recovered
	for _, t := range stale {
		// Look again: recovering an earlier task (a batch) may have
		// continued this one (its row) already.
		cur, err := s.runs.Task(ctx, t.ID)
		if err != nil || cur.Status != StatusRunning {
			continue
		}
		Fault("recover:before-lease") // a stop may land here (docs/recovery.md)
		v, err := s.resumeWith(ctx, s.recoverRunner(), ResumeOptions{Task: t.ID, User: t.User})
		r := Recovered{Task: t.ID, User: t.User}
		var stopped *stoppedMeanwhile
		if errors.As(err, &stopped) {
			// An operator stopped it after the look above: the stop
			// stands, and recover leaves the task to a person.
			r.Status, r.Stage = StatusInterrupted, cur.Stage
			if now, rerr := s.runs.Task(ctx, t.ID); rerr == nil {
				r.Stage = now.Stage
			}
			out = append(out, r)
			continue
		}
		if err != nil {
			// Another process (a resume, another recover) may have
			// continued it between the look above and this one's lease:
			// then it is recovered, not a failure.
			raced := errors.Is(err, ErrInvalid) || errors.Is(err, ErrConflict)
			if now, rerr := s.runs.Task(ctx, t.ID); raced && rerr == nil && now.Status != StatusRunning && now.Lease.Owner == "" {
				r.Status, r.Stage = now.Status, now.Stage
				out = append(out, r)
				continue
			}
			r.err = Classify(err) // with its hint: a locked file says to try again
			var held *runs.LeaseHeldError
			if errors.As(err, &held) {
				// A live process took the task between the look above
				// and this one's lease. Resume's hint offers the owner
				// stop, which the person running recover may not be.
				r.err = fmt.Errorf("%w: %w: another process continues it now; nothing is left to recover", held, ErrConflict)
			}
			r.Error = Say(r.err, s.words)
			failed = append(failed, r)
		} else {
			r.Status, r.Stage, r.Recovery, r.Note = v.Status, v.Stage, v.Recovery, waitsAgain(v)
		}
		out = append(out, r)
	}
	expired, err := s.endExpired(ctx)
	if err != nil {
		return out, fmt.Errorf("recover: %w", err)
	}
	for _, r := range expired {
		if r.err != nil {
			failed = append(failed, r)
		}
		out = append(out, r)
	}
	if len(failed) > 0 {
		return out, &RecoverError{Failed: failed}
	}
	return out, nil
}

// endExpired ends every waiting return task (any user's) whose draft has
// expired by the service clock (expiredNow), each through the
// engine (expire), and reports each ended. A task another process holds
// now (a person answering it) is left to that process: its approve ends
// the run failed with draft_expired itself. A task that could not be ended
// otherwise is reported with its error. Errors: reading the task list.
func (s *Service) endExpired(ctx context.Context) ([]Recovered, error) {
	waiting, err := s.runs.ListTasks(ctx, "", StatusWaiting)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []Recovered
	for _, t := range waiting {
		expired, err := s.expiredNow(ctx, t, now)
		if err != nil {
			return out, err
		}
		if !expired {
			continue
		}
		r := Recovered{Task: t.ID, User: t.User}
		v, err := s.cmd.expire(ctx, t)
		switch {
		case errors.Is(err, ErrConflict):
			continue // taken by another process at this moment
		case err != nil:
			r.err = Classify(err)
			r.Error = Say(r.err, s.words)
		case v.Status != StatusFailed || v.Error == nil || v.Error.Code != CodeDraftExpired:
			continue // answered or ended otherwise meanwhile
		default:
			r.Status, r.Stage, r.Ended = v.Status, v.Stage, CodeDraftExpired
		}
		out = append(out, r)
	}
	return out, nil
}

// expire ends the return task t, waiting for approval of a draft that has
// expired, failed with draft_expired: it takes the task's lease (waiting →
// running, as an answer does), reads the head under it, and when the draft
// still waits and has expired writes a checkpoint as give_up (the node a
// guard stop ends a run with) holding stage failed and the error; the
// release then records the task failed. The draft is not submitted and
// nothing is written to the business file. A head answered or ended
// meanwhile is left as it is, and its view returned.
func (r *runner) expire(ctx context.Context, t runs.TaskRecord) (*View, error) {
	if err := r.acquire(ctx, &t); err != nil {
		return nil, err
	}
	return r.driveReturn(ctx, t, func(ctx context.Context, g *flow.Runnable[State]) (*flow.Snapshot[State], error) {
		head, err := g.State(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		now := r.svc.now()
		if !view(t, head).markExpired(now).DraftExpired() {
			return head, nil
		}
		d := head.Values.Draft
		return g.UpdateState(ctx, t.ID, State{Stage: StageFailed, Error: &Failure{
			Code:    CodeDraftExpired,
			Message: fmt.Sprintf("draft %s expired at %s before it was approved; nothing was submitted (ended by recover)", d.ID, d.ExpiresAt.UTC().Format(time.RFC3339)),
		}}, NodeGiveUp)
	})
}

// stoppedMeanwhile is acquire's refusal, under recover, of a task an
// operator stopped after recover chose it (ErrConflict): the stop stands.
type stoppedMeanwhile struct {
	task string
	err  error
}

// Error says the task was stopped; its hint, how to continue it on
// purpose.
func (e *stoppedMeanwhile) Error() string {
	return fmt.Sprintf("task %s was stopped by an operator before recover took it: %v; it stays stopped", e.task, e.err)
}

func (e *stoppedMeanwhile) hint() (Hint, bool) {
	return Hint{Before: "continue it on purpose with", Do: DoResume, Task: e.task}, true
}

// Unwrap returns ErrConflict and the store's refusal.
func (e *stoppedMeanwhile) Unwrap() []error { return []error{ErrConflict, e.err} }
