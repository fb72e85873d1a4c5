package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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
	// In a write transaction: it takes the write lock before the statement
	// reads, so the seq it computes cannot be taken by another writer (a
	// write that returns rows is refused outside one on PostgreSQL).
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("start step of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	var seq int
	if err := tx.QueryRowContext(ctx, s.q.startStep, taskID, node, StepRunning, formatTime(now)).Scan(&seq); err != nil {
		return 0, fmt.Errorf("start step of task %s: %w", taskID, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("start step of task %s: %w", taskID, err)
	}
	return seq, nil
}

// LastStep returns the task's step with the highest seq, or ErrNotFound
// when it has none.
func (s *Store) LastStep(ctx context.Context, taskID string) (TimelineStep, error) {
	st, err := scanStep(taskID, s.h.Q().QueryRowContext(ctx, s.q.lastStep, taskID))
	if errors.Is(err, sql.ErrNoRows) {
		return TimelineStep{}, fmt.Errorf("last step of task %s: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return TimelineStep{}, fmt.Errorf("last step of task %s: %w", taskID, err)
	}
	return st, nil
}

// scanStep reads one row of a step's columns (queries), a step of task
// taskID.
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
	rows, err := s.h.Q().QueryContext(ctx, s.q.stepCounts, taskID)
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
	_, err := s.h.Q().ExecContext(ctx, s.q.addStep,
		st.Task, st.Seq, st.Node, st.Attempt, st.Status, formatTime(st.StartedAt), ended, st.Error)
	if err != nil {
		return fmt.Errorf("add step %d of task %s: %w", st.Seq, st.Task, err)
	}
	return nil
}

// EndStep records how step seq ended, while it is running: a step that
// ended (done, waiting, or failed: by its run, a takeover or a stop) is
// never rewritten; the first end wins.
func (s *Store) EndStep(ctx context.Context, taskID string, seq int, status, msg string, now time.Time) error {
	_, err := s.h.Q().ExecContext(ctx, s.q.endStep, status, msg, formatTime(now), taskID, seq)
	if err != nil {
		return fmt.Errorf("end step %d of task %s: %w", seq, taskID, err)
	}
	return nil
}

// FailRunningSteps marks every step of the task still running as failed with
// msg (steps left by a process that died or was stopped) and returns how
// many it marked.
func (s *Store) FailRunningSteps(ctx context.Context, taskID, msg string, now time.Time) (int, error) {
	res, err := s.h.Q().ExecContext(ctx, s.q.failRunningSteps, StepFailed, msg, formatTime(now), taskID, StepRunning)
	if err != nil {
		return 0, fmt.Errorf("fail running steps of task %s: %w", taskID, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// FailRunningStepsHeld is FailRunningSteps by the holder owner of the
// task: it writes only while owner holds the task and no stop has ended
// its run (the task is not interrupted), so a process whose run was
// stopped writes no step end, and the stop's ends stand.
func (s *Store) FailRunningStepsHeld(ctx context.Context, taskID, owner, msg string, now time.Time) (int, error) {
	res, err := s.h.Q().ExecContext(ctx, s.q.failRunningStepsHeld, msg, formatTime(now), taskID, owner)
	if err != nil {
		return 0, fmt.Errorf("fail running steps of task %s: %w", taskID, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Steps returns the task's timeline in seq order.
func (s *Store) Steps(ctx context.Context, taskID string) ([]TimelineStep, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.q.steps, taskID)
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

// Settlement is how the steps a former holder left running ended, as its
// checkpoints tell (the holder records a step's end in its commit after
// the checkpoint that holds the step's work, so a holder that died between
// the two left finished steps running).
type Settlement struct {
	// Finished are the nodes whose updates the head checkpoint, written at
	// FinishedAt, was made of: their steps that started before FinishedAt
	// ended done then.
	Finished   []string
	FinishedAt time.Time
	// Saved are the nodes whose updates are saved against the head (a
	// superstep of several tasks): their running steps ended done.
	Saved []string
	// Asked are the nodes whose questions are saved against the head and
	// not answered: their running steps ended waiting.
	Asked []string
}

// Ended returns how the step st ended by the settlement: StepDone or
// StepWaiting, when (FinishedAt for a finished node's step; zero when the
// checkpoints do not tell), and true; false for a step the settlement does
// not end (not running, or cut short by the holder's end).
func (h Settlement) Ended(st TimelineStep) (string, time.Time, bool) {
	switch {
	case st.Status != StepRunning:
		return "", time.Time{}, false
	case slices.Contains(h.Asked, st.Node):
		return StepWaiting, time.Time{}, true
	case slices.Contains(h.Saved, st.Node):
		return StepDone, time.Time{}, true
	case slices.Contains(h.Finished, st.Node) && st.StartedAt.Before(h.FinishedAt):
		return StepDone, h.FinishedAt, true
	}
	return "", time.Time{}, false
}

// SettleRunningSteps ends every step of the task still running, as the
// process that took the task over finds them, in one commit: those that
// how ends (Settlement.Ended) with that status, at how.FinishedAt for a
// finished one and at now for the others; every other one failed with msg
// at now. It returns how many it marked failed.
func (s *Store) SettleRunningSteps(ctx context.Context, taskID string, how Settlement, msg string, now time.Time) (int, error) {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("settle running steps of task %s: %w", taskID, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, s.q.runningSteps, taskID, StepRunning)
	if err != nil {
		return 0, fmt.Errorf("settle running steps of task %s: %w", taskID, err)
	}
	var ends []StepEnd
	failed := 0
	for rows.Next() {
		st, err := scanStep(taskID, rows)
		if err != nil {
			rows.Close()
			return 0, fmt.Errorf("settle running steps of task %s: %w", taskID, err)
		}
		end := StepEnd{Seq: st.Seq, Status: StepFailed, Error: msg, At: now}
		if status, at, ok := how.Ended(st); ok {
			end.Status, end.Error = status, ""
			if !at.IsZero() {
				end.At = at
			}
		} else {
			failed++
		}
		ends = append(ends, end)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, fmt.Errorf("settle running steps of task %s: %w", taskID, err)
	}
	if err := s.endSteps(ctx, tx, taskID, ends); err != nil {
		return 0, err
	}
	return failed, tx.Commit()
}

// FailedSteps returns, per node, how many of the task's steps failed (an
// operator's stop excepted) or were left running since the node last
// finished a step: the failed attempts BeginSteps counts.
func (s *Store) FailedSteps(ctx context.Context, taskID string) (map[string]int, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.q.failedSteps,
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
