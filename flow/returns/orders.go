package returns

import (
	"context"
	"errors"
	"fmt"
	"io"

	"assistant/business"
)

// ParseOrders reads and checks a shop's orders CSV without opening any
// store (business.ParseOrders), so that a bad file changes no file, not
// even by making the data dir. A file with any bad row is ErrInvalid naming
// the lines.
func ParseOrders(r io.Reader) (*business.OrdersFile, error) {
	f, err := business.ParseOrders(r)
	return f, invalidImport(err)
}

// ImportOrders parses a shop's orders CSV (ParseOrders) and loads it
// (ImportOrdersFile).
func (s *Service) ImportOrders(ctx context.Context, r io.Reader) (business.ImportResult, error) {
	f, err := ParseOrders(r)
	if err != nil {
		return business.ImportResult{}, err
	}
	return s.ImportOrdersFile(ctx, f)
}

// ImportOrdersFile loads the orders of f into the business file and makes
// them durable (business.Store.ImportOrdersFile). A row that differs from a
// stored order is ErrInvalid naming the lines, and nothing is imported.
func (s *Service) ImportOrdersFile(ctx context.Context, f *business.OrdersFile) (business.ImportResult, error) {
	res, err := s.desk.ImportOrdersFile(ctx, f)
	if err != nil {
		return res, invalidImport(err)
	}
	return res, s.desk.Sync(ctx)
}

// invalidImport makes a *business.ImportError, and a file over its limit
// (business.ErrTooLarge), ErrInvalid.
func invalidImport(err error) error {
	var ie *business.ImportError
	switch {
	case errors.As(err, &ie):
		return fmt.Errorf("%w: %v", ErrInvalid, ie)
	case errors.Is(err, business.ErrTooLarge):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// OrderLine is one order of OrderList with whether it may be returned now.
type OrderLine struct {
	business.Order
	// Returnable is "" when a return can be started now, else the reason
	// code that start would fail with (return_window_closed, …), or
	// CodeInconsistent when a task of the order has a checkpoint the
	// business file contradicts.
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
	returnable := map[string]bool{}
	for _, o := range orders {
		code, err := s.desk.Eligibility(ctx, o, now)
		if err != nil {
			return nil, err
		}
		out = append(out, OrderLine{Order: o, Returnable: code})
		returnable[o.ID] = code == ""
	}
	// The business file alone would call an order returnable whose
	// application it lost while a task's checkpoint reports it submitted.
	bad, err := s.inconsistentOrders(ctx, user, returnable)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if bad[out[i].ID] {
			out[i].Returnable = CodeInconsistent
		}
	}
	return out, nil
}
