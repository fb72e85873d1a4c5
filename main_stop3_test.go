package main

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
