package runs

import (
	"context"
	"fmt"
	"time"
)

// Set-based reads for a chunk of batch or decide rows: what a row reads
// of its task one statement at a time, read for every task of the chunk
// in one statement each, inside the chunk's transaction (which holds the
// file's write lock, so what is read stays true while the chunk runs).
// The task ids go in one IN list, a parameter each (a chunk holds at most
// a few hundred tasks, far below either database's parameter limit).

// inList returns the ids as arguments after the ones given.
func inList(ids []string, args ...any) []any {
	for _, id := range ids {
		args = append(args, id)
	}
	return args
}

// TasksIn returns the records of those of taskIDs that exist, by task id:
// Task for many tasks in one statement. An unknown task is left out.
func (s *Store) TasksIn(ctx context.Context, taskIDs []string) (map[string]TaskRecord, error) {
	out := make(map[string]TaskRecord, len(taskIDs))
	if len(taskIDs) == 0 {
		return out, nil
	}
	rows, err := s.h.Q().QueryContext(ctx, s.q.tasksIn(len(taskIDs)), inList(taskIDs)...)
	if err != nil {
		return nil, fmt.Errorf("records of %d tasks: %w", len(taskIDs), err)
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("records of %d tasks: %w", len(taskIDs), err)
		}
		out[t.ID] = t
	}
	return out, rows.Err()
}

// StepTally is what a task's timeline tells the step that starts next:
// the highest seq so far (0 for none), the steps each node has had, and
// each node's failed attempts (FailedSteps).
type StepTally struct {
	Top      int
	Attempts map[string]int
	Failed   map[string]int
}

// StepTallies returns StepCounts and FailedSteps of each of taskIDs, in
// two statements for all of them; a task without steps has a zero Top and
// empty maps.
func (s *Store) StepTallies(ctx context.Context, taskIDs []string) (map[string]StepTally, error) {
	out := make(map[string]StepTally, len(taskIDs))
	for _, id := range taskIDs {
		out[id] = StepTally{Attempts: map[string]int{}, Failed: map[string]int{}}
	}
	if len(taskIDs) == 0 {
		return out, nil
	}
	err := s.eachCount(ctx, s.q.stepCountsIn(len(taskIDs)), inList(taskIDs),
		func(task, node string, n, top int) {
			t := out[task]
			t.Attempts[node] = n
			t.Top = max(t.Top, top)
			out[task] = t
		})
	if err != nil {
		return nil, err
	}
	// FailedSteps' rule: failed (an operator's stop excepted) or left
	// running since the node last finished a step.
	err = s.eachCount(ctx, s.q.failedStepsIn(len(taskIDs)),
		inList(taskIDs, StepFailed, StepRunning, MsgInterrupted, StepDone, StepWaiting),
		func(task, node string, n, _ int) { out[task].Failed[node] = n })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachCount runs query, whose rows are (task, node, count, seq), and
// calls fn with each.
func (s *Store) eachCount(ctx context.Context, query string, args []any, fn func(task, node string, n, seq int)) error {
	rows, err := s.h.Q().QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("step counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			task, node string
			n, seq     int
		)
		if err := rows.Scan(&task, &node, &n, &seq); err != nil {
			return fmt.Errorf("step counts: %w", err)
		}
		fn(task, node, n, seq)
	}
	return rows.Err()
}

// AcquireRead is AcquireLease for a task whose record t was read with no
// lease on it: one guarded statement makes me the holder, raises the
// fencing epoch and sets the status to running, only while the lease is
// still free and the status and epoch are still the ones read. ok false
// (nothing written) when they are not, or when t shows a holder: the
// caller then takes the lease with AcquireLease, which reads it again.
// Inside a chunk's transaction, whose records were read under its write
// lock, it saves AcquireLease's read and savepoint.
func (s *Store) AcquireRead(ctx context.Context, t TaskRecord, me Lease, now time.Time) (Acquired, bool, error) {
	if t.Lease.Owner != "" {
		return Acquired{}, false, nil
	}
	res, err := s.h.Q().ExecContext(ctx, s.q.acquireRead,
		me.Owner, me.PID, me.Host, formatTime(me.Until), formatTime(now), t.ID, t.Lease.Epoch, t.Status)
	if err != nil {
		return Acquired{}, false, fmt.Errorf("acquire lease of task %s: %w", t.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return Acquired{}, false, err
	}
	return Acquired{PrevStatus: t.Status, Epoch: t.Lease.Epoch + 1}, true, nil
}

// stepsPerInsert bounds the steps AddSteps writes in one statement: eight
// parameters a step, far below either database's parameter limit.
const stepsPerInsert = 250

// AddSteps records steps, each ended or running, as AddStep does one: in
// one INSERT of many rows for up to stepsPerInsert steps, so the timeline
// of a chunk of rows costs a statement or two instead of one a step (on
// PostgreSQL a statement is a round trip to the server). Errors: the
// insert's (a step already recorded is a unique violation).
func (s *Store) AddSteps(ctx context.Context, steps []TimelineStep) error {
	for len(steps) > 0 {
		n := min(len(steps), stepsPerInsert)
		args := make([]any, 0, 8*n)
		for _, st := range steps[:n] {
			ended := ""
			if !st.EndedAt.IsZero() {
				ended = formatTime(st.EndedAt)
			}
			args = append(args, st.Task, st.Seq, st.Node, st.Attempt, st.Status, formatTime(st.StartedAt), ended, st.Error)
		}
		if _, err := s.h.Q().ExecContext(ctx, s.q.addSteps(n), args...); err != nil {
			return fmt.Errorf("add %d steps (task %s first): %w", n, steps[0].Task, err)
		}
		steps = steps[n:]
	}
	return nil
}

// Progress is a row task's status and stage to record while its holder
// keeps the lease (RecordProgress), at At.
type Progress struct {
	Task, Status, Stage string
	// ErrorCode and Error are as Release's: why a failed task failed.
	ErrorCode, Error string
	At               time.Time
}

// RecordProgressAll records, as RecordProgress does for one task, the
// status and stage of tasks that owner holds, in one statement for up to
// outcomesPerUpdate tasks: UPDATE … FROM a VALUES list, guarded by the
// lease owner as RecordProgress is. A status of interrupted is kept (a
// stop recorded meanwhile). Errors: ErrConflict when owner does not hold
// every task's lease (the caller's transaction then rolls back what was
// written).
func (s *Store) RecordProgressAll(ctx context.Context, owner string, ps []Progress) error {
	for len(ps) > 0 {
		n := min(len(ps), outcomesPerUpdate)
		args := make([]any, 0, 1+6*n)
		args = append(args, owner)
		distinct := make(map[string]bool, n)
		for _, p := range ps[:n] {
			args = append(args, p.Task, p.Status, p.Stage, formatTime(p.At), p.ErrorCode, p.Error)
			distinct[p.Task] = true
		}
		res, err := s.h.Q().ExecContext(ctx, s.q.recordProgressAll(n), args...)
		if err != nil {
			return fmt.Errorf("record progress of %d tasks (%s first): %w", n, ps[0].Task, err)
		}
		changed, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("record progress of %d tasks (%s first): %w", n, ps[0].Task, err)
		}
		if int(changed) != len(distinct) {
			return fmt.Errorf("record progress of %d tasks (%s first): %d held by %s: %w", len(distinct), ps[0].Task, changed, owner, ErrConflict)
		}
		ps = ps[n:]
	}
	return nil
}
