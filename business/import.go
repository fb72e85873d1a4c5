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

// Limits of an orders file (docs/cli.md "orders import"). A file over
// either is refused whole: nothing of it is imported.
const (
	// MaxOrdersFileBytes is the largest orders file ParseOrders reads.
	MaxOrdersFileBytes = 64 << 20
	// MaxOrdersRows is the most orders one file may hold: they are imported
	// in one transaction, which holds the file's write lock meanwhile.
	MaxOrdersRows = 100_000
)

// ErrTooLarge reports an input file (orders, batch) over its size or row
// limit. The file is refused whole: nothing read from it is used.
var ErrTooLarge = errors.New("over its limit")

// importHeader is the required first record of a shop's orders export.
var importHeader = []string{"order_id", "user", "item", "delivered_at", "final_sale"}

// CapReader returns a reader of r that fails with an error matching
// ErrTooLarge as soon as more than max bytes have been read, so a file over
// its limit is refused instead of cut: a reader that stops at the limit
// (io.LimitReader) would hand the rows before the cut on as if they were
// the whole file.
func CapReader(r io.Reader, max int64) io.Reader {
	return &capReader{r: r, left: max, max: max}
}

// capReader is CapReader's reader.
type capReader struct {
	r         io.Reader
	left, max int64 // bytes still allowed, and the limit
}

// Read reads from the underlying reader, failing once the limit is passed.
func (c *capReader) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1] // one byte past the limit tells "over" from "exactly at"
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, fmt.Errorf("larger than %d bytes (%d MiB): %w", c.max, c.max>>20, ErrTooLarge)
	}
	return n, err
}

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
// row gives an *ImportError naming every bad line. The file is read as a
// stream, record by record; one over MaxOrdersFileBytes or MaxOrdersRows
// is refused whole with an error matching ErrTooLarge.
func ParseOrders(r io.Reader) (*OrdersFile, error) {
	cr := csv.NewReader(CapReader(r, MaxOrdersFileBytes))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var (
		bad  []string
		seen = map[string]int{}
		f    = &OrdersFile{}
	)
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			if line == 1 {
				return nil, &ImportError{Lines: []string{"line 1: the header must be " + strings.Join(importHeader, ",")}}
			}
			break
		}
		if err := readError(err); err != nil {
			return nil, err
		}
		if line == 1 {
			if !equalHeader(rec, importHeader) {
				return nil, &ImportError{Lines: []string{"line 1: the header must be " + strings.Join(importHeader, ",")}}
			}
			continue
		}
		if line-1 > MaxOrdersRows {
			return nil, fmt.Errorf("orders file has more than %d rows: %w; split it into several files (nothing was imported)", MaxOrdersRows, ErrTooLarge)
		}
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

// readError turns the error of reading one record of an orders file into
// what ParseOrders reports: nil, an *ImportError for a CSV syntax error, the
// size refusal, or a read failure (a directory, say: not a bad row).
func readError(err error) error {
	var pe *csv.ParseError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrTooLarge):
		return fmt.Errorf("orders file is %w; split it into several files (nothing was imported)", err)
	case errors.As(err, &pe):
		return &ImportError{Lines: []string{err.Error()}}
	}
	return fmt.Errorf("read orders file: %w", err)
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
