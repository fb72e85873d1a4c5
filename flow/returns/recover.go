package returns

import (
	"context"
	"fmt"
)

// Recovered is one line of Recover's report.
type Recovered struct {
	Task   string `json:"task"`
	User   string `json:"user"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	Error  string `json:"error,omitempty"`
}

// Recover resumes every running task whose lease holder is gone, through the
// same path as Resume without an answer, and reports each. A task another
// process takes first is reported with its error and skipped.
func (s *Service) Recover(ctx context.Context) ([]Recovered, error) {
	stale, err := s.runs.StaleTasks(ctx, s.now().UTC(), s.liveness)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	out := []Recovered{}
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
			r.Error = err.Error()
		} else {
			r.Status, r.Stage = v.Status, v.Stage
		}
		out = append(out, r)
	}
	return out, nil
}
