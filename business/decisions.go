package business

import (
	"context"
	"fmt"
	"time"

	"assistant/internal/sqlitedb"
)

// Decision is one answer given to a task's question, as the trail keeps
// it: who gave it, when, what it was, and the draft and version it was
// bound to ("" and 0 for an answer given before any draft).
type Decision struct {
	ID      string    `json:"decision_id"`
	TaskID  string    `json:"task_id"`
	By      string    `json:"by"`
	Action  string    `json:"action"` // reason, approve, cancel, edit, revise
	DraftID string    `json:"draft_id"`
	Version int       `json:"version"`
	At      time.Time `json:"at"` // UTC
	// Comment is what a request for changes (revise) asks for; Reason the
	// reason an edit or a reason answer gives.
	Comment string `json:"comment,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// RecordDecision adds d to the trail in a durable commit (a checkpoint
// that carries the answer is written after it). d.ID is the idempotency
// key: a decision recorded already is left as it is, so the node that
// takes an answer may run again.
func (s *Store) RecordDecision(ctx context.Context, d Decision) error {
	if d.ID == "" || d.TaskID == "" {
		return fmt.Errorf("record decision: decision id and task id are required")
	}
	err := s.h.Durable(ctx, func(tx sqlitedb.Querier) error {
		res, err := tx.ExecContext(ctx,
			`INSERT INTO decisions (decision_id, task_id, by_user, action, draft_id, version, at, comment, reason)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (decision_id) DO NOTHING`,
			d.ID, d.TaskID, d.By, d.Action, d.DraftID, d.Version, formatTime(d.At), d.Comment, d.Reason)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return sqlitedb.ErrNothingWritten
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record decision %s of task %s: %w", d.ID, d.TaskID, err)
	}
	return nil
}

// Decisions returns the trail of task taskID in the order the answers were
// given; empty (not nil) when there is none.
func (s *Store) Decisions(ctx context.Context, taskID string) ([]Decision, error) {
	rows, err := s.h.Q().QueryContext(ctx,
		`SELECT decision_id, task_id, by_user, action, draft_id, version, at, comment, reason
		 FROM decisions WHERE task_id = ? ORDER BY at, rowid`, taskID)
	if err != nil {
		return nil, fmt.Errorf("decisions of task %s: %w", taskID, err)
	}
	defer rows.Close()
	out := []Decision{}
	for rows.Next() {
		var d Decision
		var at string
		if err := rows.Scan(&d.ID, &d.TaskID, &d.By, &d.Action, &d.DraftID, &d.Version, &at, &d.Comment, &d.Reason); err != nil {
			return nil, fmt.Errorf("decisions of task %s: %w", taskID, err)
		}
		if d.At, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("decisions of task %s: %w", taskID, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("decisions of task %s: %w", taskID, err)
	}
	return out, nil
}
