package returns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"assistant/business"
)

// ParseOrders reads and checks a shop's orders export without opening any
// store (business.ParseOrders; docs/orders.md), so that a bad file changes
// no file, not even by making the data dir. Order ids follow the task id
// rule (ValidTaskID), users the --user rule (ValidUser), with or without
// --operator. A bad file is ErrInvalid naming the lines; ctx ended is its
// error. Close the result.
func ParseOrders(ctx context.Context, r io.Reader, opts business.ParseOptions) (*business.OrdersFile, error) {
	opts.CheckID = ValidOrderID
	opts.CheckUser = ValidUser
	f, err := business.ParseOrders(ctx, r, opts)
	return f, importError(err)
}

// ValidOrderID is ValidTaskID for an order id: an order id becomes part of
// a task's arguments and is printed as one, so it obeys the same rule.
func ValidOrderID(id string) error {
	if err := ValidTaskID(id); err != nil {
		return errors.New(strings.Replace(err.Error(), "task id", "order id", 1))
	}
	return nil
}

// ImportOrders parses a shop's orders CSV and loads it as the shop's
// operator would (every row, whoever's; times without a zone refused),
// for callers that have a file in hand (tests, benchmarks).
func (s *Service) ImportOrders(ctx context.Context, r io.Reader) (business.ImportResult, error) {
	f, err := ParseOrders(ctx, r, business.ParseOptions{Operator: true, Now: s.now()})
	if err != nil {
		return business.ImportResult{}, err
	}
	defer f.Close()
	return s.ImportOrdersFile(ctx, f, business.ImportOptions{})
}

// ImportOrdersFile loads the orders of f into the business file, in one
// transaction committed durably (business.Store.ImportOrdersFile has the
// update rules); once it commits, the import does not fail. An order whose owner would change is ErrConflict
// naming the lines, and nothing is imported; with opts.DryRun nothing is
// written and the report says what would be.
func (s *Service) ImportOrdersFile(ctx context.Context, f *business.OrdersFile, opts business.ImportOptions) (business.ImportResult, error) {
	if !opts.DryRun {
		Fault("import:before-write")
	}
	res, err := s.desk.ImportOrdersFile(ctx, f, opts)
	if err != nil {
		return res, importError(err)
	}
	if opts.DryRun {
		return res, nil
	}
	Fault("import:after-commit")
	// Committed, and durably (the import's commit is at synchronous=FULL):
	// no Sync follows that could wait for another writer's lock and
	// report a stored import as failed.
	return res, nil
}

// importError makes a bad file (*business.ImportError,
// *business.HeaderError, over a limit: business.ErrTooLarge) ErrInvalid,
// and an owner change (*business.OwnerError) ErrConflict.
func importError(err error) error {
	var (
		ie *business.ImportError
		he *business.HeaderError
		oe *business.OwnerError
	)
	switch {
	case errors.As(err, &ie), errors.As(err, &he):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case errors.Is(err, business.ErrTooLarge):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case errors.As(err, &oe):
		return fmt.Errorf("%w: %w", ErrConflict, err)
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
