package returns

import (
	"context"
	"errors"
	"fmt"
	"io"

	"assistant/business"
)

// ImportOrders loads a shop's orders CSV into the business file (see
// business.Store.ImportOrders). A file with any bad row is ErrInvalid
// naming the lines, and nothing is imported.
func (s *Service) ImportOrders(ctx context.Context, r io.Reader) (business.ImportResult, error) {
	res, err := s.desk.ImportOrders(ctx, r)
	var ie *business.ImportError
	if errors.As(err, &ie) {
		return res, fmt.Errorf("%w: %v", ErrInvalid, ie)
	}
	if err != nil {
		return res, err
	}
	return res, s.desk.Sync(ctx)
}

// OrderLine is one order of OrderList with whether it may be returned now.
type OrderLine struct {
	business.Order
	// Returnable is "" when a return can be started now, else the reason
	// code that start would fail with (return_window_closed, …).
	Returnable string `json:"not_returnable_because"`
}

// ListOrders returns the user's orders with their eligibility at now.
func (s *Service) ListOrders(ctx context.Context, user string) ([]OrderLine, error) {
	orders, err := s.desk.Orders(ctx, user)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	out := make([]OrderLine, 0, len(orders))
	for _, o := range orders {
		code, err := s.desk.Eligibility(ctx, o, now)
		if err != nil {
			return nil, err
		}
		out = append(out, OrderLine{Order: o, Returnable: code})
	}
	return out, nil
}
