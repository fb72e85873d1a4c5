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
	t.Parallel()
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
	t.Parallel()
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

// comeBack returns an orders file of distinct orders C000000… and then
// the first back of them again, each coming back after other orders.
func comeBack(distinct, back int) string {
	var b strings.Builder
	b.WriteString("order_id,user,item,delivered_at,final_sale\n")
	for _, n := range []int{distinct, back} {
		for i := range n {
			fmt.Fprintf(&b, "C%06d,demo-user,Item,2025-03-01T10:00:00Z,false\n", i)
		}
	}
	return b.String()
}

// collidingHashes is a hashSet whose hash gives each pair of ids of
// collide the same small value (sorted before every real hash), standing
// for the 32-bit hashes that ids share by chance; the rest as idHashes.
type collidingHashes struct {
	real    *idHashes[uint64]
	collide map[string]uint64
	all     []uint64
}

func (c *collidingHashes) hash(s string) uint64 {
	if v, ok := c.collide[s]; ok {
		return v
	}
	return c.real.hash(s) | 1<<63
}
func (c *collidingHashes) add(s string)       { c.all = append(c.all, c.hash(s)) }
func (c *collidingHashes) chanceRepeats() int { return 4096 }
func (c *collidingHashes) release()           { c.all = nil }
func (c *collidingHashes) repeats(max int) (map[uint64]bool, bool) {
	h := newIDHashes[uint64]()
	h.chunks = [][]uint64{c.all}
	return h.repeats(max)
}

// Ids that share a hash by chance never take the place of ids that do
// come back: a file with 49,990 orders that come back after others
// (under maxScattered) is refused with the same lines and the same count
// whether its hashes collide or not (before: each chance collision took
// one of maxScattered's places, and the count fell short by as many).
func TestScatterCheckChanceCollisions(t *testing.T) {
	t.Parallel()
	const distinct, back = 60_000, 49_990
	file := comeBack(distinct, back)
	opts := ParseOptions{User: "demo-user", Now: t0}
	_, want := ParseOrders(context.Background(), strings.NewReader(file), opts)
	if want == nil {
		t.Fatal("ParseOrders took a file whose orders come back")
	}
	c := &collidingHashes{real: newIDHashes[uint64](), collide: map[string]uint64{}}
	for i := range 600 { // 300 pairs of ids that do not come back
		c.collide[fmt.Sprintf("C%06d", distinct-1-i)] = uint64(i/2 + 1)
	}
	f, err := newOrdersFile(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := f.check(context.Background(), strings.NewReader(file), c, nil)
	if got == nil || got.Error() != want.Error() {
		t.Fatalf("with chance collisions:\n%.300v\nwant:\n%.300v", got, want)
	}
}

// readCounter counts the reads of a reader.
type readCounter struct {
	r     *strings.Reader
	reads int
}

func (c *readCounter) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// ImportOrdersNew that cannot begin its transaction (the file held open
// elsewhere here; a full disk in the field) reads nothing of the orders
// file and says so (ErrImportNotStarted, no file), so that the caller can
// still check it and tell a bad file from a failing disk.
func TestImportOrdersNewNotStarted(t *testing.T) {
	t.Parallel()
	path := newClosedSeeded(t)
	other := mustOpen(t, path, Options{}) // keeps the file open: it stays in WAL
	_ = other
	in := &readCounter{r: strings.NewReader(shopRows(10, "bad,demo-user,x,tomorrow,false"))}
	_, f, err := ImportOrdersNew(context.Background(), path, t0, in, ParseOptions{User: "demo-user", Now: t0})
	if !errors.Is(err, ErrImportNotStarted) || f != nil || in.reads != 0 {
		t.Fatalf("err %v, file %v, %d reads; want ErrImportNotStarted, no file, nothing read", err, f != nil, in.reads)
	}
}

// Past maxScattered orders that come back, a check with hashes that
// collide by chance counts as many bad lines as one without (before: up
// to chanceRepeats more ids were checked, and the count was larger).
func TestScatterCheckOverflowCount(t *testing.T) {
	t.Parallel()
	const distinct, back = 60_000, 50_500
	file := comeBack(distinct, back)
	opts := ParseOptions{User: "demo-user", Now: t0}
	_, want := ParseOrders(context.Background(), strings.NewReader(file), opts)
	c := &collidingHashes{real: newIDHashes[uint64](), collide: map[string]uint64{}}
	f, err := newOrdersFile(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := f.check(context.Background(), strings.NewReader(file), c, nil)
	var wi, gi *ImportError
	if !errors.As(want, &wi) || !errors.As(got, &gi) || gi.More != wi.More || len(gi.Lines) != len(wi.Lines) {
		t.Fatalf("with chance repeats taken: %v\nwithout: %v; want as many lines", got, want)
	}
}

// Past maxScattered orders that come back, the refusal says so after the
// count, however many lines it names (before: the word was an eleventh
// line, never shown, and the count looked like the whole story).
func TestScatterCheckOverflowSaid(t *testing.T) {
	t.Parallel()
	const distinct, back = 60_000, 50_500
	file := comeBack(distinct, back)
	_, err := ParseOrders(context.Background(), strings.NewReader(file), ParseOptions{User: "demo-user", Now: t0})
	var ie *ImportError
	if !errors.As(err, &ie) {
		t.Fatalf("err %v, want an *ImportError", err)
	}
	if !strings.HasSuffix(err.Error(), "more than 50000 order ids come back after other orders: the lines counted are those of 50000 of them; sort the file by order id") || ie.More != 50_000-maxBadLines {
		t.Fatalf("err %.200v … %d more; want the count of 50,000 ids' lines and the note after it", err, ie.More)
	}
}
