package main

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
	// The owner never changes: exit 3, the line named, nothing written.
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
		strings.Repeat("C", 300)+",demo-user,Pen,,false", "C\xff5,demo-user,Pen,,false", "C6,demo-user,"+strings.Repeat("i", 300)+",,false")
	_, errOut, code = run(t, dir, "orders", "import", bad)
	for _, want := range []string{"line 2:", "line 4:", "line 5:", "line 6:", "line 7:", "line 8: item is 300 bytes"} {
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
