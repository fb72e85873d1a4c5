package business

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// rowMemo keeps, inside one InTx transaction, every decision, draft and
// application of the tasks a chunk of a decide run is about to answer
// (PreloadTasks), so that each row's reads of them answer from memory:
// the trail (Decisions, read twice a row), the draft an answer binds to
// (Held, and SubmitTx's read), and its application (ApplicationByTask,
// SubmitTx's reuse check): three statements for the chunk instead of
// seven a row.
//
// Why it stays true: the transaction holds the write lock from its first
// statement (BEGIN IMMEDIATE; the advisory write lock on PostgreSQL), so
// no other connection changes these rows until it ends, and every write
// this Store makes to them forgets the task first (forget): a savepoint
// rolled back afterwards leaves nothing wrong behind, only a task read
// again (a decision written forgets only the trail: forgetTrail). A task
// that was not preloaded, or was forgotten, is read as
// before. Outside InTx a Store has no memo (nil) and reads everything.
type rowMemo struct {
	mu     sync.Mutex
	tasks  map[string]*taskRows // task id → all its rows
	drafts map[string]string    // draft id → task id, for every draft of tasks
}

// taskRows are the rows of one task, complete.
type taskRows struct {
	trail      []Decision             // in the order Decisions returns
	trailKnown bool                   // false once a decision of the task is written
	drafts     []Draft                // every version
	apps       map[string]Application // draft id → its application
}

// trail returns the decisions of task, ok false when not known.
func (m *rowMemo) trail(task string) ([]Decision, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[task]
	if !ok || !t.trailKnown {
		return nil, false
	}
	return append([]Decision{}, t.trail...), true
}

// draft returns draft draftID, ok false when not known (a draft of a task
// not preloaded, or none at all).
func (m *rowMemo) draft(draftID string) (Draft, bool) {
	if m == nil {
		return Draft{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[m.drafts[draftID]]
	if !ok {
		return Draft{}, false
	}
	i := slices.IndexFunc(t.drafts, func(d Draft) bool { return d.ID == draftID })
	if i < 0 {
		return Draft{}, false
	}
	return t.drafts[i], true
}

// application returns the application of draft draftID: known is false
// when the draft is not known, found false when it has none.
func (m *rowMemo) application(draftID string) (a Application, known, found bool) {
	if m == nil {
		return Application{}, false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[m.drafts[draftID]]
	if !ok {
		return Application{}, false, false
	}
	a, found = t.apps[draftID]
	return a, true, found
}

// applicationOfTask returns the application made from a draft of task, as
// ApplicationByTask: known is false when the task is not known, found
// false when none of its drafts has one.
func (m *rowMemo) applicationOfTask(task string) (a Application, known, found bool) {
	if m == nil {
		return Application{}, false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[task]
	if !ok {
		return Application{}, false, false
	}
	for _, d := range t.drafts {
		if a, ok := t.apps[d.ID]; ok {
			return a, true, true
		}
	}
	return Application{}, true, false
}

// forgetTrail drops the trail of task: this transaction is about to write
// one of its decisions.
func (m *rowMemo) forgetTrail(task string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.tasks[task]; ok {
		t.trail, t.trailKnown = nil, false
	}
}

// forget drops all that is known of task: this transaction is about to
// write one of its drafts or applications.
func (m *rowMemo) forget(task string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.tasks[task]; ok {
		for _, d := range t.drafts {
			delete(m.drafts, d.ID)
		}
		delete(m.tasks, task)
	}
}

// preloadTasksPerStatement bounds the task ids of one PreloadTasks
// statement: a decide chunk's rows, far below either database's limit
// of parameters.
const preloadTasksPerStatement = 250

// PreloadTasks reads, inside InTx, the decisions, drafts and applications
// of the tasks taskIDs, three statements for every 250 tasks, and keeps
// them for the rest of the transaction (see rowMemo), so that the rows of
// a decide chunk read none of them again. Outside InTx it does nothing.
// Errors: the database's, wrapped.
func (s *Store) PreloadTasks(ctx context.Context, taskIDs []string) error {
	if s.rows == nil {
		return nil
	}
	for len(taskIDs) > 0 {
		n := min(len(taskIDs), preloadTasksPerStatement)
		if err := s.preloadTasks(ctx, taskIDs[:n]); err != nil {
			return err
		}
		taskIDs = taskIDs[n:]
	}
	return nil
}

// preloadTasks is PreloadTasks for at most preloadTasksPerStatement tasks.
func (s *Store) preloadTasks(ctx context.Context, taskIDs []string) error {
	args := make([]any, len(taskIDs))
	got := make(map[string]*taskRows, len(taskIDs))
	for i, id := range taskIDs {
		args[i] = id
		got[id] = &taskRows{trail: []Decision{}, trailKnown: true, apps: map[string]Application{}}
	}
	// The trail in Decisions' order within each task.
	err := scanEach(ctx, s, s.q.decisionsOf(len(taskIDs)), args,
		scanDecision, func(d Decision) { got[d.TaskID].trail = append(got[d.TaskID].trail, d) })
	if err != nil {
		return fmt.Errorf("decisions of %d tasks: %w", len(taskIDs), err)
	}
	err = scanEach(ctx, s, s.q.draftsOf(len(taskIDs)), args,
		scanDraft, func(d Draft) { got[d.TaskID].drafts = append(got[d.TaskID].drafts, d) })
	if err != nil {
		return fmt.Errorf("drafts of %d tasks: %w", len(taskIDs), err)
	}
	var task string // the task of the application scanned last
	err = scanEach(ctx, s, s.q.applicationsOf(len(taskIDs)), args,
		func(sc scanner) (Application, error) { return scanApplication(prefixed{sc, &task}) },
		func(a Application) { got[task].apps[a.DraftID] = a })
	if err != nil {
		return fmt.Errorf("applications of %d tasks: %w", len(taskIDs), err)
	}
	m := s.rows
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, t := range got {
		m.tasks[id] = t
		for _, d := range t.drafts {
			m.drafts[d.ID] = id
		}
	}
	return nil
}

// scanEach runs query with args on s's pool or transaction, reads each
// row with scan and hands it to add.
func scanEach[T any](ctx context.Context, s *Store, query string, args []any, scan func(scanner) (T, error), add func(T)) error {
	rows, err := s.h.Q().QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			rows.Close()
			return err
		}
		add(v)
	}
	return errors.Join(rows.Err(), rows.Close())
}

// prefixed scans a row whose first column goes to first and the rest to
// the destinations the wrapped scanner's caller gives.
type prefixed struct {
	sc    scanner
	first any
}

// Scan scans first, then dest.
func (p prefixed) Scan(dest ...any) error {
	return p.sc.Scan(append([]any{p.first}, dest...)...)
}
