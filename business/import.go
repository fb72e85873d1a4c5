package business

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"assistant/internal/termtext"
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

// ImportError lists the bad lines of an input file; nothing was imported.
type ImportError struct {
	What string // "orders file" ("" reads as that)
	// Lines are the message's parts: "line 3: …", in file order, at most
	// maxBadLines; for an orders file, one a group of Groups (and the
	// missing columns first).
	Lines []string
	More  int  // bad lines not listed
	Empty bool // the file has a header and no rows
	// Groups are the problems of an orders file by kind, in the order
	// of their first lines: every row was checked whole, so every
	// problem of the file is in them.
	Groups []BadRows
	// Header is the orders file's missing columns, when rows are bad too
	// (a header that lacks columns and nothing else is a *HeaderError
	// alone); errors.As finds it.
	Header *HeaderError
	// Note follows the count when it is not the whole story: more than
	// maxScattered orders come back after other orders, and only that
	// many were checked.
	Note string
	// Refused says what a refused file leaves ("nothing was created" for
	// a batch file; "" reads as "nothing was imported").
	Refused string
	// Needs are the import's options that would read the rows refused
	// for want of them, in the order first needed: what the refusal's
	// hint offers.
	Needs []Need
}

// Error implements the error interface for *ImportError.
func (e *ImportError) Error() string {
	what := e.What
	if what == "" {
		what = "orders file"
	}
	refused := e.Refused
	if refused == "" {
		refused = "nothing was imported"
	}
	if e.Empty {
		return fmt.Sprintf("no orders in the %s: it holds a header and no rows; %s", what, refused)
	}
	more := ""
	if e.More > 0 && len(e.Groups) == 0 {
		// A group says how many of its rows it does not list.
		more = fmt.Sprintf(" (and %d more)", e.More)
	}
	if e.Note != "" {
		more += "; " + e.Note
	}
	return fmt.Sprintf("%s has bad rows, %s: %s%s", what, refused, strings.Join(e.Lines, "; "), more)
}

// Unwrap returns the missing columns (Header), if any.
func (e *ImportError) Unwrap() error {
	if e.Header == nil {
		return nil
	}
	return e.Header
}

// badLines collects the bad lines of a file, keeping the first few.
type badLines struct {
	lines []string
	nums  []int // the line number of each of lines
	more  int
}

func (b *badLines) add(line int, err error) {
	if len(b.lines) < maxBadLines {
		b.lines = append(b.lines, fmt.Sprintf("line %d: %v", line, err))
		b.nums = append(b.nums, line)
		return
	}
	b.more++
}

// merge returns the bad lines of a and b together, the first maxBadLines
// by line number (each keeps its first ones in file order) and how many
// more there are.
func (b badLines) merge(o badLines) badLines {
	var m badLines
	i, j := 0, 0
	for i < len(b.lines) || j < len(o.lines) {
		if j >= len(o.lines) || (i < len(b.lines) && b.nums[i] <= o.nums[j]) {
			m.push(b.nums[i], b.lines[i])
			i++
		} else {
			m.push(o.nums[j], o.lines[j])
			j++
		}
	}
	m.more += b.more + o.more
	return m
}

// push adds a line already made, as add does.
func (b *badLines) push(num int, line string) {
	if len(b.lines) < maxBadLines {
		b.lines, b.nums = append(b.lines, line), append(b.nums, num)
		return
	}
	b.more++
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

// groupPool is how many groups an OrdersFile keeps for reuse: the batches
// that may be under way between its reader and its writer.
const groupPool = (importQueue + 2) * importBatch

// newGroup returns a group to fill: one given back by freeGroup, or a new
// one (a file's orders reuse a few thousand groups instead of allocating
// one each).
func (f *OrdersFile) newGroup() *group {
	select {
	case g := <-f.pool:
		*g = group{}
		return g
	default:
		return new(group)
	}
}

// freeGroup gives a group back for reuse; the caller keeps nothing of it
// but copies (strings are never changed).
func (f *OrdersFile) freeGroup(g *group) {
	select {
	case f.pool <- g:
	default:
	}
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

// group is one order of the file: its consecutive rows merged.
type group struct {
	order Order
	line  int      // first line
	last  int      // last line
	items []string // distinct items, in file order, while their join fits MaxItemBytes
	size  int      // bytes of items joined with itemSep
	more  int      // distinct items after those in items
	// dropped holds a hash of each item counted in more, so that an item
	// that comes back is counted once.
	dropped map[uint64]struct{}
	// one backs items for the common order of one item: no allocation
	// of its own.
	one [1]string
}

// itemSep joins the items of a line-item export's rows.
const itemSep = "; "

// maxLineItems is how many distinct items one order's rows may name; a
// row past it is refused (no shop sells that many lines in one order, and
// the hashes of the items not named are kept to count each once).
const maxLineItems = 10_000

// itemSeed hashes the items of an order that are counted, not named.
var itemSeed = maphash.MakeSeed()

// addItem adds the item of one more row of the order: named when the
// items so far and it, joined, fit MaxItemBytes, else counted (once per
// distinct item). It fails past maxLineItems distinct items.
func (g *group) addItem(item string) error {
	for _, it := range g.items {
		if it == item {
			return nil
		}
	}
	if g.more == 0 {
		size := len(item)
		if len(g.items) > 0 {
			size += g.size + len(itemSep)
		}
		if size <= MaxItemBytes {
			if g.items == nil {
				g.items = g.one[:0]
			}
			g.items = append(g.items, item)
			g.size = size
			return nil
		}
		g.dropped = map[uint64]struct{}{}
	}
	h := maphash.String(itemSeed, item)
	if _, ok := g.dropped[h]; ok {
		return nil
	}
	if len(g.items)+g.more >= maxLineItems {
		return fmt.Errorf("order %s has more than %d distinct items", g.order.ID, maxLineItems)
	}
	g.dropped[h] = struct{}{}
	g.more++
	return nil
}

// finish sets the order's item from the rows' items (JoinItems).
func (g *group) finish() {
	g.order.Item = JoinItems(g.items, g.more)
	g.dropped = nil
}

// JoinItems is the item of an order whose rows name items (distinct, in
// file order, joined with "; " to at most MaxItemBytes) and more items
// after those: as many of items as fit MaxItemBytes together with the
// suffix " (+N more)", N counting every item not named. The first item is
// always named, cut at a rune boundary and ended with "…" when it does not
// fit beside the suffix. The result is at most MaxItemBytes bytes.
func JoinItems(items []string, more int) string {
	if more == 0 && len(items) > 0 {
		if j := strings.Join(items, itemSep); len(j) <= MaxItemBytes {
			return j
		}
	}
	for k := len(items); k >= 1; k-- {
		suffix := fmt.Sprintf(" (+%d more)", len(items)-k+more)
		if j := strings.Join(items[:k], itemSep); len(j)+len(suffix) <= MaxItemBytes {
			return j + suffix
		}
	}
	if len(items) == 0 {
		return ""
	}
	suffix := fmt.Sprintf("… (+%d more)", len(items)-1+more)
	first := items[0][:MaxItemBytes-len(suffix)]
	for !utf8.ValidString(first) {
		first = first[:len(first)-1] // cut at a rune boundary
	}
	return first + suffix
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

// disagree says how order b (a later row of the same order) differs from a
// in what all rows of one order share, or "".
func disagree(a, b Order) string {
	switch {
	case a.User != b.User:
		return fmt.Sprintf("user %s here, %s", termtext.Quote(b.User), termtext.Quote(a.User))
	case !sameTime(a.DeliveredAt, b.DeliveredAt):
		return fmt.Sprintf("delivered_at %s here, %s", timeText(b.DeliveredAt), timeText(a.DeliveredAt))
	case a.FinalSale != b.FinalSale:
		return fmt.Sprintf("final_sale %v here, %v", b.FinalSale, a.FinalSale)
	}
	return ""
}

// timeText shows a delivery time in a message.
func timeText(t *time.Time) string {
	if t == nil {
		return "empty (not delivered)"
	}
	return t.UTC().Format(time.RFC3339)
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// row checks one record of the file whole and returns its order
// (without the item) and its item; false when a value is bad, each
// problem in f.probs. A field the file has no column for is not checked
// (the header's missing columns are reported for it); a field with a
// default takes it first (rec is changed).
func (f *OrdersFile) row(rec []string) (Order, string, bool) {
	f.probs = f.probs[:0]
	for _, d := range f.defaults {
		rec[d.col] = d.value
	}
	o := Order{ID: rec[colOrderID], User: rec[colUser]}
	item := rec[colItem]
	if f.has[colOrderID] {
		if err := f.checkID(o.ID); err != nil {
			f.fail(kindOrderID, err)
		}
	}
	if f.has[colUser] {
		f.checkUser(o)
	}
	if f.has[colItem] {
		switch {
		case item == "":
			f.fail(kindItem, errors.New("item must not be empty"))
		case len(item) > MaxItemBytes:
			f.fail(kindItem, fmt.Errorf("item is %d bytes; at most %d are allowed", len(item), MaxItemBytes))
		}
	}
	if f.has[colDeliveredAt] || f.has[colDeliveredDaysAgo] {
		t, kind, err := f.delivered(rec[colDeliveredAt], rec[colDeliveredDaysAgo])
		if err != nil {
			f.fail(kind, err)
		}
		o.DeliveredAt = t
	}
	if f.has[colFinalSale] {
		b, err := parseFlag("final_sale", rec[colFinalSale])
		if err != nil {
			f.fail(kindFinalSale, err)
		}
		o.FinalSale = b
	}
	return o, item, len(f.probs) == 0
}

// fail records a problem of the row being checked.
func (f *OrdersFile) fail(k problemKind, err error) {
	f.probs = append(f.probs, problem{kind: k, err: err})
}

// checkID checks an order id (ParseOptions.CheckID).
func (f *OrdersFile) checkID(id string) error {
	if f.opts.CheckID != nil {
		return f.opts.CheckID(id)
	}
	if id == "" {
		return errors.New("order id must not be empty")
	}
	return nil
}

// checkUser checks the user of a row (ParseOptions.CheckUser), and that
// it is --user's unless the import is the operator's.
func (f *OrdersFile) checkUser(o Order) {
	if o.User != f.lastUser || !f.userChecked {
		checkUser := f.opts.CheckUser
		if checkUser == nil {
			checkUser = func(u string) error { return checkLabel("user", u, MaxUserBytes) }
		}
		if err := checkUser(o.User); err != nil {
			f.fail(kindUser, err)
			return
		}
		f.lastUser, f.userChecked = o.User, true
	}
	if !f.opts.Operator && o.User != f.opts.User {
		f.fail(kindOtherUser, fmt.Errorf("order %s is of user %s, not of the importing user %s", o.ID, termtext.Quote(o.User), termtext.Quote(f.opts.User)))
	}
}

// checkLabel refuses an empty name, one over max bytes, one with control
// or invisible format characters, or one that starts or ends with a space
// character that trimming kept (a no-break space): a user is printed and
// compared, and such a name would look like another.
func checkLabel(what, s string, max int) error {
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	switch {
	case s == "":
		return fmt.Errorf("%s must not be empty", what)
	case len(s) > max:
		return fmt.Errorf("%s is %d bytes; at most %d are allowed", what, len(s), max)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || termtext.Invisible(r) }):
		// The rule of a user name everywhere else (returns.ValidUser).
		return fmt.Errorf("%s %s holds control or invisible characters (or a blank that is not a space)", what, termtext.Quote(s))
	case unicode.IsSpace(first) || unicode.IsSpace(last):
		return fmt.Errorf("%s %s starts or ends with a space character", what, termtext.Quote(s))
	}
	return nil
}

// Delivery time layouts (docs/orders.md "Dates"): with a zone, and without
// one (read in ParseOptions.Location).
var (
	zonedLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05 -07:00", "2006-01-02 15:04:05Z07:00"}
	localLayouts = []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04"}
)

// The range of delivery times an orders file may hold: a time before
// MinDeliveredAt (0001-01-01, the zero time, a typo'd year) or more than
// MaxDeliveredAhead after the import is refused with its line, not stored.
var MinDeliveredAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxDeliveredAhead is how far after the import a delivery time may be
// (clocks and time zones of a shop's systems differ by hours, not days).
const MaxDeliveredAhead = 24 * time.Hour

// delivered reads the delivery of a row: delivered_at (a time or a date,
// in the mapping's date format if it has one) or delivered_days_ago
// (whole days before ParseOptions.Now); nil when empty (not delivered).
// A time outside [MinDeliveredAt, Now + MaxDeliveredAhead] is an error.
// An error comes with the kind of its problem.
func (f *OrdersFile) delivered(at, days string) (*time.Time, problemKind, error) {
	if days != "" {
		d, err := daysAgo(days)
		if err != nil {
			return nil, kindDaysAgo, err
		}
		t := storedTime(f.opts.Now.Add(-time.Duration(d) * 24 * time.Hour)).Truncate(DeliveryPrecision)
		if t.Before(MinDeliveredAt) {
			return nil, kindDaysAgo, fmt.Errorf("delivered_days_ago %s is before %s; a delivery time must be from %s on", days, MinDeliveredAt.Format(time.DateOnly), MinDeliveredAt.Format(time.DateOnly))
		}
		return &t, 0, nil
	}
	if at == "" {
		return nil, 0, nil
	}
	if at == f.lastAt && f.lastTime != nil {
		return f.lastTime, 0, nil // shared: nothing changes a stored order's time
	}
	var (
		t   time.Time
		err error
	)
	if f.pattern != nil {
		t, err = f.pattern.read(at, f.opts.Location)
	} else {
		t, err = ParseDeliveryTime(at, f.opts.Location)
	}
	if err != nil {
		kind := kindDelivered
		var te *timeError
		if errors.As(err, &te) {
			kind = te.kind
		}
		return nil, kind, err
	}
	t = t.Truncate(DeliveryPrecision)
	switch {
	case t.Before(MinDeliveredAt):
		return nil, kindDeliveredRange, fmt.Errorf("delivered_at %s is before %s; a delivery time must be from %s on", termtext.Quote(at), MinDeliveredAt.Format(time.DateOnly), MinDeliveredAt.Format(time.DateOnly))
	case t.After(f.opts.Now.Add(MaxDeliveredAhead)):
		return nil, kindDeliveredRange, fmt.Errorf("delivered_at %s is more than %s after now (%s); a delivery cannot be in the future", termtext.Quote(at), MaxDeliveredAhead, f.opts.Now.UTC().Format(time.RFC3339))
	}
	f.lastAt, f.lastTime = at, &t
	return &t, 0, nil
}

// daysAgo reads a delivered_days_ago value: a whole number of days from
// 0 to 36500.
func daysAgo(s string) (int, error) {
	d, err := strconv.Atoi(s)
	if err != nil || d < 0 || d > 36500 {
		return 0, fmt.Errorf("delivered_days_ago %s: want empty or a whole number of days >= 0", termtext.Quote(s))
	}
	return d, nil
}

// DeliveryPrecision is what an import keeps of a delivery time: the
// millisecond, as JSON output shows every time (cmd.JSONTimeLayout), so
// that a time shown and imported again is the one stored (finer digits of
// a file are dropped, not rounded).
const DeliveryPrecision = time.Millisecond

// ParseDeliveryTime reads a delivery time of an orders file, in UTC:
// RFC 3339, "YYYY-MM-DD HH:MM:SS ±hhmm" (Shopify's), a time without a zone
// ("YYYY-MM-DD HH:MM[:SS]", with a space or 'T') in loc, or a date
// "YYYY-MM-DD" (its midnight in loc). A time or a date without a zone and a
// nil loc is an error that asks for --timezone: its meaning is not
// guessed; nor is a wall time loc's clocks skip or show twice (an error
// each), nor an offset beyond ±14:00. RFC 3339's lower-case t and z are
// read. It does not check the range (see MinDeliveredAt).
func ParseDeliveryTime(s string, loc *time.Location) (time.Time, error) {
	if len(s) == len(time.DateOnly) {
		return parseDate(s, loc)
	}
	// RFC 3339 allows a lower-case t and z (section 5.6); Go reads only
	// upper case.
	norm := s
	if len(norm) > 10 && norm[10] == 't' {
		norm = norm[:10] + "T" + norm[11:]
	}
	if strings.HasSuffix(norm, "z") {
		norm = norm[:len(norm)-1] + "Z"
	}
	for _, l := range zonedLayouts {
		if t, err := time.Parse(l, norm); err == nil {
			if _, off := t.Zone(); off > maxOffset || off < -maxOffset {
				return time.Time{}, &timeError{kind: kindOffset, msg: fmt.Sprintf("delivered_at %s has the offset %s; offsets go from -14:00 to +14:00", termtext.Quote(s), t.Format("-07:00"))}
			}
			return storedTime(t), nil
		}
	}
	for _, l := range localLayouts {
		wall, err := time.Parse(l, norm)
		if err != nil {
			continue
		}
		if loc == nil {
			return time.Time{}, noZone(s)
		}
		return inLocation(s, wall, loc)
	}
	return time.Time{}, badTime(s)
}

// maxOffset is the largest offset from UTC of a time zone in use (Kiribati,
// +14:00; the lowest is -12:00): a larger one is a typo, not a zone.
const maxOffset = 14 * 3600

// inLocation returns the instant at which the clocks of loc show wall
// (its fields read as UTC): s, as the file has it, names it in errors. A
// wall time the clocks skip (a change to summer time) or show twice (back
// to winter time) is refused, not guessed: the file must say the offset.
func inLocation(s string, wall time.Time, loc *time.Location) (time.Time, error) {
	// The offsets in force a day before and a day after: a zone changes
	// its offset at most once within two days.
	var found []time.Time
	for _, at := range []time.Time{wall.Add(-24 * time.Hour), wall.Add(24 * time.Hour)} {
		_, off := at.In(loc).Zone()
		c := wall.Add(-time.Duration(off) * time.Second)
		if _, o := c.In(loc).Zone(); o == off && (len(found) == 0 || !found[0].Equal(c)) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return time.Time{}, &timeError{kind: kindClock, msg: fmt.Sprintf("delivered_at %s does not exist in %s (the clocks skip it); write it with its offset", termtext.Quote(s), loc)}
	case 2:
		a, b := found[0].In(loc), found[1].In(loc)
		return time.Time{}, &timeError{kind: kindClock, msg: fmt.Sprintf("delivered_at %s occurs twice in %s (%s and %s: the clocks go back); write it with its offset", termtext.Quote(s), loc, a.Format("-07:00"), b.Format("-07:00"))}
	}
	return storedTime(found[0]), nil
}

// parseDate reads a date YYYY-MM-DD: its midnight in loc, which must be
// given.
func parseDate(s string, loc *time.Location) (time.Time, error) {
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		return time.Time{}, badTime(s)
	}
	if loc == nil {
		return time.Time{}, noZone(s)
	}
	wall, _ := time.Parse(time.DateOnly, s)
	return inLocation(s, wall, loc)
}

// noZone is the error of a date or time without a zone read without a
// location (NeedTimezone).
func noZone(s string) error {
	return &timeError{kind: kindNoZone, msg: fmt.Sprintf("delivered_at %s has no time zone", termtext.Quote(s))}
}

func badTime(s string) error {
	return &timeError{kind: kindDelivered, msg: fmt.Sprintf("delivered_at %s is not a date YYYY-MM-DD, an RFC 3339 time or YYYY-MM-DD HH:MM:SS [±hhmm]", termtext.Quote(s))}
}
