package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tests of this file are the approval rules of issue 16, each in
// separate processes of the built binary: approvers and their scope, the
// decision trail, edits with versions, revise, and two-person approval.

// approvalView is the part of a start/show/resume JSON these tests read.
type approvalView struct {
	Status     string
	Stage      string
	Kind       *string
	Interrupts []struct {
		ID    string
		Kind  string
		Value struct {
			DraftID     string `json:"draft_id"`
			Version     int
			Approver    int
			Comment     string
			RequestedBy string `json:"requested_by"`
		}
	}
	Draft *struct {
		DraftID string `json:"draft_id"`
		Version int
		Reason  string
	}
	Decisions []struct {
		By      string
		Action  string
		DraftID *string `json:"draft_id"`
		Version *int
	}
	Result *struct {
		ApplicationID string `json:"application_id"`
	}
	Error *struct{ Code string }
}

// as runs the binary as user and decodes its view; it fails unless the
// exit code is want.
func as(t *testing.T, dir, user string, want int, args ...string) (approvalView, string) {
	t.Helper()
	out, stderr, code := run(t, dir, append([]string{"--user", user}, args...)...)
	if code != want {
		t.Fatalf("--user %s %s: exit %d, want %d\n%s%s", user, strings.Join(args, " "), code, want, out, stderr)
	}
	var v approvalView
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("--user %s %s: %v\n%s", user, strings.Join(args, " "), err, out)
		}
	}
	return v, stderr
}

// ciBotOrders imports returnable orders C1..C9 of ci-bot into dir.
func ciBotOrders(t *testing.T, dir string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("order_id,user,item,delivered_days_ago,final_sale\n")
	for _, id := range []string{"C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"} {
		b.WriteString(id + ",ci-bot,Build agent parts,2,false\n")
	}
	file := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	as(t, dir, "ci-bot", 0, "orders", "import", file)
}

// allApplications counts ci-bot's applications in dir's business file (the teaching orders hold some of their own).
func allApplications(t *testing.T, dir string) string {
	t.Helper()
	return query(t, dir, "business.sqlite", `SELECT count(*) FROM applications WHERE user = 'ci-bot'`)
}

func TestApproverScope(t *testing.T) {
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

// listedAs is list as user with args: "task=owner" of each task.
func listedAs(t *testing.T, dir, user string, args ...string) string {
	t.Helper()
	out, stderr, code := run(t, dir, append([]string{"--user", user, "list"}, args...)...)
	if code != 0 {
		t.Fatalf("list %v: exit %d, %s", args, code, stderr)
	}
	var v struct {
		Tasks []struct{ Task, Owner string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("list: %v\n%s", err, out)
	}
	var got []string
	for _, tk := range v.Tasks {
		got = append(got, tk.Task+"="+tk.Owner)
	}
	return strings.Join(got, " ")
}

func TestEditMakesANewVersion(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	v1, _ := as(t, dir, "ci-bot", 0, "start", "e1", "C1", "--reason", "broken")
	if v1.Draft == nil || v1.Draft.Version != 1 {
		t.Fatalf("start: draft %+v", v1.Draft)
	}
	v2, _ := as(t, dir, "ci-bot", 0, "resume", "e1", "--action", "edit", "--reason", "wrong size")
	if v2.Status != "waiting" || v2.Draft.Version != 2 || v2.Draft.DraftID == v1.Draft.DraftID || v2.Draft.Reason != "wrong size" {
		t.Fatalf("edit: %+v draft %+v", v2, v2.Draft)
	}
	if q := v2.Interrupts[0].Value; q.Version != 2 || q.DraftID != v2.Draft.DraftID {
		t.Fatalf("question after edit: %+v", q)
	}
	// Approving version 1 is stale (exit 3), by id or by number.
	refused(t, dir, 3, "stale", "--user", "ci-bot", "resume", "e1", "--action", "approve", "--draft", v1.Draft.DraftID)
	refused(t, dir, 3, "stale", "--user", "ci-bot", "resume", "e1", "--action", "approve", "--version", "1")
	if sup := query(t, dir, "business.sqlite", `SELECT superseded_at IS NOT NULL FROM drafts WHERE draft_id = ?`, v1.Draft.DraftID); sup != "1" {
		t.Fatalf("version 1 superseded: %s", sup)
	}
	done, _ := as(t, dir, "ci-bot", 0, "resume", "e1", "--action", "approve", "--version", "2")
	if done.Status != "done" || done.Result == nil {
		t.Fatalf("approve of version 2: %+v", done)
	}
	as(t, dir, "ci-bot", 0, "resume", "e1", "--action", "approve") // again: reused
	if n := allApplications(t, dir); n != "1" {
		t.Fatalf("%s applications, want 1", n)
	}
	if n := query(t, dir, "business.sqlite", `SELECT draft_id FROM applications WHERE user = 'ci-bot'`); n != v2.Draft.DraftID {
		t.Fatalf("application of draft %s, want version 2's %s", n, v2.Draft.DraftID)
	}
}

func TestReviseAsksTheOwner(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "start", "r1", "C1", "--reason", "broken")
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
	v, _ := as(t, dir, "alice", 0, "resume", "r1", "--action", "revise", "--comment", "say which part is broken")
	if v.Status != "waiting" || v.Kind == nil || *v.Kind != "need_reason" || v.Stage != "need_reason" {
		t.Fatalf("revise: status %s stage %s kind %v", v.Status, v.Stage, v.Kind)
	}
	if q := v.Interrupts[0].Value; q.Comment != "say which part is broken" || q.RequestedBy != "alice" {
		t.Fatalf("need_reason question after revise: %+v", q)
	}
	out, _, _ := run(t, dir, "--user", "ci-bot", "--output", "text", "show", "r1")
	if !strings.Contains(out, `Changes requested by alice: "say which part is broken"`) {
		t.Fatalf("card after revise:\n%s", out)
	}
	v, _ = as(t, dir, "ci-bot", 0, "resume", "r1", "--reason", "the fan is broken")
	if v.Draft.Version != 2 || v.Draft.Reason != "the fan is broken" || *v.Kind != "approval" {
		t.Fatalf("after the new reason: %+v", v.Draft)
	}
}

func TestTooManyRevisions(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "start", "m1", "C1", "--reason", "broken")
	for i := 2; i <= 5; i++ {
		v, _ := as(t, dir, "ci-bot", 0, "resume", "m1", "--action", "edit", "--reason", "take "+string(rune('0'+i)))
		if v.Draft.Version != i {
			t.Fatalf("edit %d: version %d", i, v.Draft.Version)
		}
	}
	v, _ := as(t, dir, "ci-bot", 0, "resume", "m1", "--action", "edit", "--reason", "take 6")
	if v.Status != "failed" || v.Error == nil || v.Error.Code != "too_many_revisions" {
		t.Fatalf("the edit to a 6th version: status %s error %+v", v.Status, v.Error)
	}
	if n := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id = 'm1'`); n != "5" {
		t.Fatalf("%s drafts, want 5", n)
	}
	if n := allApplications(t, dir); n != "0" {
		t.Fatalf("%s applications, want none", n)
	}
}

func TestTwoPersonApproval(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
	as(t, dir, "ci-bot", 0, "approvers", "grant", "bob")
	refused(t, dir, 2, "--approvals must be 1 or 2", "--user", "ci-bot", "start", "p0", "C1", "--reason", "x", "--approvals", "3")

	v, _ := as(t, dir, "ci-bot", 0, "start", "p1", "C1", "--reason", "broken", "--approvals", "2")
	if len(v.Interrupts) != 2 || v.Interrupts[0].Value.Approver != 1 || v.Interrupts[1].Value.Approver != 2 {
		t.Fatalf("two questions: %+v", v.Interrupts)
	}
	// The same input again is the same task; other approvals are other input.
	as(t, dir, "ci-bot", 0, "start", "p1", "C1", "--reason", "broken", "--approvals", "2")
	refused(t, dir, 3, "--approvals", "--user", "ci-bot", "start", "p1", "C1", "--reason", "broken")

	_, note := as(t, dir, "alice", 0, "resume", "p1", "--action", "approve")
	if !strings.Contains(note, "approver 1 of 2") {
		t.Fatalf("alice's approve says %q, want which question it answered", note)
	}
	if n := allApplications(t, dir); n != "0" {
		t.Fatalf("%s applications after one approval", n)
	}
	// The same person cannot give the second approval: the same approve
	// again is a retry that counts once (exit 0, still waiting); naming
	// the other question is refused.
	again, note := as(t, dir, "alice", 0, "resume", "p1", "--action", "approve")
	if again.Status != "waiting" || len(again.Decisions) != 1 || !strings.Contains(note, "another person") {
		t.Fatalf("alice's approve again: %s with %d decisions, note %q; want waiting, one decision, a note", again.Status, len(again.Decisions), note)
	}
	refused(t, dir, 3, "another person", "--user", "alice", "resume", "p1", "--action", "approve", "--interrupt", v.Interrupts[1].ID)
	if got := listedAs(t, dir, "alice", "--awaiting-me"); got != "" {
		t.Fatalf("alice awaiting after her approval: %q", got)
	}
	if got := listedAs(t, dir, "bob", "--awaiting-me"); got != "p1=ci-bot" {
		t.Fatalf("bob awaiting: %q", got)
	}
	done, _ := as(t, dir, "bob", 0, "resume", "p1", "--action", "approve", "--interrupt", v.Interrupts[1].ID)
	if done.Status != "done" || done.Result == nil || len(done.Decisions) != 2 {
		t.Fatalf("bob's approve: %+v", done)
	}
	if n := allApplications(t, dir); n != "1" {
		t.Fatalf("%s applications, want 1", n)
	}

	// One cancel ends it, whoever approved first.
	as(t, dir, "ci-bot", 0, "start", "p2", "C2", "--reason", "broken", "--approvals", "2")
	as(t, dir, "alice", 0, "resume", "p2", "--action", "approve")
	c, _ := as(t, dir, "bob", 0, "resume", "p2", "--action", "cancel")
	if c.Status != "cancelled" {
		t.Fatalf("bob's cancel after alice's approve: %+v", c)
	}
	as(t, dir, "ci-bot", 0, "start", "p3", "C3", "--reason", "broken", "--approvals", "2")
	c, _ = as(t, dir, "bob", 0, "resume", "p3", "--action", "cancel")
	if c.Status != "cancelled" || len(c.Decisions) != 1 {
		t.Fatalf("a first cancel: status %s, decisions %+v", c.Status, c.Decisions)
	}
	if n := allApplications(t, dir); n != "1" {
		t.Fatalf("%s applications after the cancels, want 1", n)
	}
}
