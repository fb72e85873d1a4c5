package e2e

// Fixes of issue 16 that only processes show: a signal that ends decide
// part-way, and what the CLI prints and exits with.

import (
	"strings"
	"syscall"
	"testing"
)

// TestDecideSignalPrintsTheView ends a decide run part-way with SIGINT and
// SIGTERM: the process exits 130 or 143 and prints the run's view
// (interrupted, where it stopped), with one clean stderr line naming the
// task once and the command that continues it, as a batch does. The
// tester saw an error object and "interrupted by a signal before it was
// done (task decide-…: task decide-…: context canceled)" although rows
// were committed.
func TestDecideSignalPrintsTheView(t *testing.T) {
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
			dir := t.TempDir()
			args, stdin := rc.prepare(t, dir, rc.n)
			p, out, errb := startRows(t, dir, args, stdin)
			waitPosition(t, dir, rc.id, 50, p)
			_ = p.Process.Signal(sig.sig)
			if code := exitOf(t, p.Wait()); code != sig.code {
				t.Fatalf("decide ended by %s: exit %d, want %d; stderr %q", sig.name, code, sig.code, errb)
			}
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

// TestRecoverKeepsAnApproveOfARevokedGrant: alice, granted, approves; her
// process is killed before submit (the answer saved at the head); the
// owner revokes her grant; recover submits with her approval, which was
// authorised when given (docs/recovery.md "Recover"). She can no longer
// see the task.
func TestRecoverKeepsAnApproveOfARevokedGrant(t *testing.T) {
	dir := t.TempDir()
	as(t, dir, "demo-user", 0, "start", "g1", "A3001", "--reason", "size")
	as(t, dir, "demo-user", 0, "approvers", "grant", "alice")
	if _, code, _ := faultRun(t, dir, "before:submit", []string{"--user", "alice", "resume", "g1", "--action", "approve"}); code != 137 {
		t.Fatalf("approve killed before submit: exit %d, want 137", code)
	}
	as(t, dir, "demo-user", 0, "approvers", "revoke", "alice")
	as(t, dir, "demo-user", 0, "recover")
	v, _ := as(t, dir, "demo-user", 0, "show", "g1")
	if v.Status != "done" || v.Stage != "submitted" {
		t.Fatalf("after recover: %s/%s, want done/submitted", v.Status, v.Stage)
	}
	out, _, _ := run(t, dir, "show", "g1")
	if !strings.Contains(out, `"by": "alice"`) {
		t.Errorf("the trail does not name alice's approve:\n%s", out)
	}
	as(t, dir, "alice", 4, "show", "g1")
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d ON d.draft_id = a.draft_id WHERE d.task_id = 'g1'`); got != "1" {
		t.Errorf("applications of g1 = %s, want 1", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT by_user || ' ' || action FROM decisions WHERE task_id = 'g1'`); got != "alice approve" {
		t.Errorf("decisions of g1 = %q, want alice's approve once", got)
	}
	verifyClean(t, dir)
}
