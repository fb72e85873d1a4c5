package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
	"assistant/internal/termtext"
)

// orderLines returns n order lines that differ in every field: ids of
// several widths, items with characters JSON and a terminal escape
// (quotes, <>&, controls, bidi, invalid UTF-8, none), dates nil, in
// another zone, with nanoseconds, and each reason code.
func orderLines(n int) []returns.OrderLine {
	items := []string{"Kettle", `Say "hi" <b>&</b>`, "Tab\there\nnew line", "\u202eevil\u202c", "bad \xff utf-8", "", "运动鞋 42码", `back\slash`}
	codes := []string{"", business.ReasonNotDelivered, business.ReasonReturnWindowClosed, business.ReasonFinalSale, business.ReasonOpenApplication, returns.CodeInconsistent}
	berlin := time.FixedZone("CET", 3600)
	out := make([]returns.OrderLine, n)
	for i := range out {
		var delivered *time.Time
		switch i % 4 {
		case 1:
			d := time.Date(2026, 11, 20, 14, 3, 0, 123456789, time.UTC)
			delivered = &d
		case 2:
			d := time.Date(2026, 1, 2, 0, 0, i%60, 0, berlin)
			delivered = &d
		case 3:
			d := time.Time{}
			delivered = &d
		}
		out[i] = returns.OrderLine{
			Order: business.Order{ID: fmt.Sprintf("C%0*d", 1+i%7, i), User: "demo-user", Item: items[i%len(items)],
				DeliveredAt: delivered, FinalSale: i%3 == 0, Teaching: i%5 == 0},
			Returnable: codes[i%len(codes)],
		}
	}
	return out
}

// sourceOf gives lines to fn, then fails with fail (nil: ends).
func sourceOf(lines []returns.OrderLine, fail error) orderSource {
	return func(fn func(returns.OrderLine) error) error {
		for _, l := range lines {
			if err := fn(l); err != nil {
				return err
			}
		}
		return fail
	}
}

// TestOrdersListJSONIsWriteJSONs: orders list's JSON, written element by
// element, is byte for byte what writeJSON printed of the whole list
// ({"orders": [...]}), for empty, short and long lists, with and without
// a --json selection (fields given in another order than the struct's),
// by the fast writer and by the generic one.
func TestOrdersListJSONIsWriteJSONs(t *testing.T) {
	selections := []string{"", "order_id", "not_returnable_because,order_id", "item,delivered_at,teaching,user", "order_id,user,item,delivered_at,final_sale,teaching,not_returnable_because",
		"orders", "schema_version", "orders,schema_version"}
	for _, n := range []int{0, 1, 3, 2500} {
		lines := orderLines(n)
		for _, fields := range selections {
			for _, fast := range []bool{true, false} {
				t.Run(fmt.Sprintf("n=%d/json=%s/fast=%v", n, fields, fast), func(t *testing.T) {
					var want, got bytes.Buffer
					wrap := func(b *bytes.Buffer) *app {
						a := &app{output: "json", stdout: b}
						if fields != "" {
							a.stdout = &selectingWriter{Writer: b, sel: ordersSelection(t, fields)}
						}
						return a
					}
					if err := writeJSON(wrap(&want).stdout, map[string]any{"orders": lines}); err != nil {
						t.Fatal(err)
					}
					a := wrap(&got)
					w, err := newOrdersJSON(a.stdout)
					if err != nil {
						t.Fatal(err)
					}
					if !w.fast {
						t.Fatal("OrderLine's fields are not orderLineFields: the fast writer is never used")
					}
					w.fast = fast
					if err := sourceOf(lines, nil)(w.line); err != nil {
						t.Fatal(err)
					}
					if err := w.end(); err != nil {
						t.Fatal(err)
					}
					if got.String() != want.String() {
						t.Fatalf("element by element:\n%s\nwriteJSON:\n%s", head(got.String()), head(want.String()))
					}
					// And through listOrders, as the command runs it.
					got.Reset()
					if err := wrap(&got).listOrders(sourceOf(lines, nil)); err != nil {
						t.Fatal(err)
					}
					if got.String() != want.String() {
						t.Fatalf("listOrders:\n%s\nwriteJSON:\n%s", head(got.String()), head(want.String()))
					}
				})
			}
		}
	}
}

// ordersSelection is --json fields of orders list, as the command
// makes it (selectionFor).
func ordersSelection(t *testing.T, fields string) *jsonSelection {
	t.Helper()
	root := (&app{stdout: io.Discard, stderr: io.Discard}).newRoot()
	c, _, err := root.Find([]string{"orders", "list"})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := selectionFor(c, nil, fields)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// head is the start of s, for a failure message.
func head(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// TestOrdersListTextBlocks: the text table is the header and the rows
// aligned ordersBlock rows at a time: a list of up to ordersBlock orders
// is exactly the one table it always was, a longer one the same table
// for its first block and then one table per block.
func TestOrdersListTextBlocks(t *testing.T) {
	table := func(header bool, lines []returns.OrderLine) string {
		var b bytes.Buffer
		tw := termtext.NewTable(&b)
		if header {
			fmt.Fprintln(tw, "ORDER\tITEM\tDELIVERED (UTC)\tFINAL SALE\tRETURNABLE")
		}
		for _, o := range lines {
			ok := "yes"
			if o.Returnable != "" {
				ok = "no: " + o.Returnable
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", termSafe(o.ID), termSafe(o.Item), deliveredText(o.DeliveredAt), o.FinalSale, ok)
		}
		tw.Flush()
		return b.String()
	}
	for _, n := range []int{0, 1, 7, ordersBlock, ordersBlock + 1, 2*ordersBlock + 500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			lines := orderLines(n)
			want := table(true, lines[:min(n, ordersBlock)])
			for i := ordersBlock; i < n; i += ordersBlock {
				want += table(false, lines[i:min(n, i+ordersBlock)])
			}
			var got bytes.Buffer
			a := &app{output: "text", stdout: &got}
			if err := a.listOrders(sourceOf(lines, nil)); err != nil {
				t.Fatal(err)
			}
			if got.String() != want {
				t.Fatalf("got:\n%s\nwant:\n%s", head(got.String()), head(want))
			}
			var old bytes.Buffer
			if err := renderOrders(&old, lines); err != nil || old.String() != want {
				t.Fatalf("renderOrders differs from listOrders (%v)", err)
			}
			if n <= ordersBlock && got.String() != table(true, lines) {
				t.Fatal("a list of one block is not one table")
			}
		})
	}
}

// TestOrdersListFailsPartWay: a read error after orders were printed
// leaves them printed (JSON without its closing brackets, so it does not
// parse, and without the error object after it) and is returned for the
// one stderr line; an error before any order prints nothing, so the
// error is reported as any command's.
func TestOrdersListFailsPartWay(t *testing.T) {
	broken := errors.New("disk I/O error")
	lines := orderLines(2500)
	for _, tc := range []struct {
		output   string
		n        int
		reported bool
	}{
		{"json", 1500, true},
		{"text", 1500, false},
		{"json", 0, false},
		{"text", 0, false},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.output, tc.n), func(t *testing.T) {
			var out bytes.Buffer
			a := &app{output: tc.output, stdout: &out}
			err := a.listOrders(sourceOf(lines[:tc.n], broken))
			if !errors.Is(err, broken) {
				t.Fatalf("error %v, want %v", err, broken)
			}
			if a.reported != tc.reported {
				t.Errorf("reported %v, want %v", a.reported, tc.reported)
			}
			if tc.n == 0 {
				if out.Len() != 0 {
					t.Fatalf("printed before the first order: %q", out.String())
				}
				return
			}
			switch tc.output {
			case "json":
				if json.Valid(out.Bytes()) {
					t.Error("a cut JSON list parses")
				}
				var whole bytes.Buffer
				if err := writeJSON(&whole, map[string]any{"orders": lines[:tc.n]}); err != nil {
					t.Fatal(err)
				}
				if cut := strings.TrimSuffix(whole.String(), "\n  ]\n}\n"); out.String() != cut {
					t.Errorf("printed %d bytes, want the %d of the %d orders read before the error", out.Len(), len(cut), tc.n)
				}
			case "text":
				if got := strings.Count(out.String(), "\n"); got != tc.n+1 {
					t.Errorf("printed %d lines, want the header and the %d orders read", got, tc.n)
				}
			}
		})
	}
}

// cancelOnWrite cancels the command's context at its first write to
// stdout, as a SIGINT would while orders list prints.
type cancelOnWrite struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.cancel()
	return w.Buffer.Write(p)
}

// TestOrdersListStreams: orders list prints while it reads. A context
// ended at the first write to stdout ends the listing at its next read:
// exit 130 with one stderr line, and what was printed is the orders read
// by then (a page of business.OrdersPageSize in JSON; two blocks of text
// rows), JSON without its end. Before, the whole list was read before
// anything was printed, so such a context ended nothing.
func TestOrdersListStreams(t *testing.T) {
	c := newCLI(t)
	var csv strings.Builder
	csv.WriteString("order_id,user,item,delivered_at,final_sale\n")
	for i := range 5000 {
		fmt.Fprintf(&csv, "S%05d,demo-user,Item %d,2026-01-20T00:00:00Z,false\n", i, i)
	}
	c.mustRun("orders", "import", c.write("shop.csv", csv.String()))
	for _, tc := range []struct {
		output string
		rows   func(string) int
		want   int
	}{
		{"json", func(s string) int { return strings.Count(s, `"order_id"`) }, business.OrdersPageSize},
		{"text", func(s string) int { return strings.Count(s, "\n") - 1 }, 2 * ordersBlock},
	} {
		t.Run(tc.output, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &cancelOnWrite{cancel: cancel}
			var stderr bytes.Buffer
			code := Run(ctx, []string{"--data", c.data, "--output", tc.output, "orders", "list"}, out, &stderr, c.seed)
			if code != ExitInterrupted {
				t.Fatalf("exit %d, want %d; stderr %q", code, ExitInterrupted, stderr.String())
			}
			if strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), "assistant: interrupted") {
				t.Errorf("stderr %q, want one line: interrupted", stderr.String())
			}
			if got := tc.rows(out.String()); got != tc.want {
				t.Errorf("printed %d orders, want the %d read before the context ended", got, tc.want)
			}
			if tc.output == "json" && (json.Valid(out.Bytes()) || strings.Contains(out.String(), `"error"`)) {
				t.Errorf("JSON of a cut list parses or holds an error object:\n%s", head(out.String()))
			}
		})
	}
}
