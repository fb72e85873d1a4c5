package main

// Defects of two-person approval and of decide that a tester found on
// issue 16's build, each in separate processes of the built binary.

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// twoApprovals imports ci-bot's orders into a new data dir, grants alice
// and bob, and starts task with --approvals 2 on order C1.
func twoApprovals(t *testing.T, task string) string {
	t.Helper()
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
	as(t, dir, "ci-bot", 0, "approvers", "grant", "bob")
	as(t, dir, "ci-bot", 0, "start", task, "C1", "--reason", "broken", "--approvals", "2")
	return dir
}

// pausedAnswer starts `--user user resume task --action approve` parked
// (SIGSTOP) at point while it holds the task's lease.
func pausedAnswer(t *testing.T, dir, point, user, task string) proc {
	t.Helper()
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "--user", user, "resume", task, "--action", "approve")
	c.Env = append(os.Environ(), "ASSISTANT_FAULT="+point+"@pause")
	return startPaused(t, c, point)
}

// TestBusyHintsNameNoStopToApprovers: while alice's first approval of a
// two-approval task holds it (paused after review, or before it), bob's
// approve is refused busy (exit 3) naming alice's winning answer, or
// saying to wait and show, and never offering `stop`, which bob may not
// run; bob's plain resume is told to wait too. The owner's plain resume
// may still offer stop. Once alice's process ends, bob's approve submits.
func TestBusyHintsNameNoStopToApprovers(t *testing.T) {
	for _, c := range []struct{ point, names string }{
		{"after:review", "approve by alice"},
		{"before:review", "wait for it"},
	} {
		t.Run(c.point, func(t *testing.T) {
			dir := twoApprovals(t, "hz2")
			p := pausedAnswer(t, dir, c.point, "alice", "hz2")
			for _, args := range [][]string{
				{"--user", "bob", "resume", "hz2", "--action", "approve"},
				{"--user", "bob", "resume", "hz2"},
			} {
				_, stderr, code := run(t, dir, args...)
				if code != 3 || strings.Contains(stderr, " stop ") || !strings.Contains(stderr, "show hz2") {
					t.Errorf("%v while alice's approve runs: exit %d, %q; want exit 3 pointing at show, no stop", args, code, stderr)
				}
				if args[len(args)-1] == "approve" && !strings.Contains(stderr, c.names) {
					t.Errorf("bob's lost approve says %q, want %q", stderr, c.names)
				}
			}
			if code := p.goOn(t); code != 0 {
				t.Fatalf("alice's approve: exit %d, %s", code, p.stderr)
			}
			v, _ := as(t, dir, "bob", 0, "resume", "hz2", "--action", "approve")
			if v.Status != "done" || v.Result == nil {
				t.Fatalf("bob's approve after alice's: %+v", v)
			}
			verifyClean(t, dir)
		})
	}
}
