package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of this file are the cases of issue 17 (shop data in), each
// through the built binary in separate processes.

// writeShop writes an orders CSV (the header, then rows) and returns its path.
func writeShop(tb testing.TB, rows ...string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "shop.csv")
	content := "order_id,user,item,delivered_at,final_sale\n" + strings.Join(rows, "\n") + "\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Case 1: day 1 exports C50 undelivered, day 2 C50 delivered and a new C51.
// The second import updates C50, which a return can then be started for,
// and adds C51.
func TestOrdersDayTwoUpdate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	yesterday := time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
	mustRun(t, dir, "orders", "import", writeShop(t, "C50,demo-user,Kettle,,false"))
	_, _, code := run(t, dir, "start", "too-early", "C50", "--reason", "r", "--exit-status")
	if code != 6 {
		t.Fatalf("start on undelivered C50: exit %d, want 6 (failed: not_delivered)", code)
	}
	day2 := writeShop(t, "C50,demo-user,Kettle,"+yesterday+",false", "C51,demo-user,Toaster,"+yesterday+",false")
	before := sums(t, dir, "business.sqlite")
	rep := mustRun(t, dir, "orders", "import", day2, "--dry-run")
	if rep["added"] != 1.0 || rep["updated"] != 1.0 || rep["dry_run"] != true {
		t.Fatalf("dry run: %v, want 1 added, 1 updated", rep)
	}
	sameSums(t, dir, before, "a dry run")
	rep = mustRun(t, dir, "orders", "import", day2)
	if rep["added"] != 1.0 || rep["updated"] != 1.0 || rep["unchanged"] != 0.0 || rep["refused"] != 0.0 {
		t.Fatalf("day 2: %v, want 1 added, 1 updated", rep)
	}
	v := mustRun(t, dir, "start", "in-time", "C50", "--reason", "r")
	if v["status"] != "waiting" {
		t.Fatalf("start on delivered C50: %v, want waiting", v["status"])
	}
	// The owner of a shop's order never changes: exit 3, the line named,
	// nothing written. (C51 is demo-user's own order until the shop's
	// import makes it the shop's.)
	mustRun(t, dir, "orders", "import", "--operator", day2)
	before = sums(t, dir, "business.sqlite")
	_, errOut, code := run(t, dir, "orders", "import", "--operator", writeShop(t, "C52,demo-user,Mug,,false", "C51,other-user,Toaster,,false"))
	if code != 3 || !strings.Contains(errOut, "line 3: order C51") {
		t.Fatalf("owner change: exit %d, %q; want 3 naming line 3", code, errOut)
	}
	sameSums(t, dir, before, "a refused import")
	verifyClean(t, dir)
}

// Case 3: the teaching orders. A real order with a teaching order's id
// replaces it; orders list on a missing data dir is exit 4 and makes
// nothing; --teaching-orders=false makes a data dir without them.
func TestOrdersTeaching(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "typo")
	if _, errOut, code := run(t, missing, "orders", "list"); code != 4 || !strings.Contains(errOut, "not found") {
		t.Fatalf("orders list on a missing dir: exit %d, %q; want 4", code, errOut)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("orders list made %s (%v)", missing, err)
	}

	dir := filepath.Join(root, "data")
	rep := mustRun(t, dir, "orders", "import", "--operator", writeShop(t, "A3001,customer-9,Blender,2024-01-01T00:00:00Z,false"))
	if rep["teaching_replaced"] != 1.0 {
		t.Fatalf("import of A3001: %v, want the teaching order replaced", rep)
	}
	if got := query(t, dir, "business.sqlite", `SELECT user || ' ' || item || ' ' || teaching FROM orders WHERE order_id = 'A3001'`); got != "customer-9 Blender 0" {
		t.Fatalf("A3001 = %q, want the shop's order", got)
	}

	bare := filepath.Join(root, "bare")
	mustRun(t, bare, "--teaching-orders=false", "orders", "import", writeShop(t, "Z1,demo-user,Pen,,false"))
	if n := query(t, bare, "business.sqlite", `SELECT count(*) FROM orders`); n != "1" {
		t.Fatalf("--teaching-orders=false: %s orders, want only Z1", n)
	}
}

// Case 4: /dev/zero ends at once with exit 2 (a line over the limit), not
// by filling memory; ids with control characters are refused by line.
func TestOrdersHostileInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	start := time.Now()
	_, errOut, code := run(t, dir, "orders", "import", "/dev/zero")
	if code != 2 || !strings.Contains(errOut, "line 1 is longer than") {
		t.Fatalf("/dev/zero: exit %d, %q; want 2, a line too long", code, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("/dev/zero took %s", d)
	}
	bad := writeShop(t, "\"C\n1\",demo-user,Pen,,false", "C\x1b2,demo-user,Pen,,false", "C\u200b3,demo-user,Pen,,false",
		strings.Repeat("C", 300)+",demo-user,Pen,,false", "C\xff5,demo-user,Pen,,false", "C6,demo-user,"+strings.Repeat("i", 300)+",,false",
		"C\u31647,demo-user,Pen,,false", "C\u28008,demo-user,Pen,,false")
	_, errOut, code = run(t, dir, "orders", "import", bad)
	for _, want := range []string{"line 2:", "line 4:", "line 5:", "line 6:", "line 7:", "line 8: item is 300 bytes", "line 9:", "line 10:"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
	if code != 2 {
		t.Fatalf("bad ids: exit %d, want 2", code)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("refused files made the data dir (%v)", err)
	}
}

// Case 5: --user other-user may not import demo-user's rows, and what it
// is told is the same whether such an order exists (A3001) or not.
func TestOrdersOtherUsersRows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "orders", "import", writeShop(t, "Z0,demo-user,Pen,,false"))
	before := sums(t, dir, "business.sqlite")
	_, exists, code1 := run(t, dir, "--user", "other-user", "orders", "import", writeShop(t, "A3001,demo-user,Trail running shoes (size 42),,false"))
	_, unknown, code2 := run(t, dir, "--user", "other-user", "orders", "import", writeShop(t, "Q9999,demo-user,Trail running shoes (size 42),,false"))
	if code1 != 2 || code2 != 2 {
		t.Fatalf("exit %d and %d, want 2 for both", code1, code2)
	}
	if strings.ReplaceAll(exists, "A3001", "ID") != strings.ReplaceAll(unknown, "Q9999", "ID") {
		t.Fatalf("the refusals differ:\n%s%s", exists, unknown)
	}
	if !strings.Contains(exists, "line 2:") || !strings.Contains(exists, "--operator") {
		t.Fatalf("stderr %q: want line 2 named and --operator", exists)
	}
	sameSums(t, dir, before, "a refused import")
}

// Case 4: SIGINT and SIGTERM during a big import end it at once with
// nothing written (one transaction, rolled back).
func TestOrdersImportSignals(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.csv")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "order_id,user,item,delivered_at,final_sale")
	for i := range 400_000 {
		fmt.Fprintf(w, "B%07d,demo-user,Bench item %d,2024-05-01T00:00:00Z,false\n", i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			mustRun(t, dir, "orders", "import", writeShop(t, "Z0,demo-user,Pen,,false"))
			before := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders`)
			proc, _, errb := background(t, dir, "orders", "import", big)
			// The write transaction has begun once the -wal grows: pages
			// of the uncommitted rows spill into it.
			eventually(t, "the import writes", func() bool {
				fi, err := os.Stat(filepath.Join(dir, "business.sqlite-wal"))
				return err == nil && fi.Size() > 1<<20
			})
			sent := time.Now()
			if err := proc.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			code := wait(t, proc)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errb.String())
			}
			if d := time.Since(sent); d > 5*time.Second {
				t.Errorf("the import took %s to end after %s", d, tc.sig)
			}
			if after := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders`); after != before {
				t.Fatalf("%s orders after the interrupted import, want %s", after, before)
			}
			verifyClean(t, dir)
		})
	}
}

// Case 5 as the tester found it: an import without --operator may not
// tell whether another user holds an order id, nor take one. other-user's
// rows of ids that demo-user holds (an order of the shop's, a teaching
// order) and of an unknown id are answered alike, dry run and real; each
// becomes other-user's own order; demo-user's orders keep every byte and
// demo-user can still start a return for A3001; the shop's later import of
// C63 for demo-user is not refused.
func TestOrdersNoOracleForOtherUsers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	delivered := time.Now().UTC().Add(-72 * time.Hour).Format(time.RFC3339)
	shop := writeShop(t, "C63,demo-user,Mug,"+delivered+",false")
	mustRun(t, dir, "orders", "import", "--operator", shop)
	demoBefore := query(t, dir, "business.sqlite", `SELECT group_concat(order_id || item || teaching || coalesce(delivered_at, ''), ';') FROM orders WHERE user = 'demo-user'`)
	answer := func(id string, dry bool) string {
		args := []string{"--user", "other-user", "--output", "json", "orders", "import", writeShop(t, id+",other-user,Claimed,"+delivered+",false")}
		if dry {
			args = append(args, "--dry-run")
		}
		out, errOut, code := run(t, dir, args...)
		return fmt.Sprintf("exit %d\n%s%s", code, strings.ReplaceAll(out, id, "ID"), strings.ReplaceAll(errOut, id, "ID"))
	}
	for _, dry := range []bool{true, false} {
		unknown := answer("C64", dry)
		for _, id := range []string{"C63", "A3001"} {
			if got := answer(id, dry); got != unknown {
				t.Fatalf("dry run %v: %s answered\n%s\nan unknown id\n%s", dry, id, got, unknown)
			}
		}
		if !strings.HasPrefix(unknown, "exit 0\n") || !strings.Contains(unknown, `"added": 1`) {
			t.Fatalf("dry run %v: %s; want exit 0, one added", dry, unknown)
		}
	}
	if got := query(t, dir, "business.sqlite", `SELECT group_concat(order_id || item || teaching || coalesce(delivered_at, ''), ';') FROM orders WHERE user = 'demo-user'`); got != demoBefore {
		t.Fatalf("demo-user's orders changed:\n%s\nwas\n%s", got, demoBefore)
	}
	if got := query(t, dir, "business.sqlite", `SELECT group_concat(order_id || ':' || item || ':' || shop, ';') FROM (SELECT * FROM orders WHERE user = 'other-user' AND item = 'Claimed' ORDER BY order_id)`); got != "A3001:Claimed:0;C63:Claimed:0;C64:Claimed:0" {
		t.Fatalf("other-user's own orders: %q", got)
	}
	if v := mustRun(t, dir, "start", "t2", "A3001", "--reason", "size"); v["status"] != "waiting" {
		t.Fatalf("demo-user's start t2 A3001: %v, want waiting", v["status"])
	}
	rep := mustRun(t, dir, "orders", "import", "--operator", shop)
	if rep["unchanged"] != 1.0 || rep["refused"] != 0.0 {
		t.Fatalf("the shop's import of C63 again: %v, want unchanged", rep)
	}
	verifyClean(t, dir)
}

// The import report says what orders list says about returnability (an
// approved order has an open application); delivery times out of range
// and an odd-length UTF-16 file are refused by line, exit 2, nothing made.
func TestOrdersImportAgreesWithList(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	// A real order: a teaching order that a task uses is not replaced.
	mustRun(t, dir, "orders", "import", writeShop(t, "R3004,demo-user,Headphones,"+time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)+",false"))
	v := mustRun(t, dir, "start", "t4", "R3004", "--reason", "size")
	if v["status"] != "waiting" {
		t.Fatalf("start t4 R3004: %v", v)
	}
	mustRun(t, dir, "resume", "t4", "--action", "approve")
	list := mustRun(t, dir, "orders", "list")
	var r3004 map[string]any
	for _, o := range list["orders"].([]any) {
		if m := o.(map[string]any); m["order_id"] == "R3004" {
			r3004 = m
		}
	}
	if r3004 == nil || r3004["not_returnable_because"] != "open_application" {
		t.Fatalf("orders list R3004: %v, want open_application", r3004)
	}
	file := writeShop(t, "R3004,demo-user,New headphones,"+r3004["delivered_at"].(string)+",false")
	rep := mustRun(t, dir, "orders", "import", "--dry-run", file)
	changes := rep["changes"].([]any)
	if len(changes) != 1 || changes[0].(map[string]any)["not_returnable_now"] != "open_application" {
		t.Fatalf("dry run report %v, want not_returnable_now open_application as orders list says", rep)
	}
	text, _, code := run(t, dir, "--output", "text", "orders", "import", "--dry-run", file)
	if code != 0 || !strings.Contains(text, "no: open_application") {
		t.Fatalf("text report (exit %d):\n%s\nwant no: open_application", code, text)
	}

	fresh := filepath.Join(t.TempDir(), "fresh")
	for _, tc := range []struct{ file, want string }{
		{writeShop(t, "Z1,demo-user,Mug,0001-01-01T00:00:00Z,false"), `line 2: delivered_at "0001-01-01T00:00:00Z" is before 2000-01-01`},
		{writeShop(t, "Z1,demo-user,Mug,2026-11-20,false"), `line 2: delivered_at "2026-11-20" has no time zone`},
		{oddUTF16(t), "UTF-16 file with an odd number of bytes"},
	} {
		_, errOut, code := run(t, fresh, "orders", "import", tc.file)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("exit %d, %q; want 2 and %q", code, errOut, tc.want)
		}
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("refused files made the data dir (%v)", err)
	}
	verifyClean(t, dir)
}

// oddUTF16 writes an orders file in UTF-16 LE with a BOM and one byte
// more.
func oddUTF16(tb testing.TB) string {
	tb.Helper()
	text := "order_id,user,item,delivered_at,final_sale\nZ2,demo-user,Mug,,false\n"
	b := []byte{0xFF, 0xFE}
	for _, r := range text {
		b = append(b, byte(r), 0)
	}
	b = append(b, 'x')
	path := filepath.Join(tb.TempDir(), "odd.csv")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
