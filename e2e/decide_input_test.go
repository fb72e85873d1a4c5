package e2e

// End-to-end tests of where decide and orders import read from and spool
// to: a decide file that cannot be read twice (a pipe, a FIFO, /dev/stdin,
// a process substitution) and a temporary directory that fails. Each
// command runs as a process of its own.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDecideFromPipes gives decide its file through inputs it cannot seek
// back through: each is read as `decide -` reads stdin, with the same
// report and the same run id (a hash of the user and the file's bytes,
// whatever names them).
func TestDecideFromPipes(t *testing.T) {
	ref := t.TempDir()
	file := parked(t, ref, 3)
	want, errOut, code := decide(t, ref, file, nil, "-")
	if code != 0 || want.Status != "done" || want.Batch.Counts["submitted"] != 3 {
		t.Fatalf("decide -: exit %d, %+v\n%s", code, want, errOut)
	}
	bin := assistantBin()
	for name, how := range map[string]func(t *testing.T, dir, csv string) *exec.Cmd{
		"/dev/stdin": func(t *testing.T, dir, csv string) *exec.Cmd {
			c := exec.Command(bin, "--data", dir, "--output", "json", "decide", "/dev/stdin")
			c.Stdin = strings.NewReader(file) // a pipe
			return c
		},
		"process substitution": func(t *testing.T, dir, csv string) *exec.Cmd {
			return exec.Command("bash", "-c", fmt.Sprintf("%q --data %q --output json decide <(cat %q)", bin, dir, csv))
		},
		"named pipe": func(t *testing.T, dir, csv string) *exec.Cmd {
			ff := filepath.Join(t.TempDir(), "ff")
			if err := syscall.Mkfifo(ff, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			return exec.Command("bash", "-c", fmt.Sprintf("cat %q > %q & %q --data %q --output json decide %q; s=$?; wait; exit $s", csv, ff, bin, dir, ff))
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			parked(t, dir, 3)
			csv := filepath.Join(t.TempDir(), "dec.csv")
			if err := os.WriteFile(csv, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			c := how(t, dir, csv)
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			if code := exitOf(t, c.Run()); code != 0 {
				t.Fatalf("decide from %s: exit %d\n%s", name, code, errb.String())
			}
			var got decideReport
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("decide from %s: %v\n%s", name, err, out.String())
			}
			if got.Task != want.Task || got.Status != want.Status || fmt.Sprint(got.Batch.Counts) != fmt.Sprint(want.Batch.Counts) || len(got.Rows) != len(want.Rows) {
				t.Fatalf("decide from %s: run %s %s %v, %d rows; want decide -'s: %s %s %v, %d rows",
					name, got.Task, got.Status, got.Batch.Counts, len(got.Rows), want.Task, want.Status, want.Batch.Counts, len(want.Rows))
			}
			checkAppliedOnce(t, dir, 3)
		})
	}
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
	c := exec.Command(assistantBin(), append([]string{"--output", "json"}, args...)...)
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
