package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"assistant/business"
	"assistant/flow/returns"
	"assistant/internal/termtext"
)

const ordersImportLong = `import reads a shop's orders export: columns found by name (Name, Order ID,
Customer, Fulfilled at, … are understood; other columns are ignored), ',' ';'
or tab, UTF-8 or UTF-16. Every row is checked before the data dir is opened;
a file with any bad row is refused whole (exit 2, the bad lines named).

An import is an upsert: new orders are added; a stored order's item,
delivery and final sale flag are updated (tasks in flight for it are
reported); an equal one is unchanged; a teaching order no task uses is
replaced (one a task uses is refused, exit 3). An order is its owner's
and its id: without --operator an import reads and writes --user's
orders only (rows of other users are refused by line, exit 2; a change
to the shop's order of --user is refused, exit 3). --operator imports the shop's orders, of any
user; the shop's order ids are unique, so one that would go to another
customer refuses the whole file (exit 3). Dates and times without a zone
need --timezone. An export with other column names, without a column, or
with dates of its own format is read with --column, --default and
--date-format; a refused file names every problem it has, by kind. All
of it is one transaction; --dry-run writes nothing and says what would
change. See docs/orders.md.`

const ordersImportExample = `  printf 'order_id,user,item,delivered_at,final_sale\nC1,demo-user,Kettle,2026-11-20T10:00:00Z,false\n' > shop.csv
  assistant orders import shop.csv
  assistant orders import --operator --timezone Europe/Berlin --dry-run shop.csv
  printf 'order_id,user,item,delivered_at\nC2,demo-user,Mug,2026-11-21T09:00:00Z\n' > export.csv
  assistant orders import --default final_sale=false export.csv          # the export has no final_sale column`

// newCmdOrders is the orders group: import, list and show.
func newCmdOrders(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "orders",
		Short: "Import and list the orders returns are made for",
	}
	c.AddCommand(newCmdOrdersImport(a, ordersImportRun), newCmdOrdersList(a, ordersListRun), newCmdOrdersShow(a, ordersShowRun))
	return c
}

// ordersImportOptions are the argument and the flags of orders import.
type ordersImportOptions struct {
	app      *app
	File     string
	DryRun   bool
	Timezone string
	Operator bool
	// Columns are --column FIELD=HEADER, Defaults --default FIELD=VALUE,
	// DateFormat --date-format (business.NewExportMapping reads them).
	Columns    []string
	Defaults   []string
	DateFormat string
}

// newCmdOrdersImport is the orders import command; runF runs it with its
// options (ordersImportRun, or a test's).
func newCmdOrdersImport(a *app, runF func(context.Context, *ordersImportOptions) error) *cobra.Command {
	opts := &ordersImportOptions{app: a}
	c := &cobra.Command{
		Use:     "import FILE.csv",
		Short:   "Load or update orders from a shop's export (CSV: order_id,user,item,delivered_at,final_sale, by name)",
		Long:    ordersImportLong,
		Example: ordersImportExample,
		Args:    exactArgs(1, "orders import needs FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File = args[0]
			return runF(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what the import would change and write nothing")
	c.Flags().StringVar(&opts.Timezone, "timezone", "", "IANA time zone (Europe/Berlin) of delivery dates and times written without one; without it such a value is refused")
	c.Flags().BoolVar(&opts.Operator, "operator", false, "act as the shop's operator: import the rows of every user, not only --user's (a role, not authentication)")
	c.Flags().StringArrayVar(&opts.Columns, "column", nil, "FIELD=HEADER: the export's column HEADER holds FIELD (order_id, user, item, delivered_at, final_sale); repeatable")
	c.Flags().StringArrayVar(&opts.Defaults, "default", nil, "FIELD=VALUE: every row's value of a FIELD the export has no column for (final_sale=false); repeatable")
	c.Flags().StringVar(&opts.DateFormat, "date-format", "", "the format of delivery dates, such as DD.MM.YYYY or MM/DD/YYYY hh:mm A (letters: docs/orders.md \"Date formats\")")
	return c
}

// ordersListOptions are orders list's: it takes no argument and no flag
// of its own.
type ordersListOptions struct{ app *app }

// newCmdOrdersList is the orders list command; runF runs it (ordersListRun,
// or a test's).
func newCmdOrdersList(a *app, runF func(context.Context, *ordersListOptions) error) *cobra.Command {
	opts := &ordersListOptions{app: a}
	return &cobra.Command{
		Use:   "list",
		Short: "List your orders and whether each can be returned now",
		Long: `list prints your orders by order id, each with whether a return can be
started now and, if not, why (not_returnable_because: the code start would
fail with). It changes nothing; a data dir that does not exist is exit 4
and is not made.`,
		Args: exactArgs(0, "orders list takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error { return runF(c.Context(), opts) },
	}
}

// ordersListRun prints the user's orders; a missing data dir is exit 4,
// never made.
func ordersListRun(ctx context.Context, opts *ordersListOptions) error {
	a := opts.app
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	return a.listOrders(func(fn func(returns.OrderLine) error) error {
		return svc.EachOrder(ctx, a.user, fn)
	})
}

// ordersImportRun runs orders import: the file is checked first, then the
// data dir opened (made, unless a dry run) and the orders written.
func ordersImportRun(ctx context.Context, o *ordersImportOptions) error {
	a, path := o.app, o.File
	opts := business.ParseOptions{User: a.user, Operator: o.Operator}
	if o.Timezone != "" {
		loc, err := time.LoadLocation(o.Timezone)
		if err != nil || o.Timezone == "Local" {
			return usageErr("--timezone %q is not an IANA time zone name (such as Europe/Berlin or UTC)", o.Timezone)
		}
		opts.Location = loc
	}
	mapping, err := business.NewExportMapping(o.Columns, o.Defaults, o.DateFormat, opts.Location)
	var me *business.MappingError
	switch {
	case errors.As(err, &me):
		return usageErr("--%s %s: %s", me.Option, termtext.Quote(me.Value), me.Reason)
	case err != nil:
		return err
	}
	opts.Mapping = mapping
	in, err := openInput(ctx, "orders file", path)
	if err != nil {
		return err
	}
	defer in.Close()
	if !o.DryRun && !a.onServer() && !exists(a.data) {
		if handled, err := a.importOrdersNewDir(ctx, path, in, opts); handled {
			return err
		}
	}
	// A bad file is refused before the data dir is opened or made.
	file, err := returns.ParseOrders(ctx, interruptible(ctx, in), opts)
	if err != nil {
		return inputError(err) // a failing $TMPDIR is exit 1, not bad input
	}
	defer file.Close()
	mode := returns.CreateIfMissing // a dry run makes nothing
	if o.DryRun {
		mode = returns.OpenExisting
	}
	svc, err := a.service(ctx, mode)
	if err != nil {
		return err
	}
	res, err := svc.ImportOrdersFile(ctx, file, business.ImportOptions{DryRun: o.DryRun})
	if err != nil {
		return err
	}
	if res.DryRun {
		return a.renderImportResult(path, res, o.Operator)
	}
	return a.reportImport(path, res, o.Operator)
}

// reportImport prints the report of an import that has committed. A
// signal from here on came after the commit: the report holds, and the
// signal's note says so (Run).
func (a *app) reportImport(path string, res business.ImportResult, operator bool) error {
	a.done = "the import was committed: every order of the report is stored; nothing to run again"
	return a.renderImportResult(path, res, operator)
}

// renderImportResult prints an import's report as --output asks.
func (a *app) renderImportResult(path string, res business.ImportResult, operator bool) error {
	if a.output == "json" {
		return writeJSON(a.stdout, res)
	}
	return renderImport(a.stdout, path, res, operator)
}

// renderImport prints an import report for a person (docs/orders.md
// "Report"); every text from the file goes through termSafe. operator
// says whose orders replaced teaching orders: the shop's (--operator) or
// the user's own.
func renderImport(w io.Writer, path string, res business.ImportResult, operator bool) error {
	verb := "Imported"
	if res.DryRun {
		verb = "Dry run, nothing written; would import"
	}
	fmt.Fprintf(w, "%s %s: %d rows, %d orders: %d added, %d updated, %d unchanged, %d refused.\n",
		verb, termSafe(path), res.Rows, res.Orders, res.Added, res.Updated, res.Unchanged, res.Refused)
	if res.TeachingReplaced > 0 {
		whose := "your own"
		if operator {
			whose = "the shop's"
		}
		fmt.Fprintf(w, "%d teaching orders replaced by %s.\n", res.TeachingReplaced, whose)
	}
	if res.InFlight > 0 {
		fmt.Fprintf(w, "%d updated orders have tasks in flight; their next submit checks the order again.\n", res.InFlight)
	}
	if len(res.Changes) == 0 {
		return nil
	}
	tw := termtext.NewTable(w)
	fmt.Fprintln(tw, "LINE\tORDER\tCHANGE\tTASKS IN FLIGHT\tRETURNABLE NOW")
	for _, ch := range res.Changes {
		what := ch.Action
		if len(ch.Fields) > 0 {
			what += ": " + strings.Join(ch.Fields, ", ")
		}
		tasks, now := "-", "-"
		if len(ch.Tasks) > 0 {
			safe := make([]string, len(ch.Tasks))
			for i, t := range ch.Tasks {
				safe[i] = termSafe(t)
			}
			tasks = strings.Join(safe, ", ")
		}
		if ch.Action == business.ActionUpdated || ch.Action == business.ActionReplacedTeaching {
			now = "yes"
			if ch.NotReturnableNow != "" {
				now = "no: " + ch.NotReturnableNow
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", ch.Line, termSafe(ch.OrderID), what, tasks, now)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.MoreChanges > 0 {
		fmt.Fprintf(w, "… and %d more.\n", res.MoreChanges)
	}
	return nil
}

// orderSource gives orders list its orders, one at a time, to fn
// (returns.Service.EachOrder of --user), and returns the first error,
// its own or fn's.
type orderSource func(fn func(returns.OrderLine) error) error

// listOrders prints `orders list` as the orders come from src, so that
// its memory does not grow with their number: JSON element by element
// (ordersJSON), text a table flushed every ordersBlock rows (ordersText).
// Nothing is printed before the first order is read (or the list ends
// empty), so an error before it is printed as any command's. An error
// after it (a read error part-way) leaves what was printed: the rows or
// elements read before it; JSON without its closing "]" and "}", so that
// no program takes a cut list for a whole one, and without the error
// object (a.reported); the error's one line goes to stderr as usual.
func (a *app) listOrders(src orderSource) error {
	var w ordersWriter
	if a.output == "json" {
		jw, err := newOrdersJSON(a.stdout)
		if err != nil {
			return err
		}
		w = jw
	} else {
		w = newOrdersText(a.stdout)
	}
	if err := src(w.line); err != nil {
		if w.started() {
			a.reported = a.output == "json"
			_ = w.flush() // the rows read before the error
		}
		return err
	}
	return w.end()
}

// ordersWriter prints the orders of orders list one at a time.
type ordersWriter interface {
	// line prints o (or keeps it for its block).
	line(o returns.OrderLine) error
	// end prints what is left and the end of the list.
	end() error
	// started reports whether anything was printed or kept to print.
	started() bool
	// flush prints what was kept, without ending the list.
	flush() error
}

// ordersBlock is how many rows of orders list's text table are aligned
// together: its table is flushed after each block, so a column is as
// wide as its widest cell of the block (docs/orders.md "Listing").
const ordersBlock = 1000

// ordersText prints orders list's text table: the header and then each
// order, its id and item through termSafe, aligned by block.
type ordersText struct {
	out *bufio.Writer
	tw  *termtext.Table
	n   int
}

func newOrdersText(w io.Writer) *ordersText {
	out := bufio.NewWriterSize(w, 64<<10)
	return &ordersText{out: out, tw: termtext.NewTable(out)}
}

func (t *ordersText) line(o returns.OrderLine) error {
	if t.n == 0 {
		fmt.Fprintln(t.tw, "ORDER\tITEM\tDELIVERED\tFINAL SALE\tRETURNABLE")
	} else if t.n%ordersBlock == 0 {
		if err := t.flush(); err != nil {
			return err
		}
	}
	t.n++
	ok := "yes"
	if o.Returnable != "" {
		ok = "no: " + o.Returnable
	}
	_, err := fmt.Fprintf(t.tw, "%s\t%s\t%s\t%v\t%s\n", termSafe(o.ID), termSafe(o.Item), deliveredText(o.DeliveredAt), o.FinalSale, ok)
	return err
}

func (t *ordersText) end() error {
	if t.n == 0 {
		fmt.Fprintln(t.tw, "ORDER\tITEM\tDELIVERED\tFINAL SALE\tRETURNABLE")
	}
	return t.flush()
}

func (t *ordersText) started() bool { return t.n > 0 }

func (t *ordersText) flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	return t.out.Flush()
}

// renderOrders prints orders as orders list's text table (ordersText).
func renderOrders(w io.Writer, orders []returns.OrderLine) error {
	t := newOrdersText(w)
	for _, o := range orders {
		if err := t.line(o); err != nil {
			return err
		}
	}
	return t.end()
}

// ordersJSON prints orders list's JSON element by element, exactly as
// writeJSON prints {"orders": [...]} whole: the same indentation, field
// order, escaping, nulls and --json selection (of each element's fields).
// An element is written by appendOrderLine, which knows OrderLine's
// fields; should they ever differ from orderLineFields, each element
// goes through writeJSON's own tree instead (slower, the same bytes).
type ordersJSON struct {
	out *bufio.Writer
	sel *jsonSelection
	// head is the document up to the list's "[", tail what follows its
	// "]" (writeJSON's output for an empty list, cut at its "[]").
	head, tail string
	// noList: the --json selection leaves the list out (schema_version
	// alone); tail is then the whole document and no order is printed.
	noList bool
	// keep says which of orderLineFields are printed (all without --json).
	keep [len(orderLineFields)]bool
	// fast: OrderLine's JSON fields are orderLineFields.
	fast     bool
	n        int
	buf      []byte
	str      bytes.Buffer
	enc      *json.Encoder
	indented bytes.Buffer
}

// ordersIndent is the indentation of an element of the orders list in
// writeJSON's output: two levels of its "  ".
const ordersIndent = "    "

// orderLineFields are the JSON fields of returns.OrderLine, in order, as
// appendOrderLine prints them.
var orderLineFields = [...]string{"order_id", "user", "item", "delivered_at", "final_sale", "teaching", "not_returnable_because"}

func newOrdersJSON(w io.Writer) (*ordersJSON, error) {
	var (
		empty bytes.Buffer
		sel   *jsonSelection
		into  io.Writer = &empty
	)
	if s, ok := w.(*selectingWriter); ok {
		sel, into = s.sel, &selectingWriter{Writer: &empty, sel: s.sel}
	}
	if err := writeJSON(into, map[string]any{"orders": []returns.OrderLine{}}); err != nil {
		return nil, err
	}
	j := &ordersJSON{out: bufio.NewWriterSize(plainWriter(w), 64<<10), sel: sel,
		fast: slices.Equal(fieldNames(reflect.TypeFor[returns.OrderLine]()), orderLineFields[:])}
	head, tail, ok := strings.Cut(empty.String(), "[]")
	if !ok {
		// --json schema_version: the document holds no list, whatever
		// the orders; it is printed at the end, as writeJSON printed it.
		j.noList, j.tail = true, empty.String()
		return j, nil
	}
	j.head, j.tail = head+"[", "]"+tail
	for i, f := range orderLineFields {
		j.keep[i] = sel == nil || sel.list != "orders" || slices.Contains(sel.fields, f)
	}
	j.enc = json.NewEncoder(&j.str)
	j.enc.SetEscapeHTML(false) // as writeTree
	return j, nil
}

func (j *ordersJSON) line(o returns.OrderLine) error {
	if j.noList {
		return nil
	}
	if j.n == 0 {
		j.out.WriteString(j.head)
	} else {
		j.out.WriteByte(',')
	}
	j.n++
	j.out.WriteString("\n" + ordersIndent)
	if !j.fast {
		return j.slowLine(o)
	}
	b, err := j.appendOrderLine(j.buf[:0], o)
	if err != nil {
		return err
	}
	j.buf = b
	_, err = j.out.Write(b)
	return err
}

// appendOrderLine appends o to b as writeJSON's indented output has it as
// an element of the list: its fields (those kept) one a line, indented
// below the list's, strings as writeTree writes them (no HTML escapes),
// "" and a nil time null, a time in JSONTimeLayout.
func (j *ordersJSON) appendOrderLine(b []byte, o returns.OrderLine) ([]byte, error) {
	const fieldIndent = "\n" + ordersIndent + "  "
	b = append(b, '{')
	first := true
	for i, name := range orderLineFields {
		if !j.keep[i] {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, fieldIndent...)
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `": `...)
		var err error
		switch i {
		case 0:
			b, err = j.appendString(b, o.ID)
		case 1:
			b, err = j.appendString(b, o.User)
		case 2:
			b, err = j.appendString(b, o.Item)
		case 3:
			if o.DeliveredAt == nil || o.DeliveredAt.IsZero() {
				b = append(b, "null"...)
			} else {
				b = append(b, '"')
				b = o.DeliveredAt.UTC().Truncate(time.Millisecond).AppendFormat(b, JSONTimeLayout)
				b = append(b, '"')
			}
		case 4:
			b = strconv.AppendBool(b, o.FinalSale)
		case 5:
			b = strconv.AppendBool(b, o.Teaching)
		case 6:
			b, err = j.appendString(b, o.Returnable)
		}
		if err != nil {
			return nil, err
		}
	}
	if first {
		return append(b, '}'), nil
	}
	return append(b, "\n"+ordersIndent+"}"...), nil
}

// appendString appends s as writeTree prints a string ("" as null).
func (j *ordersJSON) appendString(b []byte, s string) ([]byte, error) {
	if s == "" {
		return append(b, "null"...), nil
	}
	j.str.Reset()
	if err := j.enc.Encode(s); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(j.str.Bytes(), []byte("\n"))...), nil
}

// slowLine prints o through writeJSON's tree (toTree, the selection's
// apply, writeTree, json.Indent).
func (j *ordersJSON) slowLine(o returns.OrderLine) error {
	tree, err := toTree(reflect.ValueOf(o))
	if err != nil {
		return err
	}
	if obj, ok := tree.(*object); ok && j.sel != nil && j.sel.list == "orders" {
		// apply keeps the selected fields of each element of the list.
		kept := j.sel.apply(&object{keys: []string{"orders"}, vals: []any{[]any{obj}}})
		tree = kept.vals[0].([]any)[0]
	}
	var compact bytes.Buffer
	if err := writeTree(&compact, tree); err != nil {
		return err
	}
	j.indented.Reset()
	if err := json.Indent(&j.indented, compact.Bytes(), ordersIndent, "  "); err != nil {
		return err
	}
	_, err = j.out.Write(j.indented.Bytes())
	return err
}

func (j *ordersJSON) end() error {
	if j.noList {
		j.out.WriteString(j.tail)
		return j.out.Flush()
	}
	if j.n == 0 {
		j.out.WriteString(j.head)
	} else {
		j.out.WriteString("\n" + ordersIndent[:len(ordersIndent)/2])
	}
	j.out.WriteString(j.tail)
	return j.out.Flush()
}

func (j *ordersJSON) started() bool { return j.n > 0 }

func (j *ordersJSON) flush() error { return j.out.Flush() }

// deliveredText renders a delivery date (UTC) for a person, or "not delivered".
func deliveredText(t *time.Time) string {
	if t == nil {
		return "not delivered"
	}
	return t.UTC().Format(time.DateOnly)
}
