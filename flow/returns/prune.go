package returns

import (
	"context"
	"fmt"
	"time"

	"assistant/flow"
)

// DefaultPruneKeep is how many checkpoints prune keeps per finished task: the
// head, which show and resume read.
const DefaultPruneKeep = 1

// PruneOptions are the input of Prune.
type PruneOptions struct {
	// FinishedBefore: only tasks whose record was last updated at least this
	// long ago. Must be positive.
	FinishedBefore time.Duration
	// Keep is how many checkpoints each task keeps, head included; 0 means
	// DefaultPruneKeep.
	Keep int
}

// PruneReport is what Prune removed.
type PruneReport struct {
	Tasks []PrunedTask `json:"tasks"` // the finished tasks looked at, oldest update first
	Rows  int          `json:"rows"`  // checkpoint and pending-write rows removed
	Bytes int64        `json:"bytes"` // bytes of their stored JSON
}

// PrunedTask is one finished task Prune looked at.
type PrunedTask struct {
	Task   string `json:"task"`
	Status string `json:"status"`
	Rows   int    `json:"rows"`
	Bytes  int64  `json:"bytes"`
}

// finishedStatuses are the run statuses prune may touch: the run has ended
// and nothing will write to the thread again. Waiting, running and
// interrupted tasks are never pruned.
var finishedStatuses = []string{StatusDone, StatusCancelled, StatusFailed}

// Prune removes old checkpoints of finished tasks (any user): tasks whose
// status is done, cancelled or failed and whose record was updated before
// now − o.FinishedBefore keep their head and newest o.Keep checkpoints.
// Errors: ErrInvalid for bad options or a checkpoint store without the power
// to prune, storage errors.
func (s *Service) Prune(ctx context.Context, o PruneOptions) (*PruneReport, error) {
	if o.FinishedBefore <= 0 {
		return nil, fmt.Errorf("%w: --finished-before must be positive, not %s", ErrInvalid, o.FinishedBefore)
	}
	if o.Keep < 0 {
		return nil, fmt.Errorf("%w: --keep must be at least 1, not %d", ErrInvalid, o.Keep)
	}
	if o.Keep == 0 {
		o.Keep = DefaultPruneKeep
	}
	p, ok := s.cps.(flow.Pruner)
	if !ok {
		return nil, fmt.Errorf("%w: the checkpoint store %T cannot prune", ErrInvalid, s.cps)
	}
	tasks, err := s.runs.TasksUpdatedBefore(ctx, finishedStatuses, s.now().Add(-o.FinishedBefore))
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	r := &PruneReport{Tasks: []PrunedTask{}}
	for _, t := range tasks {
		rows, n, err := p.Prune(ctx, t.ID, o.Keep)
		if err != nil {
			return r, fmt.Errorf("prune: %w", err)
		}
		r.Tasks = append(r.Tasks, PrunedTask{Task: t.ID, Status: t.Status, Rows: rows, Bytes: n})
		r.Rows += rows
		r.Bytes += n
	}
	if sy, ok := s.cps.(flow.Syncer); ok && len(tasks) > 0 {
		if err := sy.Sync(ctx); err != nil {
			return r, fmt.Errorf("prune: %w", err)
		}
	}
	return r, nil
}
