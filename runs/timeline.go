package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Timeline step statuses (steps.status).
const (
	StepRunning = "running"
	StepDone    = "done"
	StepWaiting = "waiting" // the node asked a question and parked
	StepFailed  = "failed"
)

// TimelineStep is one node run in a task's timeline.
type TimelineStep struct {
	Task      string    `json:"task"`
	Seq       int       `json:"seq"` // 1, 2, 3 … per task, no gaps, never reused
	Node      string    `json:"node"`
	Attempt   int       `json:"attempt"` // 1 for the node's first run in this task
	Status    string    `json:"status"`  // StepRunning, StepDone, StepWaiting or StepFailed
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"` // zero while running
	Error     string    `json:"error,omitempty"`
}

// StartStep appends a running step for node to the task's timeline and
// returns its seq.
func (s *Store) StartStep(ctx context.Context, taskID, node string, now time.Time) (int, error) {
	// One statement: a write statement takes the write lock before it reads,
	// so the seq it computes cannot be taken by another writer.
	var seq int
	if err := s.h.Q().QueryRowContext(ctx,
		`INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
		 SELECT ?1, coalesce(max(seq), 0) + 1, ?2, 1 + (SELECT count(*) FROM steps WHERE task_id = ?1 AND node = ?2), ?3, ?4
		 FROM steps WHERE task_id = ?1
		 RETURNING seq`, taskID, node, StepRunning, formatTime(now)).Scan(&seq); err != nil {
		return 0, fmt.Errorf("start step of task %s: %w", taskID, err)
	}
	return seq, nil
}

// LastStep returns the task's step with the highest seq, or ErrNotFound
// when it has none.
func (s *Store) LastStep(ctx context.Context, taskID string) (TimelineStep, error) {
	st, err := scanStep(taskID, s.h.Q().QueryRowContext(ctx,
		`SELECT `+stepColumns+` FROM steps WHERE task_id = ? ORDER BY seq DESC LIMIT 1`, taskID))
	if errors.Is(err, sql.ErrNoRows) {
		return TimelineStep{}, fmt.Errorf("last step of task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return TimelineStep{}, fmt.Errorf("last step of task %s: %w", taskID, err)
	}
	return st, nil
}

const stepColumns = `seq, node, attempt, status, started_at, ended_at, error`

// scanStep reads one row of stepColumns, a step of task taskID.
func scanStep(taskID string, sc scanner) (TimelineStep, error) {
	st := TimelineStep{Task: taskID}
	var started, ended string
	if err := sc.Scan(&st.Seq, &st.Node, &st.Attempt, &st.Status, &started, &ended, &st.Error); err != nil {
		return TimelineStep{}, err
	}
	var err error
	if st.StartedAt, err = parseTime(started); err != nil {
		return TimelineStep{}, err
	}
	if ended != "" {
		if st.EndedAt, err = parseTime(ended); err != nil {
			return TimelineStep{}, err
		}
	}
	return st, nil
}

// StepCounts returns the highest step seq of the task (0 when it has none)
// and how many steps each node has had: what the next step's seq and
// attempt follow from.
func (s *Store) StepCounts(ctx context.Context, taskID string) (int, map[string]int, error) {
	rows, err := s.h.Q().QueryContext(ctx, `SELECT node, count(*), max(seq) FROM steps WHERE task_id = ? GROUP BY node`, taskID)
	if err != nil {
		return 0, nil, fmt.Errorf("step counts of task %s: %w", taskID, err)
	}
	defer rows.Close()
	maxSeq, attempts := 0, map[string]int{}
	for rows.Next() {
		var node string
		var n, top int
		if err := rows.Scan(&node, &n, &top); err != nil {
			return 0, nil, fmt.Errorf("step counts of task %s: %w", taskID, err)
		}
		attempts[node] = n
		maxSeq = max(maxSeq, top)
	}
	return maxSeq, attempts, rows.Err()
}

// AddStep records st (seq, attempt, status and times as given) in the
// timeline of st.Task: a step recorded once it ended. Errors: a seq the
// task has already (a unique violation).
func (s *Store) AddStep(ctx context.Context, st TimelineStep) error {
	ended := ""
	if !st.EndedAt.IsZero() {
		ended = formatTime(st.EndedAt)
	}
	_, err := s.h.Q().ExecContext(ctx,
		`INSERT INTO steps (task_id, seq, node, attempt, status, started_at, ended_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		st.Task, st.Seq, st.Node, st.Attempt, st.Status, formatTime(st.StartedAt), ended, st.Error)
	if err != nil {
		return fmt.Errorf("add step %d of task %s: %w", st.Seq, st.Task, err)
	}
	return nil
}

// EndStep records how step seq ended; only a running step changes.
func (s *Store) EndStep(ctx context.Context, taskID string, seq int, status, msg string, now time.Time) error {
	_, err := s.h.Q().ExecContext(ctx,
		`UPDATE steps SET status = ?, error = ?, ended_at = ? WHERE task_id = ? AND seq = ? AND status = ?`,
		status, msg, formatTime(now), taskID, seq, StepRunning)
	if err != nil {
		return fmt.Errorf("end step %d of task %s: %w", seq, taskID, err)
	}
	return nil
}

// InterruptedStep appends a failed step for node with error msg that
// started and ended at now: the step that was due when a run stopped
// between two steps.
func (s *Store) InterruptedStep(ctx context.Context, taskID, node, msg string, now time.Time) error {
	seq, err := s.StartStep(ctx, taskID, node, now)
	if err != nil {
		return err
	}
	_, err = s.h.Q().ExecContext(ctx,
		`UPDATE steps SET status = ?, error = ?, ended_at = ? WHERE task_id = ? AND seq = ?`,
		StepFailed, msg, formatTime(now), taskID, seq)
	if err != nil {
		return fmt.Errorf("interrupted step of task %s: %w", taskID, err)
	}
	return nil
}

// FailRunningSteps marks every step of the task still running as failed with
// msg (steps left by a process that died or was stopped) and returns how
// many it marked.
func (s *Store) FailRunningSteps(ctx context.Context, taskID, msg string, now time.Time) (int, error) {
	res, err := s.h.Q().ExecContext(ctx,
		`UPDATE steps SET status = ?, error = ?, ended_at = ? WHERE task_id = ? AND status = ?`,
		StepFailed, msg, formatTime(now), taskID, StepRunning)
	if err != nil {
		return 0, fmt.Errorf("fail running steps of task %s: %w", taskID, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Steps returns the task's timeline in seq order.
func (s *Store) Steps(ctx context.Context, taskID string) ([]TimelineStep, error) {
	rows, err := s.h.Q().QueryContext(ctx, `SELECT `+stepColumns+` FROM steps WHERE task_id = ? ORDER BY seq`, taskID)
	if err != nil {
		return nil, fmt.Errorf("steps of task %s: %w", taskID, err)
	}
	defer rows.Close()
	var out []TimelineStep
	for rows.Next() {
		st, err := scanStep(taskID, rows)
		if err != nil {
			return nil, fmt.Errorf("steps of task %s: %w", taskID, err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}
