package returns

import (
	"context"
	"errors"
	"fmt"

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
	byOrder, err := s.tasksByOrder(ctx, user)
	if err != nil {
		return nil, err
	}
	ids := byOrder[o.ID]
	d := &OrderDetail{Order: o, Tasks: []OrderTask{}}
	for _, id := range ids {
		v, err := s.Show(ctx, id, user)
		if err != nil {
			return nil, fmt.Errorf("order %s: %w", orderID, err)
		}
		d.Tasks = append(d.Tasks, OrderTask{Task: v.Task, Status: v.Status, Stage: v.Stage})
	}
	// Read after the tasks, and judged from what is listed: an application
	// a task submitted meanwhile is both listed and makes the order not
	// returnable.
	Fault("orders-show:before-applications")
	if d.Applications, err = s.desk.OrderApplications(ctx, o.ID, user); err != nil {
		return nil, err
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
