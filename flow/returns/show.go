package returns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"assistant/runs"
)

// Show returns the progress of a task: its head, and for a running or
// interrupted task the process that holds it. It writes nothing.
// Errors: ErrInvalid, ErrNotFound, storage errors.
func (s *Service) Show(ctx context.Context, task, user string) (*View, error) {
	t, err := s.task(ctx, task, user)
	if err != nil {
		return nil, err
	}
	var v *View
	if t.Kind == runs.KindBatch {
		snap, err := headOrNil(s.batch.State(ctx, t.ID))
		if err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		v = s.batchView(ctx, t, snap)
	} else {
		snap, err := headOrNil(s.cmd.graph.State(ctx, t.ID))
		if err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		if err := s.cmd.reconcile(ctx, t.ID, snap); err != nil {
			return nil, err
		}
		v = view(t, snap)
	}
	s.addHolder(v, t.Lease)
	return v.markExpired(s.now()), nil
}

// show is Show of a return task through r's stores (a chunk sees its own
// transaction and buffer).
func (r *runner) show(ctx context.Context, id string) (*View, error) {
	t, err := r.runs.Task(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("show %s: %w", id, err)
	}
	snap, err := headOrNil(r.graph.State(ctx, id))
	if err != nil {
		return nil, fmt.Errorf("show %s: %w", id, err)
	}
	v := view(t, snap)
	r.svc.addHolder(v, t.Lease)
	return v, nil
}

// addHolder adds the lease holder to the view of a running task, or of an
// interrupted one that a process still holds.
func (s *Service) addHolder(v *View, l runs.Lease) {
	if (v.Status == StatusRunning || v.Status == StatusInterrupted) && (l.Owner != "" || v.Status == StatusRunning) {
		v.Holder = &HolderView{PID: l.PID, Host: l.Host, Until: l.Until, Alive: s.holderAlive(l)}
	}
}

// TaskSummary is one line of List.
type TaskSummary struct {
	Task      string    `json:"task"`
	Order     string    `json:"order"`
	Status    string    `json:"status"`
	Stage     string    `json:"stage"`
	CreatedAt time.Time `json:"created_at"` // UTC
	UpdatedAt time.Time `json:"updated_at"` // UTC
}

// Statuses lists the valid run statuses, for validating a filter.
var Statuses = []string{StatusRunning, StatusWaiting, StatusInterrupted, StatusDone, StatusCancelled, StatusFailed}

// CheckStatus returns ErrInvalid unless status is "" or a run status.
func CheckStatus(status string) error {
	if status != "" && !slices.Contains(Statuses, status) {
		return fmt.Errorf("%w: --status must be one of %s, not %q", ErrInvalid, strings.Join(Statuses, ", "), status)
	}
	return nil
}

// List returns the user's tasks, oldest first, with the run status and stage
// recorded after each command; status "" lists all. An unknown status is
// ErrInvalid.
func (s *Service) List(ctx context.Context, user, status string) ([]TaskSummary, error) {
	if err := CheckStatus(status); err != nil {
		return nil, err
	}
	tasks, err := s.runs.ListTasks(ctx, user, status)
	if err != nil {
		return nil, err
	}
	out := make([]TaskSummary, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, TaskSummary{Task: t.ID, Order: t.OrderID, Status: t.Status, Stage: t.Stage, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt})
	}
	return out, nil
}
