package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

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
		fmt.Fprintln(t.tw, "ORDER\tITEM\tDELIVERED (UTC)\tFINAL SALE\tRETURNABLE")
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
		fmt.Fprintln(t.tw, "ORDER\tITEM\tDELIVERED (UTC)\tFINAL SALE\tRETURNABLE")
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

// deliveredAt is when an order was delivered, for one order's card: the
// time in UTC, labelled (a shop's local date may be the next or the day
// before), or "not delivered".
func deliveredAt(t *time.Time) string {
	if t == nil {
		return "not delivered"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}
