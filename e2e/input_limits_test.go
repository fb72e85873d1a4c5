package e2e

// Limits of input files (docs/orders.md "Limits"; docs/batch.md "The files",
// "decide"): files over a size or line limit, hostile bytes, and a
// temporary directory that fails, each refused in one line, nothing made.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOrdersHostileInput: /dev/zero ends at once with exit 2 (a line over
// the limit), not by filling memory; ids with control characters are
// refused by line.
func TestOrdersHostileInput(t *testing.T) {
	t.Parallel()
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

// TestHugeFieldRefusedInOneShortLine: one quoted field that runs on over
// many lines past the line limit (1 MiB), in an orders, batch or decide
// file, is refused while it is read: exit 2, one short line on stderr
// naming the record's first line, no data dir. A decide file's long bad
// draft id on one line is quoted cut: the field is never read whole nor
// echoed whole to stderr.
func TestHugeFieldRefusedInOneShortLine(t *testing.T) {
	t.Parallel()
	field := `"` + strings.Repeat(strings.Repeat("x", 99)+"\n", 20_000) + `"`
	for _, tc := range []struct {
		name, content string
		args          []string
		want          string
	}{
		{"orders item", "order_id,user,item,delivered_at,final_sale\nO1,demo-user," + field + ",,false\n", []string{"orders", "import", "FILE"}, "the record from line 2 on is longer than"},
		{"batch reason", "task,order,reason\nt1,A3001," + field + "\n", []string{"batch", "BX", "FILE"}, "the record from line 2 on is longer than"},
		{"decide draft", "task,action,draft\nt1,approve," + field + "\n", []string{"decide", "FILE"}, "the record from line 2 on is longer than"},
		{"decide draft one line", "task,action,draft\nt1,approve," + strings.Repeat("d ", 400_000) + "\n", []string{"decide", "FILE"}, `draft id "d d d`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "in.csv")
			if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "data")
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "FILE", file)
			}
			_, errOut, code := run(t, dir, args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %.300q; want 2 and %q", code, errOut, tc.want)
			}
			if len(errOut) > 1000 || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("stderr is %d bytes, want one short line: %.300q", len(errOut), errOut)
			}
			if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("data dir after a refused file: %v, want none", err)
			}
		})
	}
}

// TestInputMessageShapes: bad input files give the usual one line, exit 2:
// a header with a bad quote is "orders file has bad rows, …: line 1: …";
// a directory says it is a directory, not a file; bad rows and orders
// whose rows do not follow each other are named together, in line order;
// every orders file refusal says "nothing was imported".
func TestInputMessageShapes(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	badHeader := filepath.Join(tmp, "badheader.csv")
	if err := os.WriteFile(badHeader, []byte("order_id,us\"er,item\nA,b,c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	scattered := writeShop(t, "X1,demo-user,A,,false", "X2,demo-user,B,,false", "X1,demo-user,C,,false", "X3,demo-user,,,false")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"bad quote in the header", []string{"orders", "import", badHeader}, []string{"orders file has bad rows, nothing was imported: line 1: "}},
		{"a directory", []string{"orders", "import", tmp}, []string{"orders file: " + tmp + " is a directory, not a file"}},
		{"a directory for batch", []string{"batch", "BX", tmp}, []string{"batch file: " + tmp + " is a directory, not a file"}},
		{"a directory for decide", []string{"decide", tmp}, []string{"decide file: " + tmp + " is a directory, not a file"}},
		{"scattered and bad rows", []string{"orders", "import", scattered}, []string{"nothing was imported: line 4: order X1 is also on line 2", "; line 5: item must not be empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			_, errOut, code := runText(t, dir, tc.args...)
			if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
}

// bigBatch writes a valid batch file of n rows whose reasons are 500
// characters (38 ASCII, then 462 of three bytes), and returns its path and
// size. With 50,000 rows it is 72 MB, and 64 MiB ends inside row 46,572,
// 19 characters into its reason: a reader that stops at 64 MiB sees a
// valid file of 46,572 rows.
func bigBatch(tb testing.TB, n int) (string, int64) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "big.csv")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	reason := strings.Repeat("a", 38) + strings.Repeat("尺", 462)
	fmt.Fprintln(f, "task,order,reason")
	for i := range n {
		fmt.Fprintf(f, "row-%05d,A300%d,%s\n", i, i%4+1, reason)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return path, fi.Size()
}

// TestInputFileOverItsLimitIsRefusedWhole: a valid 50,000-row batch file
// over 64 MiB is refused whole with exit 2, nothing created, rather than
// cut at 64 MiB (which would leave a valid file of 46,572 rows, the last
// with 19 of its 500 characters); an orders file over its limit too.
func TestInputFileOverItsLimitIsRefusedWhole(t *testing.T) {
	t.Parallel()
	path, size := bigBatch(t, 50_000)
	if size <= 64<<20 {
		t.Fatalf("the file is %d bytes; the test needs more than 64 MiB", size)
	}
	dir := filepath.Join(t.TempDir(), "data")
	wantRefused(t, dir, 2, "invalid_input", []string{"batch file is larger than", "64 MiB", "split it"}, "batch", "b1", path)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused batch made the data dir: %v", err)
	}

	t.Run("OrdersFile", func(t *testing.T) {
		shop := filepath.Join(t.TempDir(), "shop.csv")
		f, err := os.Create(shop)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, "order_id,user,item,delivered_at,final_sale")
		item := strings.Repeat("i", 1000)
		for i := range 70_000 {
			fmt.Fprintf(f, "S%d,demo-user,%s,2026-01-02T00:00:00Z,false\n", i, item)
		}
		f.Close()
		wantRefused(t, dir, 2, "invalid_input", []string{"orders file is larger than", "split it", "nothing was imported"}, "orders", "import", shop)
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("a refused import made the data dir: %v", err)
		}
	})
}

// badTMPDIR returns a $TMPDIR no one can make a file in (a directory under
// a regular file: ENOTDIR, for root as well).
func badTMPDIR(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(f, "sub")
}

// runTMPDIR runs assistant with args, stdin and TMPDIR=tmp, and checks
// that it could not use tmp as its temporary directory: exit 1 (a local
// storage failure, code internal on stdout), with one line on stderr
// naming tmp and saying TMPDIR can point elsewhere. With full, the process
// may write no file over 4 KiB (ulimit -f 4: a write past it fails, EFBIG,
// as on a full disk).
func runTMPDIR(t *testing.T, tmp string, full bool, stdin string, args ...string) {
	t.Helper()
	c := exec.Command(assistantBin(), withDefaults(args, "--output", "json")...)
	if full {
		c = exec.Command("bash", append([]string{"-c", `ulimit -f 4 && exec "$0" "$@"`, assistantBin(), "--output", "json"}, args...)...)
	}
	c.Env = append(os.Environ(), "TMPDIR="+tmp)
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	code := exitOf(t, c.Run())
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &e); err != nil {
		t.Errorf("%s: stdout is not a JSON error: %v\n%s", args, err, out.String())
	}
	msg := errb.String()
	if code != 1 || e.Error.Code != "internal" || !strings.HasPrefix(msg, "assistant: ") || strings.Count(msg, "\n") != 1 ||
		!strings.Contains(msg, "temporary directory "+tmp) || !strings.Contains(msg, "TMPDIR") {
		t.Errorf("%s with TMPDIR=%s: exit %d, code %s, stderr %q; want 1, internal, one line naming it and TMPDIR", args, tmp, code, e.Error.Code, msg)
	}
}

// TestTempDirFailure: a $TMPDIR that cannot hold a file (under a regular
// file: missing for anyone) or that fills up is a local storage failure,
// exit 1, for decide spooling stdin or a pipe and for orders import
// spooling its orders; nothing is decided or made.
func TestTempDirFailure(t *testing.T) {
	t.Parallel()
	tmp := badTMPDIR(t)
	dir := t.TempDir()
	file := parked(t, dir, 2)
	var big strings.Builder // over 4 KiB
	big.WriteString("task,action\n")
	for i := range 1000 {
		fmt.Fprintf(&big, "t%d,approve\n", i)
	}
	for _, arg := range []string{"-", "/dev/stdin"} {
		runTMPDIR(t, tmp, false, file, "--data", dir, "decide", arg)
		runTMPDIR(t, t.TempDir(), true, big.String(), "--data", dir, "decide", arg)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM decisions`); got != "0" {
		t.Errorf("decisions after the refused decides = %s, want 0", got)
	}
	if got := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM threads WHERE thread_id LIKE 'decide-%'`); got != "0" {
		t.Errorf("decide runs after the refused decides = %s, want 0", got)
	}

	data := filepath.Join(t.TempDir(), "data")
	runTMPDIR(t, tmp, false, "", "--data", data, "orders", "import", writeShop(t, "C50,demo-user,Kettle,,false"))
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("orders import with a bad TMPDIR made the data dir (%v)", err)
	}
	// A TMPDIR that fills up, into a data dir that exists: the file-size
	// limit that stands for a full disk here would stop a new data dir's
	// own files first.
	makeDataDir(t, data)
	rows := make([]string, 1000)
	for i := range rows {
		rows[i] = fmt.Sprintf("C%d,demo-user,Kettle,,false", i)
	}
	runTMPDIR(t, t.TempDir(), true, "", "--data", data, "orders", "import", writeShop(t, rows...))
	if got := query(t, data, "business.sqlite", `SELECT count(*) FROM orders WHERE order_id LIKE 'C%'`); got != "0" {
		t.Fatalf("orders import with a full TMPDIR stored %s orders, want none", got)
	}
}
