package main

import (
	"database/sql"
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

// The tests of this file are the import defects a tester found after
// bac7b96 (shop data in, issue 17), each through the built binary.

// TestImportCommittedWhileAnotherWriterHoldsTheLock: an import whose
// transaction has committed reports its orders (exit 0) even when another
// writer takes business.sqlite's write lock right after that commit and
// holds it past the busy timeout. Before: the import's Sync after the
// commit timed out on that lock, exit 3 "database is locked … try again",
// though its orders were stored.
func TestImportCommittedWhileAnotherWriterHoldsTheLock(t *testing.T) {
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

// TestSignalWhileOpeningAFIFO: a command given a FIFO that no writer ever
// opens (orders import, batch, decide FILE) ends at once on SIGINT and
// SIGTERM while open(2) waits for the writer: exit 130 or 143, one line
// on stderr, no data dir made. Before: the open blocked before any signal
// handling applied, and the command ran on after both signals.
func TestSignalWhileOpeningAFIFO(t *testing.T) {
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
