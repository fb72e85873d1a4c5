package e2e

// The same batch or decide command given again (issue 15 case 1, as a CI
// retry gives it): it continues a run that a signal, an operator stop or a
// SIGKILL cut short to its end and exits 0 only then; while the first
// process still runs it (held with SIGSTOP), it is exit 3 naming that
// process. Every command is a process of its own.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// rowsCommand is a command that walks rows as a batch task: batch or
// decide.
type rowsCommand struct {
	name string
	id   string // the batch task's id
	n    int    // rows: enough that a cut lands part-way
	// prepare makes dir ready for the command and returns its arguments
	// (after the global flags) and its stdin.
	prepare func(t *testing.T, dir string, n int) (args []string, stdin string)
	// checkDone checks that every row ran exactly once and dir is clean.
	checkDone func(t *testing.T, dir string, n int)
}

var rowsCommands = []rowsCommand{
	{
		name: "batch", id: "b1", n: 3000,
		prepare: func(t *testing.T, dir string, n int) ([]string, string) {
			return []string{"batch", "b1", batchFile(t, dir, n), "--exit-status"}, ""
		},
		checkDone: func(t *testing.T, dir string, n int) { checkBatchDone(t, dir, "b1", n) },
	},
	{
		name: "decide", id: "d1", n: 1500,
		prepare: func(t *testing.T, dir string, n int) ([]string, string) {
			return []string{"decide", "-", "--id", "d1", "--exit-status"}, parked(t, dir, n)
		},
		checkDone: func(t *testing.T, dir string, n int) {
			if v := mustRun(t, dir, "show", "d1"); v["status"] != "done" {
				t.Errorf("d1 status = %v, want done", v["status"])
			}
			checkAppliedOnce(t, dir, n)
			verifyClean(t, dir)
		},
	},
}

// startRows starts a command in dir with args and stdin as a process
// of its own; its stdout and stderr land in the returned buffers. A
// process the test leaves paused or running is ended at cleanup.
func startRows(t *testing.T, dir string, args []string, stdin string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json"}, args...)...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	return c, &out, &errb
}

// runRows runs args in dir with stdin to its end and returns stdout,
// stderr and the exit code.
func runRows(t *testing.T, dir string, args []string, stdin string) (string, string, int) {
	t.Helper()
	c, out, errb := startRows(t, dir, args, stdin)
	code := exitOf(t, c.Wait())
	return out.String(), errb.String(), code
}

// rowsView is the part of a batch task's view these tests read.
type rowsView struct {
	Status string `json:"status"`
	Batch  struct {
		Position int `json:"position"`
		Total    int `json:"total"`
	} `json:"batch"`
	Holder *struct {
		PID   int  `json:"pid"`
		Alive bool `json:"alive"`
	} `json:"holder"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func showRows(t *testing.T, dir, id string) rowsView {
	t.Helper()
	out, errb, code := run(t, dir, "show", id)
	if code != 0 {
		t.Fatalf("show %s: exit %d: %s", id, code, errb)
	}
	return decodeRows(t, out)
}

func decodeRows(t *testing.T, out string) rowsView {
	t.Helper()
	var v rowsView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout is not one JSON view: %v\n%s", err, out)
	}
	return v
}

// TestRowsCommandAgainContinues cuts a batch, and a decide run, short
// part-way — SIGINT, a stop from another process, SIGKILL — and gives the
// same command again, as a CI retry of `assistant batch … && deploy`
// would: the first exits non-zero (130, 8, 137), the second continues the
// run to its last row and exits 0, every row run once. Before the fix the
// second exited 0 on the first's stopped run ("status": "interrupted"),
// and a batch stopped from another process exited 0 itself.
func TestRowsCommandAgainContinues(t *testing.T) {
	cuts := []struct {
		name string
		cut  func(t *testing.T, dir, id string, p *exec.Cmd)
		code int    // the first process's exit
		left string // the status it leaves
	}{
		{"SIGINT", func(t *testing.T, _, _ string, p *exec.Cmd) { _ = p.Process.Signal(syscall.SIGINT) }, 130, "interrupted"},
		{"Stop", func(t *testing.T, dir, id string, _ *exec.Cmd) { mustRun(t, dir, "stop", id) }, 8, "interrupted"},
		// SIGKILL: no cleanup at all, as in a crash; the run is left
		// running with its process gone.
		{"SIGKILL", func(t *testing.T, _, _ string, p *exec.Cmd) { _ = p.Process.Signal(syscall.SIGKILL) }, 137, "running"},
	}
	for _, rc := range rowsCommands {
		for _, cut := range cuts {
			t.Run(rc.name+"/"+cut.name, func(t *testing.T) {
				dir := t.TempDir()
				args, stdin := rc.prepare(t, dir, rc.n)
				first, out, errb := startRows(t, dir, args, stdin)
				waitPosition(t, dir, rc.id, 50, first)
				cut.cut(t, dir, rc.id, first)
				if code := exitOf(t, first.Wait()); code != cut.code {
					t.Fatalf("%s cut by %s: exit %d, want %d; stderr %q", rc.name, cut.name, code, cut.code, errb)
				}
				if cut.left == "interrupted" {
					if v := decodeRows(t, out.String()); v.Status != "interrupted" {
						t.Errorf("%s cut by %s printed status %s, want interrupted", rc.name, cut.name, v.Status)
					}
				}
				v := showRows(t, dir, rc.id)
				if v.Status != cut.left || v.Batch.Position >= rc.n {
					t.Fatalf("after %s: status %s at %d of %d; want %s part-way (the case under test)", cut.name, v.Status, v.Batch.Position, rc.n, cut.left)
				}
				if cut.name == "SIGINT" {
					// The card tells no operator stop that did not happen.
					text, _, _ := run(t, dir, "show", rc.id, "--output", "text")
					if !strings.Contains(text, "Stopped (by `assistant stop` or a signal)") {
						t.Errorf("text card of a run stopped by SIGINT:\n%s", text)
					}
				}

				again, errAgain, code := runRows(t, dir, args, stdin)
				if code != 0 {
					t.Fatalf("%s again after %s: exit %d, want 0 (continued to its end); stderr %q", rc.name, cut.name, code, errAgain)
				}
				if v := decodeRows(t, again); v.Status != "done" || v.Batch.Position != rc.n || v.Batch.Total != rc.n {
					t.Fatalf("%s again after %s: status %s at %d of %d, want done at %d", rc.name, cut.name, v.Status, v.Batch.Position, v.Batch.Total, rc.n)
				}
				rc.checkDone(t, dir, rc.n)

				// A third time: the finished run is reported, exit 0, and
				// nothing runs again.
				third, errThird, code := runRows(t, dir, args, stdin)
				if v := decodeRows(t, third); code != 0 || v.Status != "done" {
					t.Fatalf("%s a third time: exit %d, status %s; want 0, done; stderr %q", rc.name, code, v.Status, errThird)
				}
				rc.checkDone(t, dir, rc.n)
			})
		}
	}
}

// TestRowsCommandAgainWhileRunning gives a batch command, and a decide
// command, again while the first process still runs it (paused with
// SIGSTOP, so that it is alive and holds the run): exit 3 naming that
// process, with nothing run; another file for the same id is exit 3 too.
// Once the first is let go (SIGCONT) it finishes, every row run once.
// Before the fix the second exited 0 printing the first's progress.
func TestRowsCommandAgainWhileRunning(t *testing.T) {
	for _, rc := range rowsCommands {
		t.Run(rc.name, func(t *testing.T) {
			dir := t.TempDir()
			args, stdin := rc.prepare(t, dir, rc.n)
			first, out, errb := startRows(t, dir, args, stdin)
			waitPosition(t, dir, rc.id, 50, first)
			if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			before := showRows(t, dir, rc.id)
			if before.Status != "running" || before.Holder == nil || !before.Holder.Alive || before.Batch.Position >= rc.n {
				t.Fatalf("paused first process: %+v; want running part-way with its holder alive (the case under test)", before)
			}

			stdout, stderr, code := runRows(t, dir, args, stdin)
			pid := fmt.Sprintf("pid %d", first.Process.Pid)
			if code != 3 || !strings.Contains(stderr, pid) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%s again while pid %d runs it: exit %d, stderr %q; want 3 and one line naming %s", rc.name, first.Process.Pid, code, stderr, pid)
			}
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(stdout), &e); err != nil || e.Error.Code != "conflict" {
				t.Errorf("%s again while running: stdout %.300q…, want the error object with code conflict", rc.name, stdout)
			}
			if after := showRows(t, dir, rc.id); after.Batch.Position != before.Batch.Position || after.Holder == nil || after.Holder.PID != first.Process.Pid {
				t.Errorf("%s again while running changed the run: %+v, was %+v", rc.name, after, before)
			}

			// Another file for the same id: the input binding refuses it.
			other := args
			otherIn := stdin
			if rc.name == "batch" {
				other = []string{"batch", rc.id, batchFile(t, t.TempDir(), 3)}
			} else {
				otherIn = "task,action\nrow-0000,cancel\n"
			}
			if _, stderr, code := runRows(t, dir, other, otherIn); code != 3 || !strings.Contains(stderr, "other input") {
				t.Errorf("%s %s with another file: exit %d, stderr %q; want 3, other input", rc.name, rc.id, code, stderr)
			}

			if err := first.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if code := exitOf(t, first.Wait()); code != 0 {
				t.Fatalf("first %s after SIGCONT: exit %d, want 0; stderr %q", rc.name, code, errb)
			}
			if v := decodeRows(t, out.String()); v.Status != "done" || v.Batch.Position != rc.n {
				t.Fatalf("first %s after SIGCONT: status %s at %d, want done at %d", rc.name, v.Status, v.Batch.Position, rc.n)
			}
			rc.checkDone(t, dir, rc.n)
		})
	}
}
