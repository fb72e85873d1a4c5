package business

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Limits of an orders file (docs/orders.md "Limits"). A file over either
// is refused whole: nothing of it is imported.
const (
	// MaxOrdersFileBytes is the largest orders file ParseOrders reads
	// (bytes as stored: a UTF-16 file counts twice its text). A million
	// rows of the five columns take about 50 MB.
	MaxOrdersFileBytes = 64 << 20
	// MaxOrdersRows is the most rows one file may hold. All of them are
	// imported in one transaction, which holds the business file's write
	// lock meanwhile (about 5 s for a million rows).
	MaxOrdersRows = 1_000_000
	// MaxItemBytes caps an order's item: one row's item longer than this
	// is refused; the items of a line-item export's rows, joined, are
	// shortened to it by naming how many more there are.
	MaxItemBytes = 200
	// MaxUserBytes caps the user (owner) of an order.
	MaxUserBytes = 128
	// MaxReportedChanges is how many orders an import report lists one by
	// one (ImportResult.Changes); the counts cover all of them.
	MaxReportedChanges = 100
	// maxBadLines is how many bad lines an *ImportError lists.
	maxBadLines = 10
	// maxScattered bounds the order ids ParseOrders checks a second time
	// for rows that come back after other orders (see scatterCheck).
	maxScattered = 50_000
)

// ErrTooLarge reports an input file (orders, batch) over its size or row
// limit. The file is refused whole: nothing read from it is used.
var ErrTooLarge = errors.New("over its limit")

// The columns of an orders file, in the order of ordersSpec.Columns.
const (
	colOrderID = iota
	colUser
	colItem
	colDeliveredAt
	colFinalSale
	colDeliveredDaysAgo
)

// ordersSpec is the orders file's columns and their aliases: names that
// common shop exports (Shopify, WooCommerce) use for them. docs/orders.md
// "Columns" lists them.
var ordersSpec = TableSpec{What: "orders file", Refused: "nothing was imported", Columns: []Column{
	{Name: "order_id", Aliases: []string{"order", "order id", "order number", "order no", "name"}, Required: true},
	{Name: "user", Aliases: []string{"customer", "customer id", "customer user", "customer email", "email"}, Required: true},
	{Name: "item", Aliases: []string{"item name", "product", "product name", "lineitem name", "line item name", "line item"}, Required: true},
	{Name: "delivered_at", Aliases: []string{"delivered", "delivery date", "delivered on", "fulfilled at", "date completed", "completed date"}},
	{Name: "final_sale", Aliases: []string{"final", "is final sale"}, Required: true},
	{Name: "delivered_days_ago"},
}}

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

// ParseOptions says how ParseOrders reads a file and whose rows it takes.
type ParseOptions struct {
	// User is the person importing (--user). A row of another user is
	// refused unless Operator is set. "" with Operator takes every row.
	User string
	// Operator takes rows of any user: the shop's operator role
	// (--operator). It is a role asked for, not a proof of one.
	Operator bool
	// Location reads a delivery time written without a zone (and a bare
	// date's midnight). nil refuses both: their meaning is not guessed.
	Location *time.Location
	// CheckID checks an order id (the task id rule: returns.ValidOrderID);
	// its error is the row's. nil checks only that it is not empty.
	CheckID func(string) error
	// CheckUser checks the user column (the --user rule:
	// returns.ValidUser), with or without Operator; its error is the
	// row's. nil checks it as a label (not empty, at most MaxUserBytes,
	// no control or invisible characters).
	CheckUser func(string) error
	// Now is the time delivered_days_ago counts back from (default
	// time.Now).
	Now time.Time
	// Mapping reads an export whose columns have other names, that lacks
	// a column, or whose dates are in a format of its own (nil: none).
	Mapping *ExportMapping
}

// OrdersFile is a shop's orders export that ParseOrders found well
// formed. Its orders are not in memory: ParseOrders wrote them to a
// temporary file in a compact binary form as it checked them (spool), and
// ImportOrdersFile reads them from there, so memory does not grow with the
// file and the CSV is parsed once. Close releases it.
type OrdersFile struct {
	spool  *spool
	opts   ParseOptions
	rows   int // data rows
	orders int // orders: rows of one order counted once
	// The last delivery text read and its time, and the last user found
	// well formed: an export repeats both from row to row, and reading
	// them once is a third of the time of a large file.
	lastAt      string
	lastTime    *time.Time
	lastUser    string
	userChecked bool        // lastUser was checked (the first row's may be "")
	pool        chan *group // groups for reuse (newGroup, freeGroup)
	// How the file is read (ExportMapping): its table spec, the fields
	// with a value for every row, the format of its dates (nil: those
	// of ParseDeliveryTime).
	spec     TableSpec
	defaults []fieldDefault
	pattern  *datePattern
	// What the header holds (readHeader): each field's column (inFile),
	// its column or a default (has), and whether rows have an order id
	// to be merged by (keyed).
	inFile, has [numFields]bool
	keyed       bool
	probs       []problem // the problems of the row being checked (row)
}

// problem is one problem of a row: its kind and its message.
type problem struct {
	kind problemKind
	err  error
}

// Rows is the number of data rows the file holds.
func (f *OrdersFile) Rows() int { return f.rows }

// Orders is the number of orders the file holds (the rows of one order,
// a line-item export's, count once).
func (f *OrdersFile) Orders() int { return f.orders }

// Close removes the temporary file of the file's orders.
func (f *OrdersFile) Close() error { return f.spool.close() }

// replay calls emit with each order of the file, in file order, read
// from the spool (emit owns the group: freeGroup gives it back). ctx ends
// it (its error).
func (f *OrdersFile) replay(ctx context.Context, emit func(*group) error) error {
	return f.spool.replay(ctx, f.newGroup, emit)
}

// ParseOrders reads a shop's orders export (docs/orders.md) and checks
// every row without opening any store, so a bad file is refused before any
// file is opened or made. Columns are found by name (OpenTable, the aliases
// of ordersSpec, opts.Mapping's headers); the rows of one order (a
// line-item export) must follow each other and agree on user, delivery
// and final sale (a later row that leaves them empty takes the first
// row's), and their items are joined. Every field of every row is
// checked: bad rows give one *ImportError naming every problem of the
// file by kind (ImportError.Groups), the header's missing columns first;
// a header that lacks columns and nothing else is a *HeaderError, one
// that cannot be read is refused at once; a file over MaxOrdersFileBytes or
// MaxOrdersRows, or with a line over MaxLineBytes, is refused whole
// (ErrTooLarge, *ImportError). A file without rows is an *ImportError
// ("no orders"). The file is read as a stream, in memory that does not
// grow with it; ctx ends the read (its error, nothing kept; a read of r
// that blocks, on a pipe, is the caller's to end: cmd reads such a file
// through a reader that ctx ends). r is read once. Close the result when
// done.
func ParseOrders(ctx context.Context, r io.Reader, opts ParseOptions) (*OrdersFile, error) {
	f, err := newOrdersFile(opts)
	if err != nil {
		return nil, err
	}
	if err := checkFile[uint64](ctx, f, r, nil); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// newOrdersFile returns an OrdersFile with an empty spool, for checkFile
// to fill.
func newOrdersFile(opts ParseOptions) (*OrdersFile, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	sp, err := newSpool()
	if err != nil {
		return nil, err
	}
	f := &OrdersFile{spool: sp, opts: opts, pool: make(chan *group, groupPool)}
	f.applyMapping(opts.Mapping)
	return f, nil
}

// checkFile is ParseOrders' reading of the file: every row, and whether
// the rows of one order follow each other; each order goes to the spool
// and, when tee is set, to tee too (which keeps nothing of the group)
// while no row has been found bad. The file is read once; when an order
// id comes back (or two ids share a hash of width T), the spool is read
// for those ids (scatterCheck). Its errors are ParseOrders', and tee's.
func checkFile[T hashWord](ctx context.Context, f *OrdersFile, r io.Reader, tee func(*group) error) error {
	err := f.check(ctx, r, newIDHashes[T](), tee)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// The read failed because ctx ended (a stalled pipe's read
		// ended by the caller, say): ctx's error, not the read's.
		err = fmt.Errorf("read orders file: %w", ctx.Err())
	}
	return err
}

// hashSet is what check keeps of each order id to find the ones that
// come back: an *idHashes of either width.
type hashSet interface {
	add(string)
	hash(string) uint64
	repeats(max int) (map[uint64]bool, bool)
	chanceRepeats() int
	release()
}

// check reads the file for checkFile, keeping the order ids in ids.
func (f *OrdersFile) check(ctx context.Context, r io.Reader, ids hashSet, tee func(*group) error) error {
	defer ids.release()
	// One group serves every order: emit keeps nothing of it.
	var one group
	next := func() *group {
		one = group{}
		return &one
	}
	bad := &rowProblems{}
	rows, orders, err := f.scan(ctx, r, bad, next, func(g *group, clean bool) error {
		ids.add(g.order.ID)
		f.spool.add(g)
		if tee != nil && clean {
			return tee(g)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if rows == 0 {
		if err := f.refusal(bad, ""); err != nil {
			return err // the header's
		}
		return &ImportError{What: ordersSpec.What, Empty: true, Refused: ordersSpec.Refused}
	}
	if err := f.spool.finish(); err != nil {
		return err
	}
	f.rows, f.orders = rows, orders
	// The good orders were spooled even when some rows are bad, so that
	// orders whose rows do not follow each other are named beside them.
	// The hashes that repeat by chance are taken too, and dropped by
	// the exact check: only ids that come back count towards
	// maxScattered, whatever the hashes' width.
	if rep, overflow := ids.repeats(maxScattered + ids.chanceRepeats()); len(rep) > 0 {
		scattered, over, err := f.scatterCheck(ctx, ids.hash, rep, overflow)
		if err != nil {
			return err
		}
		bad.kinds[kindScattered] = bad.kinds[kindScattered].merge(scattered)
		if over {
			// Said after the count, whatever the lines named: each
			// of them comes first in the file.
			return f.refusal(bad, fmt.Sprintf("more than %d order ids come back after other orders: the lines counted are those of %d of them; sort the file by order id", maxScattered, maxScattered))
		}
	}
	return f.refusal(bad, "")
}

// scatterCheck reads the file's orders again (from the spool) for the
// order ids whose hash (by hash) check saw more than once and refuses an
// order whose rows do not follow each other, naming both lines. overflow
// says that more hashes than were asked for came back; the second result
// says that lines were found and that more ids than maxScattered came
// back, of which maxScattered were checked (ImportError.Note says so).
func (f *OrdersFile) scatterCheck(ctx context.Context, hash func(string) uint64, rep map[uint64]bool, overflow bool) (badLines, bool, error) {
	var bad badLines
	first := map[string]int{}
	back := map[string]bool{} // the ids found to come back, at most maxScattered
	err := f.replay(ctx, func(g *group) error {
		defer f.freeGroup(g)
		if !rep[hash(g.order.ID)] {
			return nil
		}
		line, ok := first[g.order.ID]
		if !ok {
			first[g.order.ID] = g.line
			return nil
		}
		if !back[g.order.ID] {
			if len(back) == maxScattered {
				// As many as hashes of 64 bits find, whatever the
				// width: the ones that share a hash by chance
				// (chanceRepeats) are never counted.
				overflow = true
				return nil
			}
			back[g.order.ID] = true
		}
		bad.add(g.line, fmt.Errorf("order %s is also on line %d; the rows of one order must follow each other (sort the file by order id)", g.order.ID, line))
		return nil
	})
	if err != nil {
		return badLines{}, false, err
	}
	return bad, overflow && len(bad.lines) > 0, nil
}

// scan reads the CSV file r and calls emit for each order (its
// consecutive rows merged, in a group of newGroup), in file order, bad
// rows left out; clean says that nothing before the order's rows was bad
// (the header included). Every row is read and checked whole, its
// problems recorded in bad. It returns the number of rows and orders, or
// an error: a header that cannot be read, the file over a limit, ctx
// ended, or emit's error.
func (f *OrdersFile) scan(ctx context.Context, r io.Reader, bad *rowProblems, newGroup func() *group, emit func(g *group, clean bool) error) (rows, orders int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("read orders file: %w", err)
	}
	t, err := OpenTable(r, f.spec, MaxOrdersFileBytes)
	if err != nil {
		return 0, 0, err
	}
	f.readHeader(t, bad)
	var cur *group
	// Every good order is handed on, even once a row was bad: check
	// looks for scattered orders among them too.
	flush := func() error {
		if cur == nil {
			return nil
		}
		g := cur
		cur = nil
		orders++
		g.finish()
		return emit(g, bad.empty())
	}
	ahead := readAhead(ctx, t)
	defer ahead.stop()
	width := len(ordersSpec.Columns)
	for {
		b, err := ahead.next()
		if err != nil {
			return 0, 0, err
		}
		if b == nil {
			break
		}
		for i, line := range b.lines {
			rows++
			if err := b.errs[i]; err != nil {
				bad.add(rowErrorKind(err), line, err)
				continue
			}
			if rows > MaxOrdersRows {
				return 0, 0, fmt.Errorf("orders file has more than %d rows: %w; split it into several files (nothing was imported)", MaxOrdersRows, ErrTooLarge)
			}
			rec := b.fields[i*width : (i+1)*width]
			blank := f.blankOrder(rec)
			o, item, ok := f.row(rec)
			if !ok {
				for _, p := range f.probs {
					bad.add(p.kind, line, p.err)
				}
				continue
			}
			if !f.keyed {
				continue // no order ids: the rows are checked, never merged
			}
			if cur != nil && cur.order.ID == o.ID {
				if blank {
					// A later line item that leaves the order's own
					// values to its first row (Shopify's export).
					o.DeliveredAt, o.FinalSale = cur.order.DeliveredAt, cur.order.FinalSale
				}
				if why := disagree(cur.order, o); why != "" {
					bad.add(kindDisagree, line, fmt.Errorf("order %s: %s on line %d; the rows of one order must agree", o.ID, why, cur.line))
					continue
				}
				if err := cur.addItem(item); err != nil {
					bad.add(kindTooManyItems, line, err)
					continue
				}
				cur.last = line
				continue
			}
			if err := flush(); err != nil {
				return 0, 0, err
			}
			cur = newGroup()
			cur.order, cur.line, cur.last = o, line, line
			cur.addItem(item) // the first item fits: row checked it
		}
		if b.end != nil && !errors.Is(b.end, io.EOF) {
			return 0, 0, b.end
		}
		ahead.free(b)
	}
	if err := flush(); err != nil {
		return 0, 0, err
	}
	return rows, orders, nil
}
