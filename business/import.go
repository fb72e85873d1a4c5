package business

import (
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"assistant/internal/sqlitedb"
)

// importHeader is the required first record of a shop's orders export.
var importHeader = []string{"order_id", "user", "item", "delivered_at", "final_sale"}

// ImportError lists the bad lines of an orders file; nothing was imported.
type ImportError struct {
	Lines []string // "line 3: …", in file order
}

// Error implements the error interface for *ImportError.
func (e *ImportError) Error() string {
	const most = 10
	lines := e.Lines
	more := ""
	if len(lines) > most {
		more = fmt.Sprintf(" (and %d more)", len(lines)-most)
		lines = lines[:most]
	}
	return fmt.Sprintf("orders file has bad rows, none was imported: %s%s", strings.Join(lines, "; "), more)
}

// ImportResult counts what ImportOrders did.
type ImportResult struct {
	Imported  int `json:"imported"`  // new orders
	Unchanged int `json:"unchanged"` // rows equal to an order already stored
}

// OrdersFile is a shop's orders export that ParseOrders found well formed:
// its orders, each with its line number in the file.
type OrdersFile struct {
	orders []Order
	lines  []int
}

// ParseOrders reads a shop's orders export: a CSV with the header
// order_id,user,item,delivered_at,final_sale, where delivered_at is empty
// (not delivered), an RFC 3339 time or a date YYYY-MM-DD (midnight UTC), and
// final_sale is true or false; an order id appears once. It touches no
// store, so a bad file is refused before any file is opened or made: any bad
// row gives an *ImportError naming every bad line.
func ParseOrders(r io.Reader) (*OrdersFile, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return nil, &ImportError{Lines: []string{err.Error()}}
	}
	if err != nil {
		return nil, fmt.Errorf("read orders file: %w", err) // a directory, say: not a bad row
	}
	if len(recs) == 0 || !equalHeader(recs[0], importHeader) {
		return nil, &ImportError{Lines: []string{"line 1: the header must be " + strings.Join(importHeader, ",")}}
	}
	var (
		bad  []string
		seen = map[string]int{}
		f    = &OrdersFile{}
	)
	for i, rec := range recs[1:] {
		line := i + 2
		o, err := parseImportRow(rec)
		if err == nil && seen[o.ID] != 0 {
			err = fmt.Errorf("order %s already on line %d", o.ID, seen[o.ID])
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", line, err))
			continue
		}
		seen[o.ID] = line
		f.orders, f.lines = append(f.orders, o), append(f.lines, line)
	}
	if len(bad) > 0 {
		return nil, &ImportError{Lines: bad}
	}
	return f, nil
}

// ImportOrders parses r (ParseOrders) and imports it (ImportOrdersFile).
func (s *Store) ImportOrders(ctx context.Context, r io.Reader) (ImportResult, error) {
	f, err := ParseOrders(r)
	if err != nil {
		return ImportResult{}, err
	}
	return s.ImportOrdersFile(ctx, f)
}

// ImportOrdersFile loads the orders of f. A row equal to a stored order is
// counted unchanged, one that differs from it is bad: any bad row refuses
// the whole file with an *ImportError and nothing is imported; otherwise
// all rows go in one transaction.
func (s *Store) ImportOrdersFile(ctx context.Context, f *OrdersFile) (ImportResult, error) {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return ImportResult{}, fmt.Errorf("import orders: %w", err)
	}
	defer tx.Rollback()
	var (
		bad []string
		res ImportResult
		add []Order
	)
	for i, o := range f.orders {
		old, err := orderTx(ctx, tx, o.ID)
		switch {
		case errors.Is(err, ErrNotFound):
			add = append(add, o)
		case err != nil:
			return ImportResult{}, fmt.Errorf("import orders: %w", err)
		case sameOrder(old, o):
			res.Unchanged++
		default:
			bad = append(bad, fmt.Sprintf("line %d: order %s exists with other data", f.lines[i], o.ID))
		}
	}
	if len(bad) > 0 {
		return ImportResult{}, &ImportError{Lines: bad}
	}
	for _, o := range add {
		var delivered sql.NullString
		if o.DeliveredAt != nil {
			delivered = sql.NullString{String: formatTime(*o.DeliveredAt), Valid: true}
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO orders (order_id, user, item, delivered_at, final_sale) VALUES (?, ?, ?, ?, ?)`,
			o.ID, o.User, o.Item, delivered, o.FinalSale); err != nil {
			return ImportResult{}, fmt.Errorf("import order %s: %w", o.ID, err)
		}
		res.Imported++
	}
	if err := tx.Commit(); err != nil {
		return ImportResult{}, fmt.Errorf("import orders: %w", err)
	}
	return res, nil
}

func equalHeader(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if strings.TrimPrefix(strings.TrimSpace(got[i]), "\ufeff") != want[i] {
			return false
		}
	}
	return true
}

func parseImportRow(rec []string) (Order, error) {
	if len(rec) != len(importHeader) {
		return Order{}, fmt.Errorf("%d fields, want %d", len(rec), len(importHeader))
	}
	o := Order{ID: strings.TrimSpace(rec[0]), User: strings.TrimSpace(rec[1]), Item: strings.TrimSpace(rec[2])}
	switch {
	case o.ID == "" || strings.ContainsAny(o.ID, " \t/\\"):
		return Order{}, fmt.Errorf("order_id %q must be non-empty, without spaces or slashes", o.ID)
	case o.User == "":
		return Order{}, errors.New("user must not be empty")
	case o.Item == "":
		return Order{}, errors.New("item must not be empty")
	}
	if d := strings.TrimSpace(rec[3]); d != "" {
		t, err := time.Parse(time.RFC3339, d)
		if err != nil {
			t, err = time.Parse(time.DateOnly, d)
		}
		if err != nil {
			return Order{}, fmt.Errorf("delivered_at %q is not an RFC 3339 time or a date YYYY-MM-DD", d)
		}
		t = t.UTC()
		o.DeliveredAt = &t
	}
	switch strings.ToLower(strings.TrimSpace(rec[4])) {
	case "true":
		o.FinalSale = true
	case "false", "":
	default:
		return Order{}, fmt.Errorf("final_sale %q must be true or false", rec[4])
	}
	return o, nil
}

func sameOrder(a, b Order) bool {
	if a.ID != b.ID || a.User != b.User || a.Item != b.Item || a.FinalSale != b.FinalSale {
		return false
	}
	if (a.DeliveredAt == nil) != (b.DeliveredAt == nil) {
		return false
	}
	return a.DeliveredAt == nil || a.DeliveredAt.Equal(*b.DeliveredAt)
}

// orderTx reads an order by id inside tx, whoever owns it.
func orderTx(ctx context.Context, tx sqlitedb.Querier, id string) (Order, error) {
	o, err := scanOrder(tx.QueryRowContext(ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, ErrNotFound
	}
	return o, err
}

// Orders returns the user's orders by order id, in one query.
func (s *Store) Orders(ctx context.Context, user string) ([]Order, error) {
	rows, err := s.h.Q().QueryContext(ctx, `SELECT `+orderColumns+` FROM orders WHERE user = ? ORDER BY order_id`, user)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	defer rows.Close()
	var out []Order
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, fmt.Errorf("list orders: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	return out, nil
}
