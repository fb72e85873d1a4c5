package returns

import (
	"context"
	"encoding/json"
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
	// DryRun reports what would be removed and removes nothing: no file is
	// written.
	DryRun bool
}

// PruneReport is what Prune removed.
type PruneReport struct {
	// DryRun is true when nothing was removed: Rows and Bytes are what
	// would be (Bytes then counts the checkpoints' JSON as read back, which
	// is what the store holds unless it encodes them otherwise).
	DryRun bool         `json:"dry_run"`
	Tasks  []PrunedTask `json:"tasks"` // the finished tasks looked at, oldest update first
	Rows   int          `json:"rows"`  // checkpoint and pending-write rows removed
	Bytes  int64        `json:"bytes"` // bytes of their stored JSON
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
// interrupted tasks are never pruned (a waiting task whose draft expired
// is pruned once recover has ended it failed).
var finishedStatuses = []string{StatusDone, StatusCancelled, StatusFailed}

// Prune removes old checkpoints of finished tasks (any user): tasks whose
// status is done, cancelled or failed and whose record was updated before
// now − o.FinishedBefore keep their head and newest o.Keep checkpoints.
// Errors: ErrInvalid for bad options or a checkpoint store without the power
// to prune, storage errors.
func (s *Service) Prune(ctx context.Context, o PruneOptions) (*PruneReport, error) {
	if o.FinishedBefore <= 0 {
		return nil, errorf(Hint{}, "%w: %s must be positive, not %s", ErrInvalid, InputFinishedBefore, o.FinishedBefore)
	}
	if o.Keep < 0 {
		return nil, errorf(Hint{}, "%w: %s must be at least 1, not %d", ErrInvalid, InputKeep, o.Keep)
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
	r := &PruneReport{Tasks: []PrunedTask{}, DryRun: o.DryRun}
	for _, t := range tasks {
		prune := p.Prune
		if o.DryRun {
			prune = s.wouldPrune
		}
		rows, n, err := prune(ctx, t.ID, o.Keep)
		if err != nil {
			return r, fmt.Errorf("prune: %w", err)
		}
		r.Tasks = append(r.Tasks, PrunedTask{Task: t.ID, Status: t.Status, Rows: rows, Bytes: n})
		r.Rows += rows
		r.Bytes += n
	}
	if sy, ok := s.cps.(flow.Syncer); ok && len(tasks) > 0 && !o.DryRun {
		if err := sy.Sync(ctx); err != nil {
			return r, fmt.Errorf("prune: %w", err)
		}
	}
	return r, nil
}

// wouldPrune is flow.Pruner's Prune without the removal: the rows (the
// checkpoints older than the newest keep, and their pending writes) and
// the bytes of their JSON that Prune would remove from thread, read
// through the Checkpointer. It writes nothing.
func (s *Service) wouldPrune(ctx context.Context, thread string, keep int) (int, int64, error) {
	cps, err := s.cps.List(ctx, thread, flow.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	keep = max(keep, 1)
	if len(cps) <= keep {
		return 0, 0, nil
	}
	rows, n := 0, int64(0)
	for _, cp := range cps[keep:] { // newest first: these are the older ones
		full, err := s.cps.Get(ctx, thread, cp.ID)
		if err != nil {
			return 0, 0, err
		}
		if full == nil {
			continue // removed meanwhile
		}
		next, _ := json.Marshal(full.Next)
		md, _ := json.Marshal(full.Metadata)
		rows++
		n += int64(len(full.Values) + len(next) + len(md))
		for _, w := range full.PendingWrites {
			rows++
			n += int64(len(w.Value))
		}
	}
	return rows, n, nil
}
