package e2e

import (
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

// Every command that reads a file a person names (orders import, batch,
// decide FILE, decide -) ends at once on SIGINT and SIGTERM while a read
// of that file is blocked: a pipe or FIFO whose writer stalls, in the
// header (a few bytes sent) or among the rows (more than the read buffers
// hold). It exits 130 or 143 and makes no data dir: the file was never
// read whole (issue 17 case 4: "SIGINT/SIGTERM honoured at once").
func TestStalledInputSignals(t *testing.T) {
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
					go w.WriteString(text.String()) // more than a pipe holds: written as it is read
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
					// (its signal handlers are set before then), and is
					// blocked in a read of it soon after.
					eventually(t, "the command opens the file", func() bool { return hasOpen(c.Process.Pid, filepath.Base(fifo)) })
					time.Sleep(300 * time.Millisecond)
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

// TestImportSignalAfterCommit: a signal that reaches `orders import` after
// its transaction committed (held there by the fault point
// import:after-commit@pause) stops nothing: the orders are stored and made
// durable, the report is printed, and the exit is the signal's (130, 143)
// with a note that says the import was committed and nothing is to run
// again, not that nothing was done (before: "interrupted … before it was
// done … run the command again", the orders stored all the same).
func TestImportSignalAfterCommit(t *testing.T) {
	for _, sig := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(sig.sig.String(), func(t *testing.T) {
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
