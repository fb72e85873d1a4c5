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

// Timeline messages of steps that did not complete. A step ended by an
// operator stop is not a failed attempt of its node (BeginSteps).
const (
	MsgInterrupted = "run interrupted; step not completed"
	MsgProcessGone = "process gone; step not completed"
)

// ErrAttemptsExhausted is matched by *AttemptsError.
var ErrAttemptsExhausted = errors.New("attempts exhausted")

// AttemptsError refuses a step whose node failed Max times in a row on the
// task's timeline (failed, or left running by a process that died, since
// the node last finished a step; a step an operator stopped does not
// count).
type AttemptsError struct {
	Task string
	Node string
	Max  int
}

// Error implements the error interface for *AttemptsError.
func (e *AttemptsError) Error() string {
	return fmt.Sprintf("task %s: node %s failed %d times in a row; it is not tried again", e.Task, e.Node, e.Max)
}

// Is makes errors.Is(err, ErrAttemptsExhausted) true.
func (e *AttemptsError) Is(target error) bool { return target == ErrAttemptsExhausted }

// BeginSteps records the start of a superstep's tasks, one running step per
// node of nodes, on taskID's timeline, in one transaction guarded by the
// holder's lease: the task must be running and held by holder.Owner at
// holder.Epoch. Each step's attempt is one more than the steps its node has
// had; when max > 0 and the node has failed max times in a row already
// (failed steps since its last finished one, an operator's stop excepted),
// nothing is written and a *AttemptsError is returned. It returns the new steps' seqs
// in the order of nodes. Errors: ErrStopped (an operator stopped the task),
// ErrLeaseLost (another process holds it), *AttemptsError, ErrNotFound.
func (s *Store) BeginSteps(ctx context.Context, taskID string, holder Lease, nodes []string, now time.Time, max int) ([]int, error) {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	var ok int
	err = tx.QueryRowContext(ctx,
		`SELECT count(*) FROM tasks WHERE task_id = ? AND status = 'running' AND lease_owner = ? AND lease_epoch = ?`,
		taskID, holder.Owner, holder.Epoch).Scan(&ok)
	if err != nil {
		return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
	}
	if ok == 0 {
		return nil, s.whyNotHeld(ctx, taskID, holder.Owner, holder.Epoch)
	}
	seqs := make([]int, 0, len(nodes))
	for _, node := range nodes {
		var attempts, failed int
		if err := tx.QueryRowContext(ctx,
			`SELECT count(*), count(*) FILTER (WHERE status IN (?, ?) AND error <> ? AND seq > coalesce(
			   (SELECT max(seq) FROM steps WHERE task_id = ?4 AND node = ?5 AND status IN (?6, ?7)), 0))
			 FROM steps WHERE task_id = ?4 AND node = ?5`,
			StepFailed, StepRunning, MsgInterrupted, taskID, node, StepDone, StepWaiting).Scan(&attempts, &failed); err != nil {
			return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
		}
		if max > 0 && failed >= max {
			return nil, &AttemptsError{Task: taskID, Node: node, Max: max}
		}
		var seq int
		if err := tx.QueryRowContext(ctx,
			`INSERT INTO steps (task_id, seq, node, attempt, status, started_at)
			 SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4, ?5 FROM steps WHERE task_id = ?1
			 RETURNING seq`, taskID, node, attempts+1, StepRunning, formatTime(now)).Scan(&seq); err != nil {
			return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
		}
		seqs = append(seqs, seq)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("begin steps of task %s: %w", taskID, err)
	}
	return seqs, nil
}

// FailedSteps returns, per node, how many of the task's steps failed (an
// operator's stop excepted) or were left running since the node last
// finished a step: the failed attempts BeginSteps counts.
func (s *Store) FailedSteps(ctx context.Context, taskID string) (map[string]int, error) {
	rows, err := s.h.Q().QueryContext(ctx,
		`SELECT s.node, count(*) FROM steps s WHERE s.task_id = ?1 AND s.status IN (?2, ?3) AND s.error <> ?4
		 AND s.seq > coalesce((SELECT max(d.seq) FROM steps d WHERE d.task_id = ?1 AND d.node = s.node AND d.status IN (?5, ?6)), 0)
		 GROUP BY s.node`,
		taskID, StepFailed, StepRunning, MsgInterrupted, StepDone, StepWaiting)
	if err != nil {
		return nil, fmt.Errorf("failed steps of task %s: %w", taskID, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var node string
		var n int
		if err := rows.Scan(&node, &n); err != nil {
			return nil, fmt.Errorf("failed steps of task %s: %w", taskID, err)
		}
		out[node] = n
	}
	return out, rows.Err()
}
