package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"assistant/business"
	"assistant/runs"
)

// TaskSummary is one line of List.
type TaskSummary struct {
	Task  string `json:"task"`
	Order string `json:"order"`
	// Status is the status show reports for the task now (asNow): the
	// run status recorded after each command, or failed (stage failed) for
	// a task waiting for approval of a draft whose expires_at has passed
	// (no answer can submit it; recover records that end).
	Status    string    `json:"status"`
	Stage     string    `json:"stage"`
	CreatedAt time.Time `json:"created_at"` // UTC
	UpdatedAt time.Time `json:"updated_at"` // UTC
	// Owner is the task's owner when it is not the current user (a task
	// listed as awaiting its approver, through a grant); null otherwise.
	Owner string `json:"owner,omitempty"`
	// HolderAlive is, for a task whose view names a holder (a running
	// task, or an interrupted one a process still holds: View.Holder),
	// whether that process is alive; false means it is gone and recover or
	// resume continues the run. nil otherwise.
	HolderAlive *bool `json:"holder_alive"`
}

// StatusExpired selects, in a list filter, the tasks whose draft expired
// while they waited for approval: List shows them failed, as show does,
// while the record still says waiting until recover records that end.
const StatusExpired = "expired"

// Statuses lists the statuses a list filter may name: the run statuses and
// expired.
var Statuses = []string{StatusRunning, StatusWaiting, StatusExpired, StatusInterrupted, StatusDone, StatusCancelled, StatusFailed}

// CheckStatus returns ErrInvalid unless status is "" or one of Statuses.
func CheckStatus(status string) error {
	if status != "" && !slices.Contains(Statuses, status) {
		return errorf(Hint{}, "%w: %s must be one of %s, not %q", ErrInvalid, InputStatus, strings.Join(Statuses, ", "), status)
	}
	return nil
}

// ListOptions are the input of ListTasks.
type ListOptions struct {
	User string
	// Statuses keeps the tasks whose status is one of them (Statuses;
	// waiting excludes an expired task, expired selects it); none keeps
	// all.
	Statuses []string
	// Batch keeps the tasks of the rows of the user's batch of that id;
	// "" keeps all. An unknown batch (or another user's) is ErrNotFound.
	Batch string
	// Limit keeps at most that many tasks, the oldest first; 0 keeps all.
	Limit int
	// AwaitingMe lists the return tasks User may decide now instead: their
	// own and those of owners who granted them, waiting and not expired
	// (not with Statuses or Batch).
	AwaitingMe bool
	// After keeps only the tasks after that place in the list's order
	// (the next page after a task); the zero ListPosition keeps all.
	After ListPosition
}

// ListPosition is a place in a list's order, oldest first: a task's
// created_at, then its id. A page of a list continues at the tasks after
// the last one of the page before; a task made since (created later) is
// after it, so the pages neither repeat nor skip a task because of it.
type ListPosition struct {
	CreatedAt time.Time
	Task      string
}

// PositionOf is the place of sum in a list's order.
func PositionOf(sum TaskSummary) ListPosition {
	return ListPosition{CreatedAt: sum.CreatedAt, Task: sum.Task}
}

// IsZero reports whether p is the start of the list (before every task).
func (p ListPosition) IsZero() bool { return p.Task == "" && p.CreatedAt.IsZero() }

// before reports whether p comes before the task created at created with
// id task in a list's order; the zero position comes before every task.
func (p ListPosition) before(created time.Time, task string) bool {
	if p.IsZero() {
		return true
	}
	if c := p.CreatedAt.Compare(created); c != 0 {
		return c < 0
	}
	return p.Task < task
}

// ParseStatuses splits the values of a status filter, each one status or several
// separated by commas ("waiting,expired"), into a list without repeats.
// An unknown or empty status is ErrInvalid naming the allowed ones.
func ParseStatuses(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for _, st := range strings.Split(v, ",") {
			st = strings.TrimSpace(st)
			if st == "" {
				return nil, errorf(Hint{}, "%w: %s must be one of %s, not an empty value", ErrInvalid, InputStatus, strings.Join(Statuses, ", "))
			}
			if err := CheckStatus(st); err != nil {
				return nil, err
			}
			if !slices.Contains(out, st) {
				out = append(out, st)
			}
		}
	}
	return out, nil
}

// CheckListOptions checks o without touching any file; errors match
// ErrInvalid.
func CheckListOptions(o ListOptions) error {
	for _, st := range o.Statuses {
		if err := CheckStatus(st); err != nil {
			return err
		}
	}
	if o.Limit < 0 {
		return errorf(Hint{}, "%w: %s must be 0 (no limit) or more, not %d", ErrInvalid, InputLimit, o.Limit)
	}
	if o.AwaitingMe && (len(o.Statuses) > 0 || o.Batch != "") {
		return errorf(Hint{}, "%w: %s lists waiting tasks you may decide; it does not go with %s or %s", ErrInvalid, InputAwaitingMe, InputStatus, InputBatch)
	}
	if o.Batch != "" {
		if err := ValidTaskID(o.Batch); err != nil {
			return errorf(Hint{}, "%w: %s: %v", ErrInvalid, InputBatch, err)
		}
	}
	return nil
}

// List returns the user's tasks, oldest first, with the run status and stage
// recorded after each command (expired for a waiting task whose draft
// expired); status "" lists all. An unknown status is ErrInvalid.
func (s *Service) List(ctx context.Context, user, status string) ([]TaskSummary, error) {
	o := ListOptions{User: user}
	if status != "" {
		o.Statuses = []string{status}
	}
	return s.ListTasks(ctx, o)
}

// ListTasks returns the user's tasks that o selects, oldest first, with
// the run status and stage recorded after each command; a waiting task
// whose draft has expired by the service clock shows as expired. It writes
// nothing. Errors: ErrInvalid (CheckListOptions), ErrNotFound (o.Batch
// unknown or another user's), storage errors.
func (s *Service) ListTasks(ctx context.Context, o ListOptions) ([]TaskSummary, error) {
	if err := CheckListOptions(o); err != nil {
		return nil, err
	}
	if o.AwaitingMe {
		return s.awaitingMe(ctx, o)
	}
	var inBatch map[string]bool
	if o.Batch != "" {
		var err error
		if inBatch, err = s.batchTasks(ctx, o.Batch, o.User); err != nil {
			return nil, err
		}
	}
	tasks, err := s.listRecords(ctx, o)
	if err != nil {
		return nil, err
	}
	decided, err := s.desk.DecidedWaiting(ctx, o.User)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	now := s.now()
	out := make([]TaskSummary, 0, len(tasks))
	for _, t := range tasks {
		if inBatch != nil && !inBatch[t.ID] || !o.After.before(t.CreatedAt, t.ID) {
			continue
		}
		var expired bool
		sum, err := judgedNow(ctx, s, t, func(t runs.TaskRecord, first bool) (TaskSummary, bool, error) {
			line, exp, err := s.listed(ctx, t, decided[t.ID], now, first)
			expired = exp
			return line, err == nil && line.HolderAlive != nil && !*line.HolderAlive, err
		})
		if err != nil {
			return nil, err
		}
		if len(o.Statuses) > 0 && !slices.Contains(o.Statuses, sum.Status) && !(expired && slices.Contains(o.Statuses, StatusExpired)) {
			continue
		}
		out = append(out, sum)
		if o.Limit > 0 && len(out) == o.Limit {
			break
		}
	}
	return out, nil
}

// listed is the line of List for record t, as show reports it (asShown,
// asAsked when the decision trail holds an answer of it: decided), and
// whether its draft had expired at now; first is whether it is the line's
// first look (fault point list:before-holder).
func (s *Service) listed(ctx context.Context, t runs.TaskRecord, decided bool, now time.Time, first bool) (TaskSummary, bool, error) {
	t = s.asShown(ctx, t)
	if decided {
		t = s.asAsked(ctx, t)
	}
	expired, err := s.expiredNow(ctx, t, now)
	if err != nil {
		return TaskSummary{}, false, err
	}
	if first {
		Fault("list:before-holder")
	}
	return s.summary(t, expired), expired, nil
}

// listRecords reads the task records a list may show, in the store's
// order (created_at, task_id): with one status asked for that a record
// holds as it is shown, the store filters: running and interrupted are
// shown only for records that say so; done and cancelled also for
// records left running by a process that is gone, or interrupted by a stop
// that came too late (recordsShownAs). Other
// filters (waiting, expired, failed: read from drafts and heads too;
// several statuses) read every record of the user.
func (s *Service) listRecords(ctx context.Context, o ListOptions) ([]runs.TaskRecord, error) {
	if len(o.Statuses) != 1 {
		return s.runs.ListTasks(ctx, o.User, "")
	}
	switch st := o.Statuses[0]; st {
	case StatusRunning, StatusInterrupted:
		return s.runs.ListTasks(ctx, o.User, st)
	case StatusDone, StatusCancelled:
		return s.recordsShownAs(ctx, o.User, st)
	}
	// failed is also shown for a record still waiting (or stopped) on a
	// draft that expired (expiredNow): every record is read.
	return s.runs.ListTasks(ctx, o.User, "")
}

// recordsShownAs reads user's task records that may be shown with status
// (asShown): those recorded with it and those recorded running, whose
// process may be gone, and, for an ended status, those recorded
// interrupted (a stop too late), merged in the store's order (created_at,
// task_id). The caller applies asShown.
func (s *Service) recordsShownAs(ctx context.Context, user, status string) ([]runs.TaskRecord, error) {
	recorded, err := s.runs.ListTasks(ctx, user, status)
	if err != nil {
		return nil, err
	}
	running, err := s.runs.ListTasks(ctx, user, StatusRunning)
	if err != nil {
		return nil, err
	}
	all := append(recorded, running...)
	if status != StatusWaiting {
		// A stop that came too late leaves a record interrupted whose
		// run ended (asShown).
		stopped, err := s.runs.ListTasks(ctx, user, StatusInterrupted)
		if err != nil {
			return nil, err
		}
		all = append(all, stopped...)
	}
	slices.SortStableFunc(all, func(a, b runs.TaskRecord) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return all, nil
}

// asAsked is t, a return task recorded waiting, with the stage of the
// question its head asks, as show reports it: the record is written after
// an answer's run, so an answer whose checkpoint was lost (an edit,
// revise or reason the decision trail holds, which stands until given
// again) leaves a record a question ahead of its head (need_reason after
// a revise, while the head still asks for approval). A head that cannot
// be read, asks nothing, or a live holder leaves t as recorded. Writes
// nothing; reads the task's head, so List calls it only for a task the
// trail holds an answer of (business.Store.DecidedWaiting).
func (s *Service) asAsked(ctx context.Context, t runs.TaskRecord) runs.TaskRecord {
	if t.Status != StatusWaiting || t.Kind != runs.KindReturn || s.holderAlive(t.Lease) {
		return t
	}
	snap, err := headOrNil(s.cmd.graph.State(ctx, t.ID))
	if err != nil || snap == nil || !snap.Waiting() {
		return t
	}
	if v := view(t, snap); v.Status == StatusWaiting {
		t.Stage = v.Stage
	}
	return t
}

// expiredNow reports whether t is a return task recorded waiting (or
// stopped) at an approval (stage draft_ready) whose draft's expires_at is
// at or before now: show reports it failed (asNow). Only such a task costs
// a read of its draft.
func (s *Service) expiredNow(ctx context.Context, t runs.TaskRecord, now time.Time) (bool, error) {
	if (t.Status != StatusWaiting && t.Status != StatusInterrupted) || t.Stage != StageDraftReady || t.Kind == runs.KindBatch {
		return false, nil
	}
	d, err := s.desk.DraftByTask(ctx, t.ID)
	if errors.Is(err, business.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list: %w", err)
	}
	return !now.Before(d.ExpiresAt), nil
}

// summary is t, a record as show reports it (asShown), as a line of List:
// failed when its draft expired, and whether the holder its view names
// is alive (addHolder's rule).
func (s *Service) summary(t runs.TaskRecord, expired bool) TaskSummary {
	sum := TaskSummary{Task: t.ID, Order: t.OrderID, Status: t.Status, Stage: t.Stage, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if expired {
		sum.Status, sum.Stage = StatusFailed, StageFailed
	}
	if sum.Status == StatusRunning || (sum.Status == StatusInterrupted && t.Lease.Owner != "") {
		alive := s.holderAlive(t.Lease)
		sum.HolderAlive = &alive
	}
	return sum
}

// batchTasks returns the task ids of the rows of batch id, which must be
// a batch of user (ErrNotFound otherwise, as for any task of another
// user).
func (s *Service) batchTasks(ctx context.Context, id, user string) (map[string]bool, error) {
	b, err := s.task(ctx, id, user)
	if err != nil {
		return nil, err
	}
	if b.Kind != runs.KindBatch {
		return nil, errorf(Hint{}, "%w: %s %s: task %s is not a batch", ErrInvalid, InputBatch, id, id)
	}
	in := map[string]bool{}
	for after := 0; ; {
		rows, err := s.runs.BatchRows(ctx, id, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		if len(rows) == 0 {
			return in, nil
		}
		for _, r := range rows {
			in[r.TaskID] = true
		}
		after = rows[len(rows)-1].RowNo
	}
}
