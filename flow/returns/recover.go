package returns

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Recovered is one line of Recover's report.
type Recovered struct {
	Task   string `json:"task"`
	User   string `json:"user"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	// Error says why the task could not be recovered; "" when it was.
	Error string `json:"error,omitempty"`
	// Recovery is what continuing the crashed run cost; nil when it was
	// not recovered.
	Recovery *RecoveryView `json:"recovery,omitempty"`
	err      error
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
// recovery cost. A task it cannot recover (busy, a file locked, a storage
// error) is reported with its error and the next one is tried; then the
// report comes back with a *RecoverError naming them (exit 3 when one was
// busy, else 1). Other errors: reading the task list.
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
		v, err := s.Resume(ctx, ResumeOptions{Task: t.ID, User: t.User})
		r := Recovered{Task: t.ID, User: t.User}
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
			r.Error = r.err.Error()
			failed = append(failed, r)
		} else {
			r.Status, r.Stage, r.Recovery = v.Status, v.Stage, v.Recovery
		}
		out = append(out, r)
	}
	if len(failed) > 0 {
		return out, &RecoverError{Failed: failed}
	}
	return out, nil
}
