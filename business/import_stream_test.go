package business

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// newClosedSeeded makes a seeded business file, closed, as the first
// import's data dir made aside holds it, and returns its path.
func newClosedSeeded(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "business.sqlite")
	s, err := Open(context.Background(), path, Options{Create: true, Seed: seedCSV(t), Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// shopRows returns a header and n rows of demo-user's orders S00000… .
func shopRows(n int, extra ...string) string {
	var b strings.Builder
	b.WriteString("order_id,user,item,delivered_at,final_sale\n")
	for i := range n {
		fmt.Fprintf(&b, "S%05d,demo-user,Item %d,2025-03-01T10:00:00Z,false\n", i, i)
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	return b.String()
}

// ImportOrdersNew reports and stores what ParseOrders and ImportOrdersFile
// do with the same file on the same store, and refuses a file whose
// fault comes after thousands of orders were written with ParseOrders'
// error, committing nothing.
func TestImportOrdersNew(t *testing.T) {
	ctx := context.Background()
	opts := ParseOptions{User: "demo-user", Now: t0}
	tests := []struct {
		name string
		file string
		want string // the error's text; "" for a good file
	}{
		{"Good", shopRows(3000, "A3001,demo-user,Mug,2025-03-01T10:00:00Z,false"), ""},
		{"OrderComesBack", shopRows(3000, "S00010,demo-user,Item 10,2025-03-01T10:00:00Z,false"), "order S00010 is also on line 12"},
		{"BadLastRow", shopRows(3000, "S99999,demo-user,Item,tomorrow,false"), "line 3002"},
		{"OtherUser", shopRows(3000, "S99999,other-user,Item,2025-03-01T10:00:00Z,false"), "line 3002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := newClosedSeeded(t)
			res, f, err := ImportOrdersNew(ctx, path, t0, strings.NewReader(tt.file), opts)
			if f != nil {
				defer f.Close()
			}
			ref := mustOpen(t, filepath.Join(t.TempDir(), "business.sqlite"), Options{Create: true, Seed: seedCSV(t), Now: fixedClock(t0)})
			pf, perr := ParseOrders(ctx, strings.NewReader(tt.file), opts)
			if tt.want != "" {
				var ie *ImportError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) || f != nil {
					t.Fatalf("ImportOrdersNew: %v (file %v), want an *ImportError naming %q and no file", err, f != nil, tt.want)
				}
				if perr == nil || perr.Error() != err.Error() {
					t.Fatalf("ImportOrdersNew: %v; ParseOrders: %v; want the same", err, perr)
				}
				s := mustOpen(t, path, Options{})
				if n := count(t, s, `SELECT count(*) FROM orders WHERE order_id LIKE 'S%'`); n != 0 {
					t.Fatalf("%d orders committed, want none", n)
				}
				return
			}
			if err != nil || f == nil {
				t.Fatalf("ImportOrdersNew: %v (file %v)", err, f != nil)
			}
			defer pf.Close()
			want, err := ref.ImportOrdersFile(ctx, pf, ImportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res, want) {
				t.Fatalf("report %+v\nwant %+v", res, want)
			}
			s := mustOpen(t, path, Options{})
			q := `SELECT group_concat(user || order_id || item || coalesce(delivered_at, '') || final_sale || teaching || shop, ';') FROM (SELECT * FROM orders ORDER BY user, order_id)`
			var got, exp string
			if err := s.h.Q().QueryRowContext(ctx, q).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if err := ref.h.Q().QueryRowContext(ctx, q).Scan(&exp); err != nil {
				t.Fatal(err)
			}
			if got != exp {
				t.Fatalf("stored %.300s…\nwant %.300s…", got, exp)
			}
		})
	}
}

// ImportOrdersNew ended by ctx commits nothing and returns ctx's error.
func TestImportOrdersNewCancelled(t *testing.T) {
	path := newClosedSeeded(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, f, err := ImportOrdersNew(ctx, path, t0, strings.NewReader(shopRows(2000)), ParseOptions{User: "demo-user", Now: t0})
	if f != nil {
		f.Close()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	s := mustOpen(t, path, Options{})
	if n := count(t, s, `SELECT count(*) FROM orders WHERE order_id LIKE 'S%'`); n != 0 {
		t.Fatalf("%d orders committed, want none", n)
	}
}
