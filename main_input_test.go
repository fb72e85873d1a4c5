package main

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
					eventually(t, "the command opens the file", func() bool {
						fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.Process.Pid))
						for _, fd := range fds {
							if to, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", c.Process.Pid, fd.Name())); to == fifo {
								return true
							}
						}
						return false
					})
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
