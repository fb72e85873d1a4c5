package e2e

// orders import (docs/orders.md "Updates", "Who may import", "Teaching
// orders", "Report", "Dates"): a shop's exports in, each import one
// transaction that adds, updates or refuses by line.

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOrdersDayTwoUpdate: day 1 exports C50 undelivered, day 2 C50
// delivered and a new C51. The second import updates C50, which a return
// can then be started for, and adds C51; the owner of a shop's order
// never changes.
func TestOrdersDayTwoUpdate(t *testing.T) {
	t.Parallel()
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

// TestOrdersTeaching: a real order with a teaching order's id
// replaces it; orders list on a missing data dir is exit 4 and makes
// nothing; --teaching-orders=false makes a data dir without them.
func TestOrdersTeaching(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	missing := filepath.Join(root, "typo")
	if _, errOut, code := run(t, missing, "orders", "list"); code != 4 || !strings.Contains(errOut, "does not exist") {
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

// TestOrdersOtherUsersRows: --user other-user may not import demo-user's
// rows, and what it is told is the same whether such an order exists
// (A3001) or not.
func TestOrdersOtherUsersRows(t *testing.T) {
	t.Parallel()
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

// TestOrdersNoOracleForOtherUsers: an import without --operator may not
// tell whether another user holds an order id, nor take one. other-user's
// rows of ids that demo-user holds (an order of the shop's, a teaching
// order) and of an unknown id are answered alike, dry run and real; each
// becomes other-user's own order; demo-user's orders keep every byte and
// demo-user can still start a return for A3001; the shop's later import of
// C63 for demo-user is not refused.
func TestOrdersNoOracleForOtherUsers(t *testing.T) {
	t.Parallel()
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

// TestOrdersImportAgreesWithList: the import report says what orders list
// says about returnability (an approved order has an open application);
// delivery times out of range and an odd-length UTF-16 file are refused by
// line, exit 2, nothing made.
func TestOrdersImportAgreesWithList(t *testing.T) {
	t.Parallel()
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

// TestImportCommittedWhileAnotherWriterHoldsTheLock: an import whose
// transaction has committed reports its orders (exit 0) even when another
// writer takes business.sqlite's write lock right after that commit and
// holds it past the busy timeout: the import's durable sync after the
// commit does not wait for that lock.
func TestImportCommittedWhileAnotherWriterHoldsTheLock(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	file := writeShop(t, "L1,demo-user,Pen,,false", "L2,demo-user,Ink,,false")
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "orders", "import", file)
	c.Env = append(os.Environ(), "ASSISTANT_FAULT=import:after-commit@pause")
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	eventually(t, "the import stops after its commit", func() bool { return stopped(c.Process.Pid) })
	// Another writer (another import, a batch) takes the write lock now.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	code := exitOf(t, c.Wait())
	_ = tx.Rollback()
	if code != 0 {
		t.Fatalf("exit %d, want 0: the import was committed; stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), `"added": 2`) {
		t.Errorf("no report of the committed import on stdout:\n%s", out.String())
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders WHERE order_id IN ('L1', 'L2')`); got != "2" {
		t.Errorf("%s of the two orders stored, want both", got)
	}
}

// TestOwnImportReplacingATeachingOrderIsTheUsersOwn: a user's own import
// (no --operator) that replaces an unused teaching order stores the
// user's own order (shop 0), and says "replaced by your own", not "the
// shop's"; the shop's later import of that id for another customer is
// added (orders.md "Who may import": a user's own order does not hold an
// id against the shop).
func TestOwnImportReplacingATeachingOrderIsTheUsersOwn(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
	out, errOut, code := runText(t, dir, "orders", "import", writeShop(t, "A3001,demo-user,Own kettle,"+day+",false"))
	if code != 0 {
		t.Fatalf("own import: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "1 teaching orders replaced by your own.") || strings.Contains(out, "the shop's") {
		t.Errorf("own import report:\n%s\nwant \"replaced by your own\", not the shop's", out)
	}
	if got := query(t, dir, "business.sqlite", `SELECT shop FROM orders WHERE user = 'demo-user' AND order_id = 'A3001'`); got != "0" {
		t.Errorf("demo-user's A3001: shop %s, want 0 (the user's own)", got)
	}
	rep := mustRun(t, dir, "orders", "import", "--operator", writeShop(t, "A3001,zed,Shop kettle,"+day+",false"))
	if rep["added"] != 1.0 {
		t.Fatalf("the shop's A3001 of zed: %v, want added", rep)
	}
	out, _, _ = runText(t, dir, "orders", "import", "--operator", writeShop(t, "A3002,zed,Shop thing,"+day+",false"))
	if !strings.Contains(out, "1 teaching orders replaced by the shop's.") {
		t.Errorf("operator import report:\n%s\nwant \"replaced by the shop's\"", out)
	}
}

// TestImportRefusesATeachingOrderATaskUses: a real import of a teaching
// order that a task uses (the seeded application of A3009; a task in
// flight on A3002), of the same user, with or without --operator, is
// refused: exit 3, the line named, nothing written; the teaching order
// stays, and never stays open_application under the teaching
// application.
func TestImportRefusesATeachingOrderATaskUses(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
	makeDataDir(t, dir)
	mustRun(t, dir, "start", "t-a3002", "A3002", "--reason", "broken")
	for _, tc := range []struct {
		name string
		args []string
		row  string
	}{
		{"seeded application", nil, "A3009,demo-user,Real speaker," + day + ",false"},
		{"seeded application, operator", []string{"--operator"}, "A3009,demo-user,Real speaker," + day + ",false"},
		{"task in flight", nil, "A3002,demo-user,Real thing," + day + ",false"},
		{"task in flight, operator", []string{"--operator"}, "A3002,demo-user,Real thing," + day + ",false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sums(t, dir, "business.sqlite")
			args := append(append([]string{"orders", "import"}, tc.args...), writeShop(t, "B1,demo-user,Pen,,false", tc.row))
			_, errOut, code := run(t, dir, args...)
			id := tc.row[:5]
			if code != 3 || !strings.Contains(errOut, "line 3: order "+id+" is a teaching order that a task uses") {
				t.Fatalf("exit %d, stderr %q; want 3 naming line 3", code, errOut)
			}
			sameSums(t, dir, before, "a refused import")
			if got := query(t, dir, "business.sqlite", `SELECT teaching FROM orders WHERE user = 'demo-user' AND order_id = ?`, id); got != "1" {
				t.Errorf("%s: teaching %s, want the teaching order kept", id, got)
			}
		})
	}
}

// TestOwnImportKeepsTheShopsOrder: a customer's own import (no
// --operator) does not change the shop's order of theirs (one an
// --operator import wrote): the row is refused, exit 3, the line named,
// nothing written; the same order unchanged is fine.
func TestOwnImportKeepsTheShopsOrder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
	mustRun(t, dir, "orders", "import", "--operator", writeShop(t, "Z1,bob,Coat,"+day+",true"))
	before := sums(t, dir, "business.sqlite")
	_, errOut, code := run(t, dir, "--user", "bob", "orders", "import", writeShop(t, "Z1,bob,Coat,"+day+",false"))
	if code != 3 || !strings.Contains(errOut, "line 2: order Z1 is the shop's order") {
		t.Fatalf("exit %d, stderr %q; want 3 naming line 2", code, errOut)
	}
	sameSums(t, dir, before, "a refused import")
	rep := mustRun(t, dir, "--user", "bob", "orders", "import", writeShop(t, "Z1,bob,Coat,"+day+",true"))
	if rep["unchanged"] != 1.0 {
		t.Fatalf("bob's import of the shop's Z1 as it is: %v, want unchanged", rep)
	}
}

// TestImportUserColumnFollowsTheUserRule: the orders file's user column
// follows the --user rule (returns.ValidUser), with or without
// --operator: an empty user, one with a space or '/', one starting with
// '-', or ".." is refused, exit 2, each line named, no data dir made;
// without --operator an empty user is refused as empty, not as another
// user's row that needs --operator.
func TestImportUserColumnFollowsTheUserRule(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	file := writeShop(t, "U1,,Pen,,false", "U2,a b,Pen,,false", "U3,a/b,Pen,,false", "U4,-x,Pen,,false", "U5,..,Pen,,false")
	_, errOut, code := run(t, dir, "orders", "import", "--operator", file)
	if code != 2 {
		t.Fatalf("--operator: exit %d, want 2; stderr %q", code, errOut)
	}
	for _, want := range []string{"line 2: user name must not be empty", `line 3: user name "a b"`, `line 4: user name "a/b"`, `line 5: user name "-x"`, `line 6: user name ".."`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("--operator: stderr %q lacks %q", errOut, want)
		}
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("stderr has more than one line: %q", errOut)
	}
	_, errOut, code = run(t, dir, "orders", "import", writeShop(t, "U1,,Pen,,false"))
	if code != 2 || !strings.Contains(errOut, "line 2: user name must not be empty") {
		t.Errorf("without --operator: exit %d, stderr %q; want 2, the user must not be empty", code, errOut)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("data dir after refused imports: %v, want none", err)
	}
}

// TestDeliveryTimeStoredAsShown: a delivery time with more digits than a
// millisecond is stored to the millisecond, as JSON output shows it, so
// importing the shown value again is unchanged.
func TestDeliveryTimeStoredAsShown(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "orders", "import", writeShop(t, "P1,demo-user,Pen,2026-11-20T10:00:00.123456789Z,false"))
	if got := query(t, dir, "business.sqlite", `SELECT delivered_at FROM orders WHERE order_id = 'P1'`); !strings.HasPrefix(got, "2026-11-20T10:00:00.123000000") {
		t.Errorf("stored %s, want 2026-11-20T10:00:00.123", got)
	}
	var shown string
	for _, o := range mustRun(t, dir, "orders", "list")["orders"].([]any) {
		if m := o.(map[string]any); m["order_id"] == "P1" {
			shown = m["delivered_at"].(string)
		}
	}
	if shown != "2026-11-20T10:00:00.123Z" {
		t.Fatalf("shown %q", shown)
	}
	rep := mustRun(t, dir, "orders", "import", writeShop(t, "P1,demo-user,Pen,"+shown+",false"))
	if rep["unchanged"] != 1.0 || rep["updated"] != 0.0 {
		t.Fatalf("the shown value imported again: %v, want unchanged", rep)
	}
}

// TestImportUsedTeachingOrderAsStoredIsUnchanged: a file that says of a
// teaching order a task uses exactly what is stored changes nothing and
// is reported unchanged (exit 0); only a row that would change it is
// refused, so the teaching file itself imports with --operator.
func TestImportUsedTeachingOrderAsStoredIsUnchanged(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "t", "A3001", "--reason", "size") // makes the data dir
	out, stderr, code := run(t, dir, "orders", "list")
	if code != 0 {
		t.Fatalf("orders list: exit %d, %s", code, stderr)
	}
	var list struct {
		Orders []struct {
			OrderID     string `json:"order_id"`
			User        string
			Item        string
			DeliveredAt string `json:"delivered_at"`
			FinalSale   bool   `json:"final_sale"`
			Teaching    bool
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var row string
	for _, o := range list.Orders {
		if o.OrderID == "A3009" && o.Teaching { // the seed's open application uses it
			row = fmt.Sprintf("%s,%s,%s,%s,%v", o.OrderID, o.User, o.Item, o.DeliveredAt, o.FinalSale)
		}
	}
	if row == "" {
		t.Fatalf("no teaching order A3009 in %s", out)
	}
	res := mustRun(t, dir, "orders", "import", writeShop(t, row))
	if res["unchanged"] != float64(1) || res["refused"] != float64(0) {
		t.Errorf("import of A3009 as stored: %v; want 1 unchanged, none refused", res)
	}
	changed := strings.Replace(row, "Bluetooth speaker", "Real speaker", 1)
	if _, stderr, code := run(t, dir, "orders", "import", writeShop(t, changed)); code != 3 || !strings.Contains(stderr, "teaching order that a task uses") {
		t.Errorf("import of A3009 changed: exit %d, %s; want exit 3, a teaching order that a task uses", code, stderr)
	}
}
