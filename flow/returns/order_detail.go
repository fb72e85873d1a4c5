package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"assistant/business"
)

// OrderDetail is one order as `orders show` reports it: the order, whether
// a return can be started now, the user's tasks of it with the status and
// stage show gives each, and every application made for it (docs/json.md
// "orders show").
type OrderDetail struct {
	// SchemaVersion prints as returns.SchemaVersion (docs/json.md).
	SchemaVersion Schema `json:"schema_version"`
	business.Order
	// Returnable is whether a return of the order can be started now;
	// NotReturnable says why not (OrderLine.Returnable's codes), "" when
	// it can.
	Returnable    bool   `json:"returnable"`
	NotReturnable string `json:"not_returnable_because"`
	// Tasks are the user's return tasks of the order, oldest first.
	Tasks []OrderTask `json:"tasks"`
	// Applications are the order's applications, oldest first, each with
	// the task and the draft version it was made from.
	Applications []business.OrderApplication `json:"applications"`
}

// OrderTask is a task of an order with the status and stage Show gives it.
type OrderTask struct {
	Task   string `json:"task"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
}

// ShowOrder returns user's order orderID with its tasks and applications
// (OrderDetail). It writes nothing. An unknown order and another user's
// read alike: ErrNotFound. Errors: ErrInvalid (a malformed id), the
// stores'.
func (s *Service) ShowOrder(ctx context.Context, orderID, user string) (*OrderDetail, error) {
	if err := ValidOrderID(orderID); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	o, err := s.desk.Order(ctx, orderID, user)
	if errors.Is(err, business.ErrNotFound) {
		return nil, errorf(Hint{}, "order %s: %w for user %s", orderID, ErrNotFound, user)
	}
	if err != nil {
		return nil, err
	}
	d := &OrderDetail{Order: o}
	var ids []string
	for look := 1; ; look++ {
		before := d.Tasks
		if ids, d.Tasks, err = s.orderTasks(ctx, o.ID, user); err != nil {
			return nil, fmt.Errorf("order %s: %w", orderID, err)
		}
		if look > 1 && slices.Equal(before, d.Tasks) {
			// Read again, the tasks did not move: they are as they are
			// now (an application of a task no record holds, such as a
			// teaching order's, stays as it is).
			break
		}
		// Read after the tasks, and judged from what is listed: an
		// application a task submitted meanwhile is both listed and makes
		// the order not returnable.
		if look == 1 {
			Fault("orders-show:before-applications")
		}
		if d.Applications, err = s.desk.OrderApplications(ctx, o.ID, user); err != nil {
			return nil, err
		}
		// An application of a task the list lacks or does not show done
		// was made between the two reads: the tasks are read again, so
		// that the view tells them as they are now (as judgedNow does).
		if look == orderLooks || tasksAgree(d.Tasks, d.Applications) {
			break
		}
	}
	code := business.EligibilityOf(o, d.Applications, s.now().UTC())
	if code == "" && len(ids) > 0 {
		bad, err := s.inconsistentOrder(ctx, ids)
		if err != nil {
			return nil, err
		}
		if bad {
			code = CodeInconsistent
		}
	}
	d.Returnable, d.NotReturnable = code == "", code
	return d, nil
}

// orderLooks is how often ShowOrder reads an order's tasks and
// applications at most, while they disagree (tasksAgree) and the tasks
// move between two looks.
const orderLooks = 3

// orderTasks returns the ids of user's tasks of order orderID, oldest
// first, and each with the status and stage Show gives it now.
func (s *Service) orderTasks(ctx context.Context, orderID, user string) ([]string, []OrderTask, error) {
	byOrder, err := s.tasksByOrder(ctx, user)
	if err != nil {
		return nil, nil, err
	}
	ids := byOrder[orderID]
	tasks := make([]OrderTask, 0, len(ids))
	for _, id := range ids {
		v, err := s.Show(ctx, id, user)
		if err != nil {
			return nil, nil, err
		}
		tasks = append(tasks, OrderTask{Task: v.Task, Status: v.Status, Stage: v.Stage})
	}
	return ids, tasks, nil
}

// tasksAgree reports whether every application of apps is of a task of
// tasks that reads done: an application is made by its task's submit,
// which ends the task done.
func tasksAgree(tasks []OrderTask, apps []business.OrderApplication) bool {
	for _, a := range apps {
		i := slices.IndexFunc(tasks, func(t OrderTask) bool { return t.Task == a.TaskID })
		if i < 0 || tasks[i].Status != StatusDone {
			return false
		}
	}
	return true
}
