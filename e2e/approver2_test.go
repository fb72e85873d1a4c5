package e2e

import (
	"strings"
	"testing"
)

// The tests of this file are what an approver sees and may do on a task
// that needs two approvals, each in separate processes of the built
// binary: an approval killed once it was saved is in the decision trail
// and counts the same everywhere; a lost reply retried with --interrupt;
// the card of an expired draft offers a grantee only what works for them.

// twoApproverTask starts ci-bot's task id on order with --approvals 2, with
// alice and bob granted, and returns its view.
func twoApproverTask(t *testing.T, dir, id, order string) approvalView {
	t.Helper()
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
	as(t, dir, "ci-bot", 0, "approvers", "grant", "bob")
	v, _ := as(t, dir, "ci-bot", 0, "start", id, order, "--reason", "size", "--approvals", "2")
	if len(v.Interrupts) != 2 {
		t.Fatalf("start %s: %d questions, want 2", id, len(v.Interrupts))
	}
	return v
}

// decisionsOf is the trail of task id in dir's business file: "by action"
// of each decision, oldest first.
func decisionsOf(t *testing.T, dir, id string) string {
	t.Helper()
	return query(t, dir, "business.sqlite", `SELECT coalesce(group_concat(by_user || ' ' || action, ', '), '') FROM (SELECT by_user, action FROM decisions WHERE task_id = ? ORDER BY at, rowid)`, id)
}

// trailOfView is "by action" of each decision of v.
func trailOfView(v approvalView) string {
	var out []string
	for _, d := range v.Decisions {
		out = append(out, d.By+" "+d.Action)
	}
	return strings.Join(out, ", ")
}

// aliceCountsOnce checks, after alice's first of two approvals of task id
// (however her command ended), that every reader counts it as the run
// does: the trail (show, history, the business file) names her once,
// list --awaiting-me (JSON and CSV) leaves the task out for her and keeps
// it for bob, and her card offers her no approve.
func aliceCountsOnce(t *testing.T, dir, id string) {
	t.Helper()
	if got := decisionsOf(t, dir, id); got != "alice approve" {
		t.Errorf("business decisions of %s = %q, want alice's approve", id, got)
	}
	v, _ := as(t, dir, "ci-bot", 0, "show", id)
	if got := trailOfView(v); got != "alice approve" || v.Status != "waiting" {
		t.Errorf("show %s: %s, decisions %q; want waiting, alice's approve", id, v.Status, got)
	}
	h, _, _ := run(t, dir, "--user", "alice", "history", id)
	if !strings.Contains(h, `"by": "alice"`) {
		t.Errorf("history %s does not name alice's approve:\n%s", id, h)
	}
	if got := listedAs(t, dir, "alice", "--awaiting-me"); got != "" {
		t.Errorf("alice list --awaiting-me = %q, want nothing (she approved)", got)
	}
	if got := listedAs(t, dir, "bob", "--awaiting-me"); got != id+"=ci-bot" {
		t.Errorf("bob list --awaiting-me = %q, want %s", got, id)
	}
	csv, _, code := run(t, dir, "--user", "alice", "list", "--awaiting-me", "--output", "csv")
	if code != 0 || strings.Contains(csv, id+",") {
		t.Errorf("alice list --awaiting-me --output csv: exit %d\n%s", code, csv)
	}
	card, _, _ := run(t, dir, "--user", "alice", "--output", "text", "show", id)
	if strings.Contains(card, "--action approve") || !strings.Contains(card, "another approver gives this approval") {
		t.Errorf("alice's card offers her an approve:\n%s", card)
	}
}

// TestKilledFirstApprovalIsInTheTrail: alice's first of two approvals,
// killed after her command saved it (before the review node ran), is in
// the decision trail at once and counts once everywhere; a revoke of her
// grant before bob's approval leaves it counted (it was given while
// granted); the submit happens once, the trail naming both.
func TestKilledFirstApprovalIsInTheTrail(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	v := twoApproverTask(t, dir, "k1", "C1")
	if _, code, _ := faultRun(t, dir, "before:review", []string{"--user", "alice", "resume", "k1", "--action", "approve"}); code != 137 {
		t.Fatalf("alice's approve killed before review: exit %d, want 137", code)
	}
	aliceCountsOnce(t, dir, "k1")
	// Her saved approval counts: approving the other question is refused.
	refused(t, dir, 3, "another person", "--user", "alice", "resume", "k1", "--action", "approve", "--interrupt", v.Interrupts[1].ID)
	// A plain resume and recover leave it counted once.
	as(t, dir, "ci-bot", 0, "resume", "k1")
	as(t, dir, "ci-bot", 0, "recover")
	if got := decisionsOf(t, dir, "k1"); got != "alice approve" {
		t.Errorf("after resume and recover: decisions %q", got)
	}

	as(t, dir, "ci-bot", 0, "approvers", "revoke", "alice")
	done, _ := as(t, dir, "bob", 0, "resume", "k1", "--action", "approve")
	if done.Status != "done" || done.Result == nil || trailOfView(done) != "alice approve, bob approve" {
		t.Fatalf("bob's approve: %s, decisions %q", done.Status, trailOfView(done))
	}
	if got := decisionsOf(t, dir, "k1"); got != "alice approve, bob approve" {
		t.Errorf("business decisions of k1 = %q, want alice's and bob's approve once each", got)
	}
	if n := allApplications(t, dir); n != "1" {
		t.Errorf("%s applications, want 1", n)
	}
	verifyClean(t, dir)
}

// TestApprovalRecordedButNotSavedCounts: alice's approve killed after
// it was recorded in the trail and before it was saved at the head
// (answer:after-trail) counts as given: her approve again carries it out
// under its own decision id (recorded once), and so does bob's approve
// when she does not come back: both submit once with the two approvals.
func TestApprovalRecordedButNotSavedCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		again bool // alice approves again before bob
	}{{"AliceAgain", true}, {"BobCarriesIt", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ciBotOrders(t, dir)
			twoApproverTask(t, dir, "a1", "C1")
			if _, code, _ := faultRun(t, dir, "answer:after-trail", []string{"--user", "alice", "resume", "a1", "--action", "approve"}); code != 137 {
				t.Fatalf("alice's approve killed after the trail: exit %d, want 137", code)
			}
			aliceCountsOnce(t, dir, "a1")
			if tc.again {
				again, note := as(t, dir, "alice", 0, "resume", "a1", "--action", "approve")
				if again.Status != "waiting" || trailOfView(again) != "alice approve" || !strings.Contains(note, "approver 1 of 2") {
					t.Fatalf("alice's approve again: %s, decisions %q, note %q", again.Status, trailOfView(again), note)
				}
				aliceCountsOnce(t, dir, "a1")
			}
			done, _ := as(t, dir, "bob", 0, "resume", "a1", "--action", "approve")
			if done.Status != "done" || done.Result == nil {
				t.Fatalf("bob's approve: %s, want done", done.Status)
			}
			if got := decisionsOf(t, dir, "a1"); got != "alice approve, bob approve" {
				t.Errorf("business decisions of a1 = %q, want alice's and bob's approve once each", got)
			}
			if n := allApplications(t, dir); n != "1" {
				t.Errorf("%s applications, want 1", n)
			}
			verifyClean(t, dir)
		})
	}
}

// TestInterruptRetryOfAnAnsweredQuestion: an approve with --interrupt
// given again after its reply was lost is exit 0 (it counts once), as
// without --interrupt; another person's answer to that question is a
// conflict naming who answered it (exit 3); an interrupt id the task
// never asked stays exit 2; once done the retry is exit 0, reused.
func TestInterruptRetryOfAnAnsweredQuestion(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	v := twoApproverTask(t, dir, "r1", "C1")
	i1, i2 := v.Interrupts[0].ID, v.Interrupts[1].ID
	as(t, dir, "alice", 0, "resume", "r1", "--action", "approve", "--interrupt", i1)
	again, note := as(t, dir, "alice", 0, "resume", "r1", "--action", "approve", "--interrupt", i1)
	if again.Status != "waiting" || trailOfView(again) != "alice approve" || !strings.Contains(note, "already") {
		t.Fatalf("alice's approve --interrupt again: %s, decisions %q, note %q", again.Status, trailOfView(again), note)
	}
	refused(t, dir, 3, "answered already (approve by alice", "--user", "bob", "resume", "r1", "--action", "approve", "--interrupt", i1)
	refused(t, dir, 2, "is not pending", "--user", "bob", "resume", "r1", "--action", "approve", "--interrupt", "0123456789abcdef")
	done, _ := as(t, dir, "bob", 0, "resume", "r1", "--action", "approve", "--interrupt", i2)
	if done.Status != "done" || done.Result == nil {
		t.Fatalf("bob's approve: %s", done.Status)
	}
	out, _, code := run(t, dir, "--user", "alice", "resume", "r1", "--action", "approve", "--interrupt", i1)
	if code != 0 || !strings.Contains(out, `"reused": true`) {
		t.Errorf("alice's retry once done: exit %d\n%s", code, out)
	}
	if got := decisionsOf(t, dir, "r1"); got != "alice approve, bob approve" {
		t.Errorf("business decisions of r1 = %q", got)
	}
	verifyClean(t, dir)
}

// TestExpiredCardOffersAGranteeWhatWorks: the card of an expired draft
// offers its owner a new request, and a grantee, whose start of the
// owner's order would be refused, only recover, saying the owner can
// start one; the command offered works for them.
func TestExpiredCardOffersAGranteeWhatWorks(t *testing.T) {
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

// TestKilledSingleApprovalIsShown: the approval of a task that needs one
// is recorded in the trail by submit; killed before that (its answer
// saved before review ran, or in the state after it), show lists it all
// the same, as it counts (recover submits it), and once submitted the
// trail holds it once.
func TestKilledSingleApprovalIsShown(t *testing.T) {
	for _, point := range []string{"before:review", "after-checkpoint:review"} {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			ciBotOrders(t, dir)
			as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
			as(t, dir, "ci-bot", 0, "start", "s1", "C1", "--reason", "size")
			if _, code, _ := faultRun(t, dir, point, []string{"--user", "alice", "resume", "s1", "--action", "approve"}); code != 137 {
				t.Fatalf("alice's approve killed at %s: exit %d, want 137", point, code)
			}
			v, _ := as(t, dir, "ci-bot", 0, "show", "s1")
			if got := trailOfView(v); got != "alice approve" {
				t.Errorf("show s1 after the kill: decisions %q, want alice's approve", got)
			}
			as(t, dir, "ci-bot", 0, "recover")
			v, _ = as(t, dir, "ci-bot", 0, "show", "s1")
			if v.Status != "done" || trailOfView(v) != "alice approve" || decisionsOf(t, dir, "s1") != "alice approve" {
				t.Errorf("after recover: %s, decisions %q, trail %q; want done, alice's approve once", v.Status, trailOfView(v), decisionsOf(t, dir, "s1"))
			}
			verifyClean(t, dir)
		})
	}
}
