package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRefusedAnswerLeavesTheStop: an answer that read a waiting task, then
// took it after another answer was saved and the task was stopped, is
// refused under the lease (the task was already answered): the stop
// stands. Before, the refused answer let go of the task as its head
// showed it, running part-way, and the next recover carried out the saved
// answer after the stop (docs/design.md "A stop is final").
func TestRefusedAnswerLeavesTheStop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "t", "A3003", "--reason", "size")

	// The approve reads the waiting task and stops before taking it.
	approve := exec.Command(assistantBin(), "--data", dir, "--output", "json", "resume", "t", "--action", "approve")
	approve.Env = append(os.Environ(), "ASSISTANT_FAULT=resume:before-lease@pause")
	var errb bytes.Buffer
	approve.Stderr = &errb
	if err := approve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = approve.Process.Signal(syscall.SIGCONT); _ = approve.Process.Kill() })
	eventually(t, "the approve pauses before its lease", func() bool { return stopped(approve.Process.Pid) })

	// A cancel is saved and its process killed part-way; an operator
	// stops the task.
	if _, code, _ := faultRun(t, dir, "before:cancel", []string{"resume", "t", "--action", "cancel"}); code != 137 {
		t.Fatalf("cancel killed before its node: exit %d", code)
	}
	if _, stderr, code := run(t, dir, "stop", "t", "--wait", "1s"); code != 0 {
		t.Fatalf("stop: exit %d, %s", code, stderr)
	}

	// The approve goes on: the task was answered meanwhile.
	if err := approve.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, approve.Wait()); code != 3 || !strings.Contains(errb.String(), `already answered "cancel"`) {
		t.Fatalf("approve: exit %d, stderr %q; want exit 3, already answered cancel", code, errb.String())
	}
	if got := listed(t, dir); got != "t=interrupted" {
		t.Fatalf("after the refused approve, list says %s; want the task interrupted", got)
	}
	mustRun(t, dir, "recover")
	if got := listed(t, dir); got != "t=interrupted" {
		t.Errorf("after recover, list says %s; want the stop to stand", got)
	}
}

// TestStopAfterTheBusinessCommit: an approve killed after submit's
// business commit, before its checkpoint, left the task running with its
// application in business.sqlite. A stop then came too late: exit 3
// naming the application, and the record, show, list and wait say done
// submitted; a second stop and a cancel are refused as on a task that
// ended. Before, the stop exited 0 and the task read as interrupted with
// no application (docs/cli.md "The business file is the truth").
func TestStopAfterTheBusinessCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "t", "A3001", "--reason", "x")
	if _, code, _ := faultRun(t, dir, "submit:after-business-commit", []string{"resume", "t", "--action", "approve"}); code != 137 {
		t.Fatalf("approve killed after the business commit: exit %d", code)
	}
	out, stderr, code := run(t, dir, "stop", "t")
	if code != 3 || !strings.Contains(stderr, "too late") || !strings.Contains(stderr, "application app_") {
		t.Fatalf("stop: exit %d, %q%q; want exit 3, too late, naming the application", code, out, stderr)
	}
	if got := record(t, dir, "t", "status"); got != "done" {
		t.Errorf("record: %s, want done", got)
	}
	if v := mustRun(t, dir, "show", "t"); v["status"] != "done" || v["stage"] != "submitted" {
		t.Errorf("show: %v %v, want done submitted", v["status"], v["stage"])
	}
	if got := listed(t, dir); got != "t=done" {
		t.Errorf("list: %s, want t=done", got)
	}
	if _, stderr, code := run(t, dir, "wait", "t"); code != 0 {
		t.Errorf("wait: exit %d, %s; want 0 (done)", code, stderr)
	}
	if _, stderr, code := run(t, dir, "stop", "t"); code != 3 || strings.Contains(stderr, "already stopped") {
		t.Errorf("second stop: exit %d, %s; want exit 3, not 'already stopped'", code, stderr)
	}
	if n := applications(t, dir, "t"); n != "1" {
		t.Errorf("applications: %s, want 1", n)
	}
}

// TestSecondStopAfterALateStop: an approve paused inside submit after its
// business commit (or after submit's checkpoint) is stopped: too late
// already (exit 3, the application is in business.sqlite), though its
// process still holds the task and the record stays interrupted. Then:
//
//   - the approve goes on and ends done submitted: its own release sets
//     the record done, and a second stop says it ended;
//   - the approve is killed before it lets go: a second stop is too late,
//     names the application, and sets the record done.
//
// Before, the first stop exited 0, the record stayed interrupted while
// show and list said done, and the second stop said "it is already
// stopped; continue it with … resume".
func TestSecondStopAfterALateStop(t *testing.T) {
	for _, tt := range []struct {
		point string
		kill  bool // kill the approve instead of letting it go on
	}{
		{"submit:after-business-commit@pause", false},
		{"after-checkpoint:submit@pause", true},
	} {
		t.Run(tt.point, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			mustRun(t, dir, "start", "t", "A3001", "--reason", "x")
			holder, hout, _ := backgroundEnv(t, dir, []string{"ASSISTANT_FAULT=" + tt.point}, "resume", "t", "--action", "approve")
			eventually(t, "the approve pauses in submit", func() bool { return stopped(holder.Process.Pid) })
			_, stderr, code := run(t, dir, "stop", "t", "--wait", "100ms")
			if code != 3 || !strings.Contains(stderr, "too late") || !strings.Contains(stderr, "application app_") {
				t.Errorf("stop while the approve is paused: exit %d, %q; want exit 3, too late, naming the application", code, stderr)
			}
			if tt.kill {
				_ = holder.Process.Kill()
				_ = holder.Wait()
			} else {
				_ = holder.Process.Signal(syscall.SIGCONT)
				if code := wait(t, holder); code != 0 || !strings.Contains(hout.String(), `"done"`) {
					t.Fatalf("approve: exit %d, %s", code, hout)
				}
				if got := record(t, dir, "t", "status"); got != "done" {
					t.Errorf("record after the approve ended: %s, want done", got)
				}
			}
			_, stderr, code = run(t, dir, "stop", "t")
			if code != 3 || strings.Contains(stderr, "already stopped") {
				t.Errorf("second stop: exit %d, %q; want exit 3, not 'already stopped'", code, stderr)
			}
			if tt.kill && (!strings.Contains(stderr, "too late") || !strings.Contains(stderr, "application app_")) {
				t.Errorf("second stop: %q; want too late, naming the application", stderr)
			}
			if got := record(t, dir, "t", "status"); got != "done" {
				t.Errorf("record: %s, want done", got)
			}
			if got := listed(t, dir); got != "t=done" {
				t.Errorf("list: %s, want t=done", got)
			}
			if n := applications(t, dir, "t"); n != "1" {
				t.Errorf("applications: %s, want 1", n)
			}
		})
	}
}
