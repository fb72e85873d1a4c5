package returns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"assistant/business"
	"assistant/runs"
)

// ParseOrders reads and checks a shop's orders export without opening any
// store (business.ParseOrders; docs/orders.md), so that a bad file changes
// no file, not even by making the data dir. Order ids follow the task id
// rule (ValidTaskID), users the user name rule (ValidUser), whether the
// shop's operator imports or one user (opts.Operator). A bad file is ErrInvalid naming the lines; ctx ended is its
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

// ImportOrdersNew imports the orders file r into the data dir dir, which
// NewDataDirAside made and Open gave its two files, since closed: the file
// is checked while its orders are written (business.ImportOrdersNew, with
// ParseOrders' id and user rules and errors, and ImportOrdersFile's). It
// returns the file, its orders spooled, whenever the check found it good,
// so that the caller can import it into another data dir
// (ImportOrdersFile) if dir cannot take its name; the caller closes it.
// The fault point import:before-write is reached before the first write;
// import:after-commit is the caller's, once the data dir has its name.
func ImportOrdersNew(ctx context.Context, dir string, r io.Reader, opts business.ParseOptions) (business.ImportResult, *business.OrdersFile, error) {
	opts.CheckID = ValidOrderID
	opts.CheckUser = ValidUser
	Fault("import:before-write")
	res, f, err := business.ImportOrdersNew(ctx, filepath.Join(dir, BusinessFile), WallClock(), r, opts)
	return res, f, importError(err)
}

// importError makes a bad file (*business.ImportError,
// *business.HeaderError, over a limit: business.ErrTooLarge) ErrInvalid,
// and an owner change (*business.OwnerError) ErrConflict, each with the
// hint of the import options it needs (needsHint).
func importError(err error) error {
	var (
		ie *business.ImportError
		he *business.HeaderError
		oe *business.OwnerError
	)
	switch {
	case errors.As(err, &ie):
		return errorf(needsHint(ie.Needs), "%w: %w", ErrInvalid, err)
	case errors.As(err, &he):
		return errorf(needsHint(he.Needs), "%w: %w", ErrInvalid, err)
	case errors.Is(err, business.ErrTooLarge):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case errors.As(err, &oe):
		return errorf(needsHint(oe.Needs), "%w: %w", ErrConflict, err)
	}
	return err
}

// needHints are the hints of the import options a refused orders file
// needs (business.Need), each naming its inputs.
var needHints = map[business.Need][]Hint{
	business.NeedOperator:   {{Before: "only the shop's operator imports other users' orders or changes the shop's: import with", With: []InputValue{{Input: InputOperator}}}},
	business.NeedTimezone:   {{Before: "name the time zone of a delivered_at without one with", With: []InputValue{{Input: InputTimezone, Value: "ZONE"}}, After: "(an IANA name such as Europe/Berlin)"}},
	business.NeedDateFormat: {{Before: "read a delivered_at in another format with", With: []InputValue{{Input: InputDateFormat, Value: "FORMAT"}}}},
	business.NeedMapping: {
		{Before: "name the header that holds a field with", With: []InputValue{{Input: InputColumn, Value: "FIELD=HEADER"}}},
		{Before: "or give every row its value with", With: []InputValue{{Input: InputDefault, Value: "FIELD=VALUE"}}},
	},
}

// needsHint is the hint of needs, one after the other ("…; …"); zero for
// none.
func needsHint(needs []business.Need) Hint {
	var steps []Hint
	for i, n := range needs {
		hs := append([]Hint(nil), needHints[n]...)
		if i > 0 && len(hs) > 0 {
			hs[0].Before = "; " + hs[0].Before
		}
		steps = append(steps, hs...)
	}
	if len(steps) == 0 {
		return Hint{}
	}
	h := steps[len(steps)-1]
	for i := len(steps) - 2; i >= 0; i-- {
		next := h
		h = steps[i]
		h.Then = &next
	}
	return h
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

// ListOrders returns the user's orders with their eligibility at now, as
// EachOrder gives them, in one slice: for callers that want them all
// (tests, small data dirs). A listing of any size streams with EachOrder.
func (s *Service) ListOrders(ctx context.Context, user string) ([]OrderLine, error) {
	out := []OrderLine{}
	err := s.EachOrder(ctx, user, func(l OrderLine) error {
		out = append(out, l)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachOrder calls fn with each of the user's orders, by order id, with
// its eligibility at now (OrderLine.Returnable), until fn returns an
// error, which EachOrder returns. Memory and queries do not grow with
// the orders one by one: they are read a page at a time
// (business.Store.EachOrderPage, business.OrdersPageSize orders a
// query, eligibility included).
//
// The inconsistent rule: an order the business file alone calls
// returnable is CodeInconsistent when a task of it (not a batch) has a
// head checkpoint the business file contradicts (reconcile: a submission
// recorded in the checkpoints whose application the business file lost,
// say). The user's tasks are read first, once, into their order ids
// (memory bounded by the tasks, not the orders); a page's returnable
// orders that have tasks are then checked, task by task in the order of
// the task list, stopping at the first inconsistent one, so no order
// without a task costs a read. Nothing is written. Errors: the stores'
// (a read error part-way ends the listing after the orders given to fn
// so far), fn's.
func (s *Service) EachOrder(ctx context.Context, user string, fn func(OrderLine) error) error {
	tasks, err := s.tasksByOrder(ctx, user)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	return s.desk.EachOrderPage(ctx, user, now, func(page []business.EligibleOrder) error {
		for _, o := range page {
			code := o.Code
			if code == "" && len(tasks[o.ID]) > 0 {
				bad, err := s.inconsistentOrder(ctx, tasks[o.ID])
				if err != nil {
					return err
				}
				if bad {
					code = CodeInconsistent
				}
			}
			if err := fn(OrderLine{Order: o.Order, Returnable: code}); err != nil {
				return err
			}
		}
		return nil
	})
}

// tasksByOrder returns the ids of the user's tasks (not batches) by
// their order id, each list in the order of runs.Store.ListTasks.
func (s *Service) tasksByOrder(ctx context.Context, user string) (map[string][]string, error) {
	tasks, err := s.runs.ListTasks(ctx, user, "")
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, t := range tasks {
		if t.Kind == runs.KindBatch {
			continue
		}
		out[t.OrderID] = append(out[t.OrderID], t.ID)
	}
	return out, nil
}

// inconsistentOrder reports whether one of tasks (of one order) has a
// head checkpoint the business file contradicts (reconcile). Errors: the
// stores', other than ErrInconsistent.
func (s *Service) inconsistentOrder(ctx context.Context, tasks []string) (bool, error) {
	for _, id := range tasks {
		snap, err := headOrNil(s.cmd.graph.State(ctx, id))
		if err != nil {
			return false, err
		}
		err = s.cmd.reconcile(ctx, id, snap)
		if errors.Is(err, ErrInconsistent) {
			return true, nil
		} else if err != nil {
			return false, err
		}
	}
	return false, nil
}
