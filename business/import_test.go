package business

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"assistant/internal/testkit"
)

// encodeUTF16 encodes s as UTF-16 (bom: with a byte order mark first).
func encodeUTF16(s string, bigEndian, bom bool) string {
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xFEFF}, units...)
	}
	var b strings.Builder
	for _, u := range units {
		if bigEndian {
			b.WriteByte(byte(u >> 8))
			b.WriteByte(byte(u))
		} else {
			b.WriteByte(byte(u))
			b.WriteByte(byte(u >> 8))
		}
	}
	return b.String()
}

// parsed parses file as the operator and returns its orders in file
// order, as the import reads them (from the spool).
func parsed(tb testing.TB, file string, opts ParseOptions) ([]Order, error) {
	tb.Helper()
	opts.Operator = true
	f, err := ParseOrders(context.Background(), strings.NewReader(file), opts)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Order
	err = f.replay(context.Background(), func(g *group) error {
		out = append(out, g.order)
		return nil
	})
	return out, err
}

// the same orders in the shapes real exports have.
func TestParseOrdersShapes(t *testing.T) {
	t.Parallel()
	plain := "order_id,user,item,delivered_at,final_sale\nC1,u1,Kettle,2026-11-20,false\nC2,u2,Toaster,,true\n"
	tests := map[string]string{
		"Plain":        plain,
		"Reordered":    "final_sale,item,delivered_at,user,order_id\nfalse,Kettle,2026-11-20,u1,C1\ntrue,Toaster,,u2,C2\n",
		"ExtraColumns": "note,order_id,total,user,item,delivered_at,final_sale,x\nn,C1,1.00,u1,Kettle,2026-11-20,false,\n,C2,2.00,u2,Toaster,,true,y\n",
		"Capitalised":  "Order ID,User,Item,Delivered At,Final Sale\nC1,u1,Kettle,2026-11-20,false\nC2,u2,Toaster,,TRUE\n",
		"Aliases":      "Name,Email,Lineitem name,Fulfilled at,Final sale,Id\nC1,u1,Kettle,2026-11-20,no,1\nC2,u2,Toaster,,yes,2\n",
		"Semicolons":   "order_id;user;item;delivered_at;final_sale\nC1;u1;Kettle;2026-11-20;false\nC2;u2;Toaster;;true\n",
		"Tabs":         "order_id\tuser\titem\tdelivered_at\tfinal_sale\r\nC1\tu1\tKettle\t2026-11-20\tfalse\r\nC2\tu2\tToaster\t\ttrue\r\n",
		"UTF8BOM":      "\ufeff" + plain,
		"UTF16LEBOM":   encodeUTF16(plain, false, true),
		"UTF16BEBOM":   encodeUTF16(plain, true, true),
		"UTF16LE":      encodeUTF16(plain, false, false),
		"UTF16BE":      encodeUTF16(plain, true, false),
		"QuotedComma":  "order_id,user,item,delivered_at,final_sale\nC1,u1,\"Kettle\",2026-11-20,false\n\"C2\",u2,Toaster,,true\n",
	}
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	want := []Order{{ID: "C1", User: "u1", Item: "Kettle", DeliveredAt: &day}, {ID: "C2", User: "u2", Item: "Toaster", FinalSale: true}}
	for name, file := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parsed(t, file, ParseOptions{Location: time.UTC})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || !sameOrder(got[0], want[0]) || !sameOrder(got[1], want[1]) {
				t.Fatalf("orders %+v, want %+v", got, want)
			}
		})
	}
}

func TestParseOrdersHeaderError(t *testing.T) {
	t.Parallel()
	_, err := ParseOrders(context.Background(), strings.NewReader("order;customer;item;delivered\nC1;u;x;\n"), ParseOptions{Operator: true})
	var he *HeaderError
	if !errors.As(err, &he) {
		t.Fatalf("err = %v, want a *HeaderError", err)
	}
	if want := "missing column final_sale; found order, customer, item, delivered; delimiter looks like ';'"; !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %q, want it to hold %q", err, want)
	}
}

func TestParseDeliveryTime(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v.UTC() }
	tests := []struct {
		in      string
		loc     *time.Location
		want    time.Time
		wantErr string
	}{
		{in: "2026-11-20T14:03:00Z", want: at("2026-11-20T14:03:00Z")},
		{in: "2026-11-20T14:03:00.5+01:00", want: at("2026-11-20T13:03:00Z").Add(500 * time.Millisecond)},
		{in: "2026-11-20 14:03:00 +0100", want: at("2026-11-20T13:03:00Z")},
		{in: "2026-11-20 14:03:00 -05:00", want: at("2026-11-20T19:03:00Z")},
		{in: "2026-11-20", wantErr: "has no time zone"},
		{in: "2026-11-20", loc: time.UTC, want: at("2026-11-20T00:00:00Z")},
		{in: "2026-11-20", loc: berlin, want: at("2026-11-19T23:00:00Z")},
		{in: "2026-11-20T14:03:00", wantErr: "has no time zone"},
		{in: "2026-11-20 14:03:00", wantErr: "has no time zone"},
		{in: "2026-11-20 14:03", wantErr: "has no time zone"},
		{in: "2026-11-20T14:03:00", loc: berlin, want: at("2026-11-20T13:03:00Z")},
		{in: "2026-07-01 14:03:00", loc: berlin, want: at("2026-07-01T12:03:00Z")},
		{in: "yesterday", wantErr: "is not a date"},
		{in: "2026-13-01", wantErr: "is not a date"},
		{in: "20/11/2026", wantErr: "is not a date"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDeliveryTime(tt.in, tt.loc)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Fatalf("%s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// a line-item export's rows of one order merge; rows that
// disagree, or that come back after other orders, are refused by line.
func TestParseOrdersLineItems(t *testing.T) {
	t.Parallel()
	const h = "order_id,user,item,delivered_at,final_sale\n"
	t.Run("Merge", func(t *testing.T) {
		got, err := parsed(t, h+"C1,u,Shoes,2026-11-20,false\nC1,u,Socks,2026-11-20,false\nC1,u,Shoes,2026-11-20,false\nC2,u,Mug,,false\n", ParseOptions{Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Item != "Shoes; Socks" || got[1].Item != "Mug" {
			t.Fatalf("orders %+v, want C1 Shoes; Socks and C2", got)
		}
	})
	t.Run("ManyItemsAreCapped", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(h)
		for i := range 40 {
			b.WriteString("C1,u,Item number " + string(rune('A'+i)) + ",,false\n")
		}
		got, err := parsed(t, b.String(), ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got[0].Item) > MaxItemBytes || !strings.HasSuffix(got[0].Item, " more)") {
			t.Fatalf("item %q (%d bytes), want at most %d ending in (+N more)", got[0].Item, len(got[0].Item), MaxItemBytes)
		}
	})
	t.Run("Disagree", func(t *testing.T) {
		_, err := parsed(t, h+"C1,u,Shoes,2026-11-20,false\nC1,u,Socks,,false\nC1,v,Hat,2026-11-20,false\nC1,u,Cap,2026-11-20,true\n", ParseOptions{Location: time.UTC})
		for _, want := range []string{"line 3: order C1: delivered_at empty (not delivered) here, 2026-11-20T00:00:00Z on line 2", "line 4: order C1: user \"v\" here, \"u\" on line 2", "line 5: order C1: final_sale true here, false on line 2"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want it to hold %q", err, want)
			}
		}
	})
	t.Run("ComesBack", func(t *testing.T) {
		_, err := parsed(t, h+"C1,u,Shoes,,false\nC2,u,Mug,,false\nC1,u,Socks,,false\n", ParseOptions{})
		if err == nil || !strings.Contains(err.Error(), "line 4: order C1 is also on line 2; the rows of one order must follow each other") {
			t.Fatalf("err = %v, want line 4 naming line 2", err)
		}
	})
}

// zeros is an endless reader of zero bytes, as /dev/zero.
type zeros struct{ read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

// endless, binary, invalid and empty input is refused at
// once, naming the line, after reading a bounded amount.
func TestParseOrdersHostile(t *testing.T) {
	t.Parallel()
	t.Run("EndlessZeros", func(t *testing.T) {
		z := &zeros{}
		_, err := ParseOrders(context.Background(), z, ParseOptions{Operator: true})
		if err == nil || !strings.Contains(err.Error(), "line 1 is longer than") {
			t.Fatalf("err = %v, want line 1 too long", err)
		}
		if z.read > 4*MaxLineBytes {
			t.Fatalf("read %d bytes of an endless input, want about %d", z.read, MaxLineBytes)
		}
	})
	const h = "order_id,user,item,delivered_at,final_sale\n"
	for name, tc := range map[string]struct{ file, want string }{
		"InvalidUTF8":      {h + "C1,u,Caf\xe9,,false\n", "line 2: \"Caf\\xe9\" is not valid UTF-8"},
		"UnpairedUTF16":    {encodeUTF16(h, false, true) + "C\x00\x01\xd8,\x00u\x00,\x00x\x00,\x00,\x00f\x00a\x00l\x00s\x00e\x00\n\x00", "line 2: "},
		"HeaderOnly":       {h, "no orders in the orders file"},
		"Empty":            {"", "no header"},
		"ItemTooLong":      {h + "C1,u," + strings.Repeat("x", MaxItemBytes+1) + ",,false\n", "line 2: item is 201 bytes"},
		"UserWithControl":  {h + "C1,u\x1bv,x,,false\n", "line 2: user"},
		"BothDeliveries":   {"order_id,user,item,delivered_at,delivered_days_ago,final_sale\nC1,u,x,,1,false\n", "keep one"},
		"FieldCount":       {h + "C1,u,x\n", "line 2: 3 fields, the header has 5"},
		"BadFinalSale":     {h + "C1,u,x,,perhaps\n", "line 2: final_sale \"perhaps\""},
		"EmptyOrderID":     {h + ",u,x,,false\n", "line 2: order id must not be empty"},
		"ManyBadLinesCapd": {h + strings.Repeat("C1,u,x,,perhaps\n", 25), "(and 15 more)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseOrders(context.Background(), strings.NewReader(tc.file), ParseOptions{Operator: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to hold %q", err, tc.want)
			}
		})
	}
}

// onceReader can be read once, as a pipe: ParseOrders keeps a copy for
// the second reading.
type onceReader struct{ r io.Reader }

func (o onceReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// In the store: an upsert with written rules.
func TestImportOrdersUpsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const h = "order_id,user,item,delivered_at,final_sale\n"
	imp := func(s *Store, file string, opts ParseOptions, dry bool) (ImportResult, error) {
		f, err := ParseOrders(ctx, onceReader{strings.NewReader(file)}, opts)
		if err != nil {
			return ImportResult{}, err
		}
		defer f.Close()
		return s.ImportOrdersFile(ctx, f, ImportOptions{DryRun: dry})
	}
	demo := ParseOptions{User: "demo-user"}
	t.Run("DayOneDayTwo", func(t *testing.T) {
		s, _ := newSeeded(t)
		if _, err := imp(s, h+"C50,demo-user,Kettle,,false\n", demo, false); err != nil {
			t.Fatal(err)
		}
		res, err := imp(s, h+"C50,demo-user,Kettle,2025-03-09T00:00:00Z,false\nC51,demo-user,Mug,2025-03-09T00:00:00Z,false\n", demo, false)
		if err != nil || res.Added != 1 || res.Updated != 1 || res.Unchanged != 0 {
			t.Fatalf("day 2: %+v, %v; want 1 added, 1 updated", res, err)
		}
		o, err := s.Order(ctx, "C50", "demo-user")
		if err != nil || o.DeliveredAt == nil {
			t.Fatalf("C50 = %+v, %v; want delivered", o, err)
		}
	})
	t.Run("OwnerChangeRefusedWhole", func(t *testing.T) {
		s, path := newSeeded(t)
		if _, err := imp(s, h+"C60,demo-user,Kettle,,false\n", ParseOptions{Operator: true}, false); err != nil {
			t.Fatal(err)
		}
		s.Close()
		before := testkit.FileSHA256(t, path)
		s = mustOpen(t, path, Options{})
		_, err := imp(s, h+"C61,x,Cup,,false\nC60,other-user,Kettle,,false\n", ParseOptions{Operator: true}, false)
		var oe *OwnerError
		if !errors.As(err, &oe) || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "line 3: order C60") {
			t.Fatalf("err = %v, want an *OwnerError naming line 3", err)
		}
		s.Close()
		if testkit.FileSHA256(t, path) != before {
			t.Fatal("a refused import changed the business file")
		}
	})
	t.Run("DryRunChangesNoByte", func(t *testing.T) {
		s, path := newSeeded(t)
		s.Close()
		before := testkit.FileSHA256(t, path)
		s = mustOpen(t, path, Options{})
		res, err := imp(s, h+"C70,demo-user,Kettle,,false\nA3002,demo-user,Scarf,,false\n", demo, true)
		if err != nil || !res.DryRun || res.Added != 1 || res.Updated != 1 || res.TeachingReplaced != 1 {
			t.Fatalf("dry run %+v, %v", res, err)
		}
		s.Close()
		if testkit.FileSHA256(t, path) != before {
			t.Fatal("a dry run changed the business file")
		}
	})
	t.Run("TeachingOrderInUseKeepsItsOwner", func(t *testing.T) {
		s, _ := newSeeded(t)
		_, err := imp(s, h+"A3009,someone,Speaker,,false\n", ParseOptions{Operator: true}, false)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "a teaching order that a task uses") {
			t.Fatalf("err = %v, want a conflict: A3009's seeded application uses it", err)
		}
		res, err := imp(s, h+"A3001,someone,Blender,,false\n", ParseOptions{Operator: true}, false)
		if err != nil || res.TeachingReplaced != 1 {
			t.Fatalf("A3001: %+v, %v; want replaced", res, err)
		}
	})
	t.Run("OtherUsersRowsNeedOperator", func(t *testing.T) {
		_, err := ParseOrders(ctx, strings.NewReader(h+"C80,demo-user,Pen,,false\nC81,other-user,Pen,,false\n"), demo)
		if err == nil || !strings.Contains(err.Error(), "line 3: order C81 is of user \"other-user\"") || strings.Contains(err.Error(), "line 2") {
			t.Fatalf("err = %v, want line 3 only", err)
		}
	})
	t.Run("CancelledWritesNothing", func(t *testing.T) {
		s, _ := newSeeded(t)
		f, err := ParseOrders(ctx, strings.NewReader(h+"C90,demo-user,Pen,,false\n"), demo)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.ImportOrdersFile(cctx, f, ImportOptions{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if _, err := s.Order(ctx, "C90", "demo-user"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("C90 after a cancelled import: %v, want not found", err)
		}
	})
}

// The import writes the orders ParseOrders checked, read from its spool:
// a file changed or removed after the check changes nothing of what is
// imported (the CSV is read once).
func TestImportOrdersWritesWhatWasChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const h = "order_id,user,item,delivered_at,final_sale\n"
	tests := map[string]func(t *testing.T, path string){
		"Rewritten": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(h+"C1,demo-user,Changed,,true\nC3,demo-user,New,,false\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"Emptied": func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := newSeeded(t)
			path := filepath.Join(t.TempDir(), "orders.csv")
			if err := os.WriteFile(path, []byte(h+"C1,demo-user,Kettle,2025-03-09T10:00:00Z,false\nC2,demo-user,Mug,2025-03-09T10:00:00Z,true\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			in, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			f, err := ParseOrders(ctx, in, ParseOptions{User: "demo-user"})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			change(t, path)
			res, err := s.ImportOrdersFile(ctx, f, ImportOptions{})
			if err != nil || res.Added != 2 || res.Rows != 2 {
				t.Fatalf("import: %+v, %v; want the 2 orders checked added", res, err)
			}
			at := time.Date(2025, 3, 9, 10, 0, 0, 0, time.UTC)
			for _, want := range []Order{{ID: "C1", User: "demo-user", Item: "Kettle", DeliveredAt: &at}, {ID: "C2", User: "demo-user", Item: "Mug", DeliveredAt: &at, FinalSale: true}} {
				if o, err := s.Order(ctx, want.ID, "demo-user"); err != nil || !sameOrder(o, want) {
					t.Fatalf("%s = %+v, %v; want %+v", want.ID, o, err, want)
				}
			}
			if _, err := s.Order(ctx, "C3", "demo-user"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("C3: %v, want not found (never checked)", err)
			}
		})
	}
}

// TestEndedBy: an import's error once its context ended is the context's
// error (exit 130/143 for a signal), with the statement's error kept in
// the text; otherwise it is left as it is.
func TestEndedBy(t *testing.T) {
	t.Parallel()
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	closed := errors.New("sql: statement is closed")
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		canceled bool
	}{
		{"nil", ended, nil, false},
		{"live context", live, closed, false},
		{"ended context", ended, closed, true},
		{"ended, already the context's", ended, fmt.Errorf("write: %w", context.Canceled), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := endedBy(tc.ctx, tc.err)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("endedBy(nil) = %v", got)
				}
				return
			}
			if errors.Is(got, context.Canceled) != tc.canceled {
				t.Fatalf("endedBy = %v: context.Canceled %v, want %v", got, !tc.canceled, tc.canceled)
			}
			if !strings.Contains(got.Error(), strings.TrimPrefix(tc.err.Error(), "write: ")) {
				t.Fatalf("endedBy = %q, lost %q", got, tc.err)
			}
		})
	}
}
