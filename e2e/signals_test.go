package e2e

// Signals (docs/cli.md "Exit codes"): a command whose own run ends by
// SIGINT or SIGTERM exits 130 or 143 after saving what it did, at any
// moment: waiting for a lock, for its input, inside a batch chunk, after
// its commit.

import (
	"bufio"
	"bytes"
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

	"golang.org/x/sys/unix"
)

// signalledRows is the rows of a batch that a signal ends part-way:
// several chunks (returns.DefaultBatchChunk), the signal sent while the
// batch is parked at its first chunk's end (rowsPartWay). The count of
// rowsCommands' batch, so that both start from one fixture.
const signalledRows = 300

// TestSIGTERMStopsLikeStop sends SIGTERM to a running batch: it must end as
// an operator stop does — status interrupted, the step failed — but exit
// 143, so `batch … && deploy` does not go on, and resume must
// finish it.
func TestSIGTERMStopsLikeStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	proc, out := pausedBatch(t, dir, batchFile(t, dir, signalledRows))
	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	proc.letRun(t)
	checkBatchStopped(t, dir, proc, out, "batch after SIGTERM", 1, 143)
	mustRun(t, dir, "resume", "b1")
	checkBatchDone(t, dir, "b1", signalledRows)
}

// TestSignalledBatchExits130Or143: a batch ended by SIGINT or
// SIGTERM part-way exits 130 or 143 (so `batch … && deploy` stops there),
// with or without --exit-status, after saving its rows; resume finishes it.
func TestSignalledBatchExits130Or143(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		code int
		flag []string
	}{
		{"SIGINT", syscall.SIGINT, 130, nil},
		{"SIGTERM", syscall.SIGTERM, 143, nil},
		{"SIGTERMWithExitStatus", syscall.SIGTERM, 143, []string{"--exit-status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir() // batchFile's import makes the data dir
			p, out := pausedBatch(t, dir, batchFile(t, dir, signalledRows), tc.flag...)
			if err := p.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			p.letRun(t)
			if code := exitWithin(t, p.done, time.Minute); code != tc.code {
				t.Fatalf("batch ended by %s: exit %d, want %d; stderr %q", tc.name, code, tc.code, p.stderr)
			}
			if got := statusOf(t, out.String()); got != "interrupted" {
				t.Errorf("batch ended by %s printed status %s, want interrupted", tc.name, got)
			}
			if errb := p.stderr.String(); !strings.Contains(errb, "resume b1") || strings.Count(errb, "\n") != 1 {
				t.Errorf("stderr %q, want one line with the resume command", errb)
			}
			mustRun(t, dir, "resume", "b1")
			checkBatchDone(t, dir, "b1", signalledRows)
		})
	}
}

// TestDecideSignalPrintsTheView ends a decide run part-way with SIGINT and
// SIGTERM: the process exits 130 or 143 and prints the run's view
// (interrupted, where it stopped), with one clean stderr line naming the
// task once and the command that continues it, as a batch does: no
// error object, no "context canceled", since rows were committed.
func TestDecideSignalPrintsTheView(t *testing.T) {
	t.Parallel()
	rc := rowsCommands[1]
	if rc.name != "decide" {
		t.Fatalf("rowsCommands[1] is %s, want decide", rc.name)
	}
	for _, sig := range []struct {
		name string
		sig  syscall.Signal
		code int
	}{{"SIGINT", syscall.SIGINT, 130}, {"SIGTERM", syscall.SIGTERM, 143}} {
		t.Run(sig.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args, stdin := rc.prepare(t, dir, rc.n)
			p, out := pausedRows(t, dir, args, stdin)
			_ = p.Process.Signal(sig.sig)
			p.letRun(t)
			if code := exitWithin(t, p.done, time.Minute); code != sig.code {
				t.Fatalf("decide ended by %s: exit %d, want %d; stderr %q", sig.name, code, sig.code, p.stderr)
			}
			errb := p.stderr
			v := decodeRows(t, out.String())
			if v.Status != "interrupted" || v.Batch.Position < 50 || v.Batch.Position >= rc.n || v.Error != nil {
				t.Errorf("decide ended by %s printed %+v; want the view, interrupted part-way", sig.name, v)
			}
			line := errb.String()
			if strings.Count(line, "\n") != 1 || !strings.Contains(line, sig.name) ||
				!strings.Contains(line, "resume "+rc.id) || strings.Contains(line, "task "+rc.id+": task") {
				t.Errorf("stderr %q: want one line naming %s, the task (not twice over) and `resume %s`", line, sig.name, rc.id)
			}
			for _, bad := range []string{"context canceled", "before it was done"} {
				if strings.Contains(line, bad) {
					t.Errorf("stderr %q holds %q", line, bad)
				}
			}
			verifyClean(t, dir)
		})
	}
}

// TestBatchStopKeepsFinishedRows: a batch ended inside a chunk (SIGTERM,
// which reaches it mid-chunk; an operator stop is written only between
// chunks, as the chunk holds the write lock) keeps the rows the chunk
// finished: its checkpoint counts exactly the row tasks that exist. The
// batch is parked right after its first row (batch:after-row@pause) and
// gets the signal there, so the signal lands inside a chunk every time; a
// build that threw the chunk away would stand at position 0.
func TestBatchStopKeepsFinishedRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := batchFile(t, dir, 300)
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "batch", "b1", rows)
	c.Env = append(os.Environ(), "ASSISTANT_FAULT=batch:after-row"+"@pause")
	var out bytes.Buffer
	c.Stdout = &out
	p := startPaused(t, c, "batch:after-row")
	if err := p.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.goOn(t); code != 143 {
		t.Fatalf("batch ended by SIGTERM: exit %d, want 143; stderr %q", code, p.stderr)
	}
	var v struct {
		Status string
		Batch  struct{ Position int }
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Status != "interrupted" {
		t.Fatalf("batch ended by SIGTERM printed %s (%v); want the view, interrupted", out.String(), err)
	}
	if v.Batch.Position != 1 {
		t.Errorf("signalled after its first row, the batch stands at position %d, want 1: a signal throws away the rows its chunk finished", v.Batch.Position)
	}
	tasks := atoi(query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'row-%'`))
	if tasks != v.Batch.Position {
		t.Fatalf("stopped at position %d with %d row tasks: the checkpoint and the rows disagree", v.Batch.Position, tasks)
	}
}

// TestInterruptBeforeAnythingStored interrupts a start that waits for the
// business file's write lock (another process holds it) to make its task:
// nothing is stored, and the command says it was interrupted (exit 130,
// code "interrupted", one line on stderr), not that it failed.
func TestInterruptBeforeAnythingStored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	release := holdWriteLock(t, dir, "business.sqlite")

	proc := exec.Command(assistantBin(), "--data", dir, "--output", "json", "start", "t3", "A3003", "--reason", "small")
	var out, stderr bytes.Buffer
	proc.Stdout, proc.Stderr = &out, &stderr
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until it has the business file open (its signal handling is set
	// up by then), and a little more for it to be waiting for the lock.
	deadline := time.Now().Add(4 * time.Second)
	for !hasOpen(proc.Process.Pid, "business.sqlite") {
		if time.Now().After(deadline) {
			_ = proc.Process.Kill()
			t.Fatal("start never opened business.sqlite")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := proc.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := exitOf(t, proc.Wait())
	var v struct{ Error struct{ Code string } }
	_ = json.Unmarshal(out.Bytes(), &v)
	if code != 130 || v.Error.Code != "interrupted" || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "interrupted by SIGINT") {
		t.Fatalf("start interrupted while waiting for the lock: exit %d, stdout %s, stderr %q; want 130, code interrupted, one line", code, out.String(), stderr.String())
	}
	release()
	if _, _, code := run(t, dir, "show", "t3"); code != 4 {
		t.Errorf("show of the interrupted start: exit %d, want 4 (nothing stored)", code)
	}
}

// TestStalledInputSignals: every command that reads a file a person names
// (orders import, batch, decide FILE, decide -) ends at once on SIGINT and
// SIGTERM while a read of that file is blocked: a pipe or FIFO whose writer
// stalls, in the header (a few bytes sent) or among the rows (more than the
// read buffers hold). It exits 130 or 143 and makes no data dir: the file
// was never read whole.
func TestStalledInputSignals(t *testing.T) {
	t.Parallel()
	commands := []struct {
		name   string
		args   []string // "FILE" is the FIFO
		stdin  bool     // the FIFO is the command's stdin
		header string
		row    func(i int) string
	}{
		{"import", []string{"orders", "import", "FILE"}, false, "order_id,user,item,delivered_at,final_sale",
			func(i int) string { return fmt.Sprintf("S%07d,demo-user,Pen %d,,false", i, i) }},
		{"batch", []string{"batch", "b1", "FILE"}, false, "task,order,reason",
			func(i int) string { return fmt.Sprintf("r%d,A3001,damaged", i) }},
		{"decide-file", []string{"decide", "FILE"}, false, "task,action",
			func(i int) string { return fmt.Sprintf("r%d,approve", i) }},
		{"decide-stdin", []string{"decide", "-"}, true, "task,action",
			func(i int) string { return fmt.Sprintf("r%d,approve", i) }},
	}
	for _, cmd := range commands {
		for _, size := range []struct {
			name string
			rows int
		}{{"header", 1}, {"rows", 20_000}} {
			for _, sig := range []struct {
				sig  syscall.Signal
				code int
			}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
				t.Run(fmt.Sprintf("%s/%s/%s", cmd.name, size.name, sig.sig), func(t *testing.T) {
					t.Parallel()
					fifo := filepath.Join(t.TempDir(), "input.csv")
					if err := syscall.Mkfifo(fifo, 0o600); err != nil {
						t.Skipf("mkfifo: %v", err)
					}
					// Opened read-write, the FIFO has a writer that never
					// closes it, and the open does not wait for a reader.
					w, err := os.OpenFile(fifo, os.O_RDWR, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer w.Close()
					var text strings.Builder
					text.WriteString(cmd.header + "\n")
					for i := range size.rows {
						text.WriteString(cmd.row(i) + "\n")
					}
					written := make(chan struct{})
					go func() { // more than a pipe holds: written as it is read
						defer close(written)
						_, _ = w.WriteString(text.String())
					}()
					dir := filepath.Join(t.TempDir(), "data")
					args := []string{"--data", dir}
					for _, a := range cmd.args {
						args = append(args, strings.ReplaceAll(a, "FILE", fifo))
					}
					c := exec.Command(assistantBin(), args...)
					var errb strings.Builder
					c.Stderr = &errb
					if cmd.stdin {
						in, err := os.Open(fifo)
						if err != nil {
							t.Fatal(err)
						}
						defer in.Close()
						c.Stdin = in
					}
					if err := c.Start(); err != nil {
						t.Fatal(err)
					}
					ended := make(chan error, 1)
					go func() { ended <- c.Wait() }()
					defer func() {
						c.Process.Kill()
						<-ended
					}()
					// The command reads the FIFO once its descriptor shows
					// (its signal handlers are set before then); once it has
					// read all the writer sent, it is blocked in a read of it.
					eventually(t, "the command opens the file", func() bool { return hasOpen(c.Process.Pid, filepath.Base(fifo)) })
					eventually(t, "the command reads all the writer sent", func() bool {
						select {
						case <-written:
							return unread(t, w) == 0
						default:
							return false
						}
					})
					if err := c.Process.Signal(sig.sig); err != nil {
						t.Fatal(err)
					}
					select {
					case err := <-ended:
						ended <- err // for the deferred wait
						if code := exitOf(t, err); code != sig.code {
							t.Fatalf("exit %d, want %d; stderr %q", code, sig.code, errb.String())
						}
						if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); n > 0 {
							t.Errorf("stderr has %d lines, want one: %q", n+1, errb.String())
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("%s did not end within 10 s of %s while its input stalled", cmd.name, sig.sig)
					}
					if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("data dir after the interrupted command: %v, want none", err)
					}
				})
			}
		}
	}
}

// TestSignalWhileOpeningAFIFO: a command given a FIFO that no writer ever
// opens (orders import, batch, decide FILE) ends at once on SIGINT and
// SIGTERM while open(2) waits for the writer: exit 130 or 143, one line
// on stderr, no data dir made: signal handling applies before the open.
func TestSignalWhileOpeningAFIFO(t *testing.T) {
	t.Parallel()
	commands := []struct {
		name string
		args []string // "FILE" is the FIFO
	}{
		{"import", []string{"orders", "import", "FILE"}},
		{"batch", []string{"batch", "BX", "FILE"}},
		{"decide", []string{"decide", "FILE"}},
	}
	for _, cmd := range commands {
		for _, sig := range []struct {
			sig  syscall.Signal
			code int
		}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
			t.Run(cmd.name+"/"+sig.sig.String(), func(t *testing.T) {
				t.Parallel()
				fifo := filepath.Join(t.TempDir(), "in.csv")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				dir := filepath.Join(t.TempDir(), "data")
				args := []string{"--data", dir}
				for _, a := range cmd.args {
					args = append(args, strings.ReplaceAll(a, "FILE", fifo))
				}
				c := exec.Command(assistantBin(), args...)
				var errb strings.Builder
				c.Stderr = &errb
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				ended := make(chan error, 1)
				go func() { ended <- c.Wait() }()
				defer func() {
					c.Process.Kill()
					<-ended
				}()
				eventually(t, "the command waits in the FIFO's open", func() bool { return inFIFOOpen(c.Process.Pid) })
				if err := c.Process.Signal(sig.sig); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-ended:
					ended <- err // for the deferred wait
					if code := exitOf(t, err); code != sig.code {
						t.Fatalf("exit %d, want %d; stderr %q", code, sig.code, errb.String())
					}
					if n := strings.Count(strings.TrimSpace(errb.String()), "\n"); n > 0 {
						t.Errorf("stderr has %d lines, want one: %q", n+1, errb.String())
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s did not end within 10 s of %s while it opened a FIFO no writer opens", cmd.name, sig.sig)
				}
				if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("data dir after the interrupted command: %v, want none", err)
				}
			})
		}
	}
}

// inFIFOOpen reports whether a thread of process pid waits in the open of
// a FIFO for the other end (Linux /proc: wchan wait_for_partner).
func inFIFOOpen(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, task.Name())); err == nil && string(b) == "wait_for_partner" {
			return true
		}
	}
	return false
}

// unread is how many bytes written to the pipe f are not read yet
// (TIOCINQ, which is FIONREAD on Linux).
func unread(t *testing.T, f *os.File) int {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ioctlErr error
	if err := raw.Control(func(fd uintptr) { n, ioctlErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		t.Fatal(err)
	}
	if ioctlErr != nil {
		t.Fatalf("TIOCINQ: %v", ioctlErr)
	}
	return n
}

// TestImportSignalAfterCommit: a signal that reaches `orders import` after
// its transaction committed (held there by the fault point
// import:after-commit@pause) stops nothing: the orders are stored and made
// durable, the report is printed, and the exit is the signal's (130, 143)
// with a note that says the import was committed and nothing is to run
// again, not that nothing was done.
func TestImportSignalAfterCommit(t *testing.T) {
	t.Parallel()
	for _, sig := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(sig.sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			file := writeShop(t, "S1,demo-user,Pen,,false", "S2,demo-user,Ink,,false")
			c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "orders", "import", file)
			c.Env = append(os.Environ(), "ASSISTANT_FAULT=import:after-commit@pause")
			var out, errb strings.Builder
			c.Stdout, c.Stderr = &out, &errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			defer c.Process.Kill()
			eventually(t, "the import stops after its commit", func() bool { return stopped(c.Process.Pid) })
			if err := c.Process.Signal(sig.sig); err != nil {
				t.Fatal(err)
			}
			if err := c.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if code := exitOf(t, c.Wait()); code != sig.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, sig.code, errb.String())
			}
			if !strings.Contains(out.String(), `"added": 2`) {
				t.Errorf("no report of the committed import on stdout:\n%s", out.String())
			}
			if e := errb.String(); !strings.Contains(e, "the import was committed") || strings.Contains(e, "run the command again") {
				t.Errorf("stderr %q: want a note that the import was committed, not to run it again", e)
			}
			if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders WHERE order_id IN ('S1', 'S2')`); got != "2" {
				t.Errorf("%s of the two orders stored, want both", got)
			}
			verifyClean(t, dir)
		})
	}
}

// TestOrdersImportSignals: SIGINT and SIGTERM during a big import end it at
// once with nothing written (one transaction, rolled back).
func TestOrdersImportSignals(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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

// TestImportSignalDuringWriteLeavesWhatDocsSay: a signal that reaches an
// import once its data dir is open and before its orders are committed
// (held at import:before-write) ends it, exit 130 or 143, and leaves what
// orders.md "Limits" says: a data dir that existed keeps its orders and
// gets none of the file's; a new one, made aside for the first import
// ("The first import"), is not left at all, nor is its temporary
// directory.
func TestImportSignalDuringWriteLeavesWhatDocsSay(t *testing.T) {
	t.Parallel()
	for _, sig := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		for _, existing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/existing=%v", sig.sig, existing), func(t *testing.T) {
				t.Parallel()
				parent := t.TempDir()
				dir := filepath.Join(parent, "data")
				if existing {
					makeDataDir(t, dir)
				}
				// Enough orders for many batches: the import ends at the
				// first batch after the signal, long before its commit.
				rows := []string{"W1,demo-user,Pen,,false", "W2,demo-user,Ink,,false"}
				for i := range 50_000 {
					rows = append(rows, fmt.Sprintf("W%06d,demo-user,Item,,false", i))
				}
				file := writeShop(t, rows...)
				c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "orders", "import", file)
				c.Env = append(os.Environ(), "ASSISTANT_FAULT=import:before-write@pause")
				p := startPaused(t, c, "import:before-write")
				if err := p.Process.Signal(sig.sig); err != nil {
					t.Fatal(err)
				}
				if code := p.goOn(t); code != sig.code {
					t.Fatalf("exit %d, want %d; stderr %q", code, sig.code, p.stderr.String())
				}
				if !existing {
					if names := dirNames(t, parent); len(names) != 0 {
						t.Fatalf("left in the data dir's parent: %v, want nothing", names)
					}
					return
				}
				if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders WHERE order_id LIKE 'W%'`); got != "0" {
					t.Errorf("%s orders of the file stored, want none", got)
				}
				if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders WHERE order_id = 'INIT0'`); got != "1" {
					t.Errorf("the data dir's own order: %s, want kept", got)
				}
			})
		}
	}
}

// dirNames returns the names in directory dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestSignalLineIsClean: a signal that ends a wait says its name in one
// line, without the cancelled context's text.
func TestSignalLineIsClean(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "r1", "A3003", "--reason", "x")
	for sig, code := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		c, stderr := startWait(t, dir, "r1")
		if err := c.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		got := endOf(t, c)
		line := stderr.String()
		if got != code || strings.Count(line, "\n") != 1 || !strings.Contains(line, "interrupted by SIG") || strings.Contains(line, "context canceled") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one clean line naming the signal", sig, got, line, code)
		}
	}
	verifyClean(t, dir)
}
