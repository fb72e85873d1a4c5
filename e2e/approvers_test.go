package e2e

// Approvers and their scope (docs/approvals.md "Approvers"): who may answer a
// task, what a person without the grant is told, and what a grant
// revoked after an approval leaves counted.

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestApproverScope: before a grant a person is told about a task exactly
// what an unknown task tells; only the owner grants their own scope; a
// grantee's approve is in the trail; after a revoke she is refused again
// and the grant and the revoke are recorded.
func TestApproverScope(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "start", "u1", "C1", "--reason", "broken")

	// Before a grant alice is told exactly what an unknown task tells her.
	_, unknown := as(t, dir, "alice", 4, "resume", "nosuch", "--action", "approve")
	refused(t, dir, 4, strings.Replace(unknown, "nosuch", "u1", 1), "--user", "alice", "resume", "u1", "--action", "approve")
	refused(t, dir, 4, "u1: not found for user alice", "--user", "alice", "show", "u1")
	refused(t, dir, 4, "u1: not found for user alice", "--user", "alice", "history", "u1")
	// Only the owner grants their own scope.
	refused(t, dir, 2, "only ci-bot may grant", "--user", "alice", "approvers", "grant", "alice", "--for", "ci-bot")

	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice", "--for", "ci-bot")
	if got := listedAs(t, dir, "alice", "--awaiting-me"); got != "u1=ci-bot" {
		t.Fatalf("alice list --awaiting-me = %q, want u1=ci-bot", got)
	}
	v, _ := as(t, dir, "alice", 0, "resume", "u1", "--action", "approve")
	if v.Status != "done" || v.Result == nil {
		t.Fatalf("alice's approve: %+v", v)
	}
	// The trail names her: show (the owner's), history, the business record.
	v, _ = as(t, dir, "ci-bot", 0, "show", "u1")
	if len(v.Decisions) != 1 || v.Decisions[0].By != "alice" || v.Decisions[0].Action != "approve" ||
		v.Decisions[0].Version == nil || *v.Decisions[0].Version != 1 || *v.Decisions[0].DraftID != v.Draft.DraftID {
		t.Fatalf("show u1 decisions %+v", v.Decisions)
	}
	out, _, _ := run(t, dir, "--user", "alice", "history", "u1")
	var h struct {
		Decisions []struct{ By, Action string }
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Decisions) != 1 || h.Decisions[0].By != "alice" {
		t.Fatalf("history u1 decisions %+v, %v", h.Decisions, err)
	}
	if by := query(t, dir, "business.sqlite", `SELECT by_user || ' ' || action || ' ' || version FROM decisions WHERE task_id = 'u1'`); by != "alice approve 1" {
		t.Fatalf("business decisions of u1: %q", by)
	}

	// After the revoke she is refused again, and a grant change is kept.
	as(t, dir, "ci-bot", 0, "approvers", "revoke", "alice")
	as(t, dir, "ci-bot", 0, "start", "u2", "C2", "--reason", "broken")
	refused(t, dir, 4, "u2: not found for user alice", "--user", "alice", "resume", "u2", "--action", "approve")
	if got := listedAs(t, dir, "alice", "--awaiting-me"); got != "" {
		t.Fatalf("alice list --awaiting-me after revoke = %q", got)
	}
	if n := query(t, dir, "business.sqlite", `SELECT count(*) FROM approver_changes WHERE owner = 'ci-bot' AND grantee = 'alice' AND by_user = 'ci-bot'`); n != "2" {
		t.Fatalf("approver_changes: %s rows, want grant and revoke", n)
	}
}

// TestRecoverKeepsAnApproveOfARevokedGrant: alice, granted, approves; her
// process is killed before submit (the answer saved at the head); the
// owner revokes her grant; recover submits with her approval, which was
// authorised when given (docs/recovery.md "Recover"). She can no longer
// see the task.
func TestRecoverKeepsAnApproveOfARevokedGrant(t *testing.T) {
	t.Parallel()
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

// TestExpiredCardOffersAGranteeWhatWorks: the card of an expired draft
// offers its owner a new request, and a grantee, whose start of the
// owner's order would be refused, only recover, saying the owner can
// start one; the command offered works for them.
func TestExpiredCardOffersAGranteeWhatWorks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
	as(t, dir, "ci-bot", 0, "start", "ex5", "C5", "--reason", "size", "--draft-ttl", "1s")
	later := []string{"ASSISTANT_FAULT=clock:+1h"} // this process's clock: the draft has expired
	owner, _, _ := runIn(t, dir, later, "--user", "ci-bot", "--output", "text", "show", "ex5")
	if !strings.Contains(owner, "start NEW-TASK C5") {
		t.Errorf("the owner's card offers no new request:\n%s", owner)
	}
	card, _, _ := runIn(t, dir, later, "--user", "alice", "--output", "text", "show", "ex5")
	if strings.Contains(card, "NEW-TASK") || !strings.Contains(card, "recover") || !strings.Contains(card, "only its owner ci-bot") {
		t.Fatalf("alice's card of an expired draft:\n%s", card)
	}
	as(t, dir, "alice", 4, "start", "NEW-TASK", "C5", "--reason", "size") // what the card no longer offers her
	out, _, code := runIn(t, dir, later, "--user", "alice", "recover")
	if code != 0 || !strings.Contains(out, "draft_expired") {
		t.Errorf("alice's recover, as her card offers: exit %d\n%s", code, out)
	}
}
