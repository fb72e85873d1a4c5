package returns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"assistant/business"
	"assistant/runs"
)

// BatchOptions are the input of StartBatch.
type BatchOptions struct {
	Batch       string
	User        string
	Rows        []runs.BatchRow
	Fingerprint string // of the file, from ParseBatch
	Chunk       int    // rows per checkpoint; 0 means DefaultBatchChunk
	// TTL is the draft validity of every row's task (InputDraftTTL),
	// part of the batch's input; 0 means business.DefaultDraftTTL.
	TTL time.Duration
	// AllowOverlap starts a new batch even when a running or stopped
	// batch of the user holds some of its orders, or a task of the user
	// that has not ended names one (InputAllowOverlap); without it that is
	// ErrConflict (overlap). Not part of the input.
	AllowOverlap bool
}

// StartBatch creates a batch task with its rows and runs it; the same batch
// id with the same file (and draft validity) continues it (continueRows:
// a stopped or abandoned batch runs to its end, a finished one is reported,
// one another live process runs is ErrConflict naming that process), with
// another file is ErrConflict. A row whose order an earlier row names
// already is not run: it is stored handled, duplicate_order, naming the
// earlier row's line (markDuplicates). Errors: ErrInvalid, ErrConflict,
// storage errors.
func (s *Service) StartBatch(ctx context.Context, o BatchOptions) (*View, error) {
	if err := ValidTaskID(o.Batch); err != nil {
		return nil, fmt.Errorf("%w: batch id: %v", ErrInvalid, err)
	}
	if err := ValidDraftTTL(o.TTL); err != nil {
		return nil, errorf(Hint{}, "%w (%s)", err, InputDraftTTL)
	}
	if o.TTL == 0 {
		o.TTL = business.DefaultDraftTTL
	}
	fp := "batch:" + o.Fingerprint
	if o.TTL != business.DefaultDraftTTL {
		// The default keeps the form batches were recorded with before
		// the validity was part of their input.
		fp += fmt.Sprintf(":ttl=%d", int64(o.TTL/time.Second))
	}
	rows := markDuplicates(o.Rows, func(r runs.BatchRow) string { return r.OrderID }, OutcomeDuplicateOrder, "order")
	if !o.AllowOverlap {
		if err := s.overlap(ctx, o.Batch, o.User, rows); err != nil {
			return nil, err
		}
	}
	return s.startRows(ctx, rowsTask{id: o.Batch, user: o.User, fingerprint: fp, total: len(rows), each: eachOf(rows), chunk: o.Chunk, ttl: o.TTL, of: RowsOfOrders, idName: "batch id"})
}

// overlapShown is how many of the orders a new batch shares with a held
// one its overlap error names.
const overlapShown = 3

// overlap checks, before a new batch id is created, that no batch of
// user that is running (or left running by a process that died) or
// stopped holds an order of rows (runs.Store.HeldOrders): two batches
// over the same orders would make two tasks per order, and the second
// task's draft meets the first's open application. A batch id that exists
// already is the same batch given again (or another input, which
// startRows refuses): nothing is checked. Errors: ErrConflict naming the
// first such batch, how many orders it shares and a few of them; storage
// errors.
func (s *Service) overlap(ctx context.Context, id, user string, rows []runs.BatchRow) error {
	if _, err := s.runs.Task(ctx, id); !errors.Is(err, runs.ErrNotFound) {
		return nil // the same batch again, or startRows' error to report
	}
	orders := make(map[string]string, len(rows)) // order: its row's task
	for _, r := range rows {
		if r.DuplicateOf == 0 {
			orders[r.OrderID] = r.TaskID
		}
	}
	for _, status := range []string{StatusRunning, StatusInterrupted} {
		held, err := s.runs.ListTasks(ctx, user, status)
		if err != nil {
			return fmt.Errorf("batches of %s: %w", user, err)
		}
		for _, b := range held {
			if b.Kind != runs.KindBatch || !strings.HasPrefix(b.Fingerprint, "batch:") || b.ID == id {
				continue
			}
			var shared []string
			n := 0
			err := s.runs.HeldOrders(ctx, b.ID, func(order string) bool {
				if _, ok := orders[order]; ok {
					delete(orders, order) // a row of b is counted once
					if n++; len(shared) < overlapShown {
						shared = append(shared, order)
					}
				}
				return true
			})
			if err != nil {
				return err
			}
			if n > 0 {
				return overlapError(b, n, shared)
			}
		}
	}
	return s.openTasks(ctx, user, orders)
}

// openTasks checks that no return task of user that has not ended
// (waiting for an answer, or running) names an order of orders: a
// finished batch holds nothing, but the tasks its rows made still wait
// for approval, and a second task for their orders would meet the first's
// application. orders maps each order to its row's task; that task
// itself is the row's own (reused or a conflict of its own), not a second
// one. Errors: ErrConflict naming how many orders have such a
// task and the first of those tasks; storage errors.
func (s *Service) openTasks(ctx context.Context, user string, orders map[string]string) error {
	var tasks []string
	for _, status := range []string{StatusWaiting, StatusRunning} {
		open, err := s.runs.ListTasks(ctx, user, status)
		if err != nil {
			return fmt.Errorf("tasks of %s: %w", user, err)
		}
		for _, t := range open {
			row, ok := orders[t.OrderID]
			if t.Kind == runs.KindBatch || !ok || row == t.ID {
				continue
			}
			delete(orders, t.OrderID) // an order is counted once
			tasks = append(tasks, t.ID)
		}
	}
	if len(tasks) == 0 {
		return nil
	}
	some := strings.Join(tasks[:min(len(tasks), overlapShown)], ", ")
	if len(tasks) > overlapShown {
		some += ", …"
	}
	anyway := &Hint{Before: "to run this one over the same orders anyway, give the same command with", With: []InputValue{{Input: InputAllowOverlap}}}
	h := Hint{Before: "decide those tasks first (see them with", Do: DoList, With: []InputValue{{Input: InputStatus, Value: StatusWaiting}}, After: ");", Then: anyway}
	return errorf(h,
		"%d of this file's orders already have a task that has not ended (%s); a second task for an order would meet the first one's application, so this batch was not started and nothing was written: %w", len(tasks), some, ErrConflict)
}

// overlapError is the error of a new batch whose rows name n orders that
// batch b holds, shared the first of them: ErrConflict (exit 3).
func overlapError(b runs.TaskRecord, n int, shared []string) error {
	anyway := &Hint{Before: "to run this one over the same orders anyway, give the same command with", With: []InputValue{{Input: InputAllowOverlap}}}
	state, h := "running", Hint{Before: "let that batch finish first (see it with", Do: DoShow, Task: b.ID, After: ");", Then: anyway}
	if b.Status == StatusInterrupted {
		state, h = "stopped", Hint{Before: "finish that batch first with", Do: DoResume, Task: b.ID, After: ";", Then: anyway}
	}
	some := strings.Join(shared, ", ")
	if n > len(shared) {
		some += ", …"
	}
	return errorf(h,
		"batch %s (%s) already holds %d of this file's orders (%s); a second task for an order would meet the first one's application, so this batch was not started and nothing was written: %w", b.ID, state, n, some, ErrConflict)
}
