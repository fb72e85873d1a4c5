package returns

import (
	"context"
	"errors"
	"fmt"

	"assistant/business"
	"assistant/runs"
)

// RowReport is one row of a batch's or a decide run's report (EachRow,
// decide's output): where it is in the file, what it asked and
// what it came to. A field that does not apply to the kind of rows (order
// in a decide row, action and draft in a batch row) is empty, printed
// null.
type RowReport struct {
	Line   int    `json:"line"` // in the file; the header is line 1
	Task   string `json:"task"`
	Order  string `json:"order"`  // a batch row's order
	Action string `json:"action"` // a decide row's action
	Draft  string `json:"draft"`  // a decide row's draft, if it named one
	// Outcome is empty until the row was handled; then the row task's
	// stage (a batch row: draft_ready, need_reason, failed; a decide row:
	// submitted, cancelled, failed), or the refusal (not_found, conflict,
	// invalid_input, duplicate_order, duplicate_task).
	Outcome string `json:"outcome"`
	// ErrorCode says what went wrong: the refusal's code, or a failed
	// task's error code (draft_expired, return_window_closed, …); empty
	// when nothing did.
	ErrorCode string `json:"error_code"`
	Error     string `json:"error"`
	// DuplicateOf is the line of the earlier row a duplicate repeats; nil
	// for any other row.
	DuplicateOf *int `json:"duplicate_of"`
}

// RowsView is the report of a batch task's rows (EachRow).
type RowsView struct {
	// SchemaVersion prints as returns.SchemaVersion (docs/json.md).
	SchemaVersion Schema `json:"schema_version"`
	Task          string `json:"task"`
	// Of is what the rows are: RowsOfOrders (a batch) or RowsOfDecisions
	// (a decide run).
	Of     string      `json:"of"`
	Status string      `json:"status"` // the batch task's run status
	Rows   []RowReport `json:"rows"`
}

// DecideView is what decide prints: the decide run's view (as show
// prints a batch) with the report of every row.
type DecideView struct {
	*View
	Rows []RowReport `json:"rows"`
}

// rowsPage is how many rows a report reads at a time.
const rowsPage = 1000

// ShowRows returns the report of the rows of batch task (a batch or a
// decide run) of user, every row in file order, handled or not. It writes
// nothing. Errors: ErrInvalid (a bad id, a task that is not a batch),
// ErrNotFound (unknown, or another user's), storage errors.
func (s *Service) ShowRows(ctx context.Context, task, user string) (*RowsView, error) {
	var rows []RowReport
	out, err := s.EachRow(ctx, task, user, func(r RowReport) error {
		rows = append(rows, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rows != nil {
		out.Rows = rows
	}
	return out, nil
}

// EachRow is ShowRows without the rows held in memory: it checks task as
// ShowRows does, then calls fn with the report of each row in file order,
// reading them rowsPage at a time, and returns the report without its
// rows (Rows empty). A command that prints the rows of a large run
// (decide's report) streams them through fn. It writes nothing. Errors as
// ShowRows, and fn's, which ends the reading.
func (s *Service) EachRow(ctx context.Context, task, user string, fn func(RowReport) error) (*RowsView, error) {
	v, err := s.Show(ctx, task, user)
	if err != nil {
		return nil, err
	}
	if v.Batch == nil {
		return nil, errorf(Hint{Before: "run", Do: DoShow, Task: task}, "%w: task %s is not a batch or a decide run; %s shows the rows of one", ErrInvalid, task, InputRows)
	}
	out := &RowsView{Task: v.Task, Of: v.Batch.Of, Status: v.Status, Rows: []RowReport{}}
	for after := 0; ; {
		rows, err := s.runs.BatchRows(ctx, task, after, rowsPage)
		if err != nil {
			return nil, errorf(Hint{}, "show %s %s: %w", task, InputRows, err)
		}
		if len(rows) == 0 {
			return out, nil
		}
		for _, r := range rows {
			if err := fn(rowReport(r)); err != nil {
				return nil, err
			}
		}
		after = rows[len(rows)-1].RowNo
	}
}

// rowReport is stored row r as reported.
func rowReport(r runs.BatchRow) RowReport {
	rep := RowReport{Line: r.FileLine(), Task: r.TaskID, Order: r.OrderID, Action: r.Action, Draft: r.DraftID,
		Outcome: r.Outcome, ErrorCode: r.ErrorCode, Error: r.Error}
	if r.DuplicateOf != 0 {
		d := r.DuplicateOf
		rep.DuplicateOf = &d
	}
	return rep
}

// DecisionRow is one line of a decide file: a task waiting for approval,
// the draft its question carries, and the action to give it ("" until a
// person or a script fills it in).
type DecisionRow struct {
	Task   string `json:"task"`
	Action string `json:"action"`
	Draft  string `json:"draft"`
}

// DecisionRows returns, for the tasks of a list, a decide file's row for
// each one waiting for approval (status waiting, stage draft_ready) with
// the draft its question carries; tasks that wait for nothing a decision
// answers (a reason, an expired draft, an ended task) are left out, and so
// are those whose order may not be returned now (asNow): an approve would
// submit nothing; and so are those user's approve could not be carried
// out for now (approveRefused: a second approval of theirs, the requester's
// own of a task that needs two), as the card offers them none. It writes
// nothing. Errors: storage errors.
func (s *Service) DecisionRows(ctx context.Context, user string, tasks []TaskSummary) ([]DecisionRow, error) {
	out := []DecisionRow{}
	for _, t := range tasks {
		if t.Status != StatusWaiting || t.Stage != StageDraftReady {
			continue
		}
		d, err := s.desk.DraftByTask(ctx, t.Task)
		if errors.Is(err, business.ErrNotFound) {
			continue // a question whose draft the business file lacks: show reports it
		}
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		kind := KindApproval
		v := &View{Task: t.Task, User: d.User, Order: d.OrderID, Status: t.Status, Kind: &kind, Draft: &DraftView{DraftID: d.ID}}
		if err := s.markReturnable(ctx, v, s.now()); err != nil {
			return nil, err
		}
		if v.Draft.NotReturnable != nil {
			continue
		}
		why, err := s.recordApproveRefused(ctx, t.Task, d.User, d, user)
		if err != nil {
			return nil, err
		}
		if why != "" {
			continue
		}
		out = append(out, DecisionRow{Task: t.Task, Draft: d.ID})
	}
	return out, nil
}
