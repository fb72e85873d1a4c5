package e2e

// Approvals (docs/approvals.md "Answers and approvals"): two-person approval, the decision
// trail, and an approval cut short by a kill or a lost reply, counted once
// everywhere; on a data dir and, where the rule is the store's, on
// PostgreSQL.

import (
	"assistant/flow/returns"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// allApplications counts ci-bot's applications in dir's business file
// (the teaching orders hold some of their own).
func allApplications(t *testing.T, dir string) string {
	t.Helper()
	return query(t, dir, "business.sqlite", `SELECT count(*) FROM applications WHERE user = 'ci-bot'`)
}

// TestTwoPersonApproval: a task started with --approvals 2 asks two
// questions and needs two approvers other than its requester; the same
// person's approve again counts once, and one cancel ends the task
// whoever approved before.
func TestTwoPersonApproval(t *testing.T) {
	t.Parallel()
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

// crashedFirstApproval starts task with two approvals in a new data dir
// and kills alice's first approve of it at point (SIGKILL), leaving the
// task recorded running with its process gone.
func crashedFirstApproval(t *testing.T, task, point string) string {
	t.Helper()
	dir := twoApprovals(t, task)
	if _, code, _ := faultRun(t, dir, point, []string{"--user", "alice", "resume", task, "--action", "approve"}); code != 137 {
		t.Fatalf("alice's approve killed at %s: exit %d, want 137", point, code)
	}
	return dir
}

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
// grant before bob's approval makes it count no more at the submit (the
// grant is judged again then): bob's approval waits for carol's, and the
// submit happens once, the trail naming all three.
func TestKilledFirstApprovalIsInTheTrail(t *testing.T) {
	t.Parallel()
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
	waits, _ := as(t, dir, "bob", 0, "resume", "k1", "--action", "approve")
	if waits.Status != "waiting" || waits.Result != nil || trailOfView(waits) != "alice approve, bob approve" {
		t.Fatalf("bob's approve after alice's revoke: %s, decisions %q; want waiting", waits.Status, trailOfView(waits))
	}
	if got := query(t, dir, "business.sqlite", `SELECT not_counted <> '' FROM decisions WHERE task_id = 'k1' AND by_user = 'alice'`); got != "1" {
		t.Errorf("alice's approval is not marked not counted in the trail")
	}
	as(t, dir, "ci-bot", 0, "approvers", "grant", "carol")
	done, _ := as(t, dir, "carol", 0, "resume", "k1", "--action", "approve")
	if done.Status != "done" || done.Result == nil {
		t.Fatalf("carol's approve: %s, want done", done.Status)
	}
	if got := decisionsOf(t, dir, "k1"); got != "alice approve, bob approve, carol approve" {
		t.Errorf("business decisions of k1 = %q, want alice's, bob's and carol's approve once each", got)
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
	t.Parallel()
	for _, tc := range []struct {
		name  string
		again bool // alice approves again before bob
	}{{"AliceAgain", true}, {"BobCarriesIt", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
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
	t.Parallel()
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
	refused(t, dir, 2, "never asked", "--user", "bob", "resume", "r1", "--action", "approve", "--interrupt", "0123456789abcdef")
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

// TestKilledSingleApprovalEntersTheTrailWithItsSubmit: the approval of a
// task that needs one is recorded in the trail by submit; killed before
// that (its answer saved before review ran, or in the state after it),
// no view lists it yet: show and history read the same trail, which holds
// nothing; recover submits it, and then the trail holds it once.
func TestKilledSingleApprovalEntersTheTrailWithItsSubmit(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"before:review", "after-checkpoint:review"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ciBotOrders(t, dir)
			as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
			as(t, dir, "ci-bot", 0, "start", "s1", "C1", "--reason", "size")
			if _, code, _ := faultRun(t, dir, point, []string{"--user", "alice", "resume", "s1", "--action", "approve"}); code != 137 {
				t.Fatalf("alice's approve killed at %s: exit %d, want 137", point, code)
			}
			v, _ := as(t, dir, "ci-bot", 0, "show", "s1")
			h := mustRun(t, dir, "--user", "ci-bot", "history", "s1")
			if got, ds := trailOfView(v), h["decisions"].([]any); got != "" || len(ds) != 0 {
				t.Errorf("after the kill: show lists %q, history %v; want none in either (the trail holds none)", got, ds)
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

// TestBusyHintsNameNoStopToApprovers: while alice's first approval of a
// two-approval task holds it (paused after review, or before it), bob's
// approve is refused busy (exit 3) naming alice's winning answer, or
// saying to wait and show, and never offering `stop`, which bob may not
// run; bob's plain resume is told to wait too. The owner's plain resume
// may still offer stop. Once alice's process ends, bob's approve submits.
func TestBusyHintsNameNoStopToApprovers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ point, names string }{
		{"after:review", "approve by alice"},
		// Her answer is in the trail before it is saved (before review
		// runs), so the refusal names it too.
		{"before:review", "approve by alice"},
	} {
		t.Run(c.point, func(t *testing.T) {
			t.Parallel()
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

// TestCrashedFirstApprovalIsListedAsShown: a first of two approvals killed
// part-way leaves the record running; list, list --awaiting-me and list
// --status waiting --output csv show the task as show does (waiting for
// the other approval: alice's saved answer is in the trail, killed
// after review ran or before), so an approver's `list --awaiting-me
// --output csv | decide -` does not skip it (the requester's holds no row
// of it: their approve cannot count), and list writes nothing.
func TestCrashedFirstApprovalIsListedAsShown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		point       string
		aliceAwaits bool // her answer was not recorded
	}{
		{"after:review", false},
		{"before:review", false},
	} {
		t.Run(c.point, func(t *testing.T) {
			t.Parallel()
			dir := crashedFirstApproval(t, "k1", c.point)
			v, _ := as(t, dir, "ci-bot", 0, "show", "k1")
			if v.Status != "waiting" {
				t.Fatalf("show after the crash: %s, want waiting", v.Status)
			}
			before := fileSums(t, dir)
			if got := listed(t, dir, "--user", "ci-bot"); got != "k1=waiting" {
				t.Errorf("list = %q, want k1=waiting as show says", got)
			}
			if got := listedAs(t, dir, "bob", "--awaiting-me"); got != "k1=ci-bot" {
				t.Errorf("bob list --awaiting-me = %q, want k1=ci-bot", got)
			}
			want := ""
			if c.aliceAwaits {
				want = "k1=ci-bot"
			}
			if got := listedAs(t, dir, "alice", "--awaiting-me"); got != want {
				t.Errorf("alice list --awaiting-me = %q, want %q", got, want)
			}
			out, _, code := run(t, dir, "--user", "bob", "list", "--awaiting-me", "--output", "csv")
			if code != 0 || !strings.Contains(out, "\nk1,") {
				t.Errorf("bob list --awaiting-me --output csv: exit %d\n%s", code, out)
			}
			// The requester's approve of a task that needs two never
			// counts: their decide file holds no row of it.
			out, _, code = run(t, dir, "--user", "ci-bot", "list", "--status", "waiting", "--output", "csv")
			if code != 0 || strings.Contains(out, "\nk1,") {
				t.Errorf("the requester's list --status waiting --output csv: exit %d, want no row of k1\n%s", code, out)
			}
			sameFiles(t, dir, before, "list")
			v, _ = as(t, dir, "bob", 0, "resume", "k1", "--action", "approve")
			if c.aliceAwaits {
				v, _ = as(t, dir, "alice", 0, "resume", "k1", "--action", "approve")
			}
			if v.Status != "done" || v.Result == nil {
				t.Fatalf("the approvals after the crash: %+v", v)
			}
			verifyClean(t, dir)
		})
	}
}

// TestFirstApproverRetriesAndCancels: the first approver's same approve
// given again, after a crash that recorded it or after it was reported,
// is a retry: exit 0, the task still waiting, one decision; their cancel
// ends the task (one cancel ends it, whoever approved before) and their
// edit makes version 2; an approve of the other question named by
// --interrupt is still exit 3.
func TestFirstApproverRetriesAndCancels(t *testing.T) {
	t.Parallel()
	for _, point := range []string{"after:review", ""} {
		name := point
		if name == "" {
			name = "reported"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first := func(task string) string {
				if point == "" {
					dir := twoApprovals(t, task)
					as(t, dir, "alice", 0, "resume", task, "--action", "approve")
					return dir
				}
				return crashedFirstApproval(t, task, point)
			}
			dir := first("k1")
			v, note := as(t, dir, "alice", 0, "resume", "k1", "--action", "approve")
			if v.Status != "waiting" || len(v.Decisions) != 1 || !strings.Contains(note, "already") {
				t.Fatalf("alice's approve again: %s, %d decisions, note %q; want waiting, 1, a note", v.Status, len(v.Decisions), note)
			}
			card, _, _ := run(t, dir, "--user", "alice", "--output", "text", "show", "k1")
			if strings.Contains(card, "--action approve") || !strings.Contains(card, "another approver") || !strings.Contains(card, "--action cancel") {
				t.Errorf("alice's card after her approve offers what she may not do, or not what she may:\n%s", card)
			}
			v, _ = as(t, dir, "ci-bot", 0, "show", "k1")
			var other string
			for _, in := range v.Interrupts {
				if in.Value.Approver == 2 {
					other = in.ID
				}
			}
			if other != "" {
				refused(t, dir, 3, "another person", "--user", "alice", "resume", "k1", "--action", "approve", "--interrupt", other)
			}
			v, _ = as(t, dir, "alice", 0, "resume", "k1", "--action", "cancel")
			if v.Status != "cancelled" {
				t.Fatalf("alice's cancel after her approve: %s, want cancelled", v.Status)
			}
			verifyClean(t, dir)

			dir = first("k2")
			v, _ = as(t, dir, "alice", 0, "resume", "k2", "--action", "edit", "--reason", "wrong size")
			if v.Status != "waiting" || v.Draft == nil || v.Draft.Version != 2 {
				t.Fatalf("alice's edit after her approve: %+v", v)
			}
			as(t, dir, "alice", 0, "resume", "k2", "--action", "approve", "--version", "2")
			v, _ = as(t, dir, "bob", 0, "resume", "k2", "--action", "approve", "--draft", v.Draft.DraftID)
			if v.Status != "done" {
				t.Fatalf("version 2 approved by alice and bob: %s", v.Status)
			}
			verifyClean(t, dir)
		})
	}
}

// TestStoppedRunAnswerFromAnother: carol's approve of a task whose second
// approval (bob's) was killed at before:submit or after-checkpoint:review_2
// is exit 3 naming bob (with --interrupt naming either question or none),
// and changes nothing: the run is still stopped, bob's own approve again
// continues it and submits. With one approval, alice's approve after the
// owner's approve was killed at before:submit is exit 3 naming the owner;
// the owner's again submits.
func TestStoppedRunAnswerFromAnother(t *testing.T) {
	t.Parallel()
	for name, make := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := make(t)
			s.ownerOrders(t)
			for i, point := range []string{"before:submit", "after-checkpoint:review_2"} {
				task := []string{"r1", "r2"}[i]
				order := []string{"Z1", "Z2"}[i]
				t.Run("TwoApprovals/"+point, func(t *testing.T) {
					s.want(t, nil, 0, "owner", "start", task, order, "--reason", "size", "--approvals", "2", "--draft-ttl", "1h")
					sv, _ := s.want(t, nil, 0, "owner", "show", task)
					ins, _ := sv["interrupts"].([]any)
					if len(ins) != 2 {
						t.Fatalf("%s asks %d questions, want 2: %v", task, len(ins), sv["interrupts"])
					}
					i1 := ins[0].(map[string]any)["id"].(string)
					i2 := ins[1].(map[string]any)["id"].(string)
					s.want(t, nil, 0, "alice", "resume", task, "--action", "approve", "--interrupt", i1)
					if _, errOut, code := s.run(t, []string{"ASSISTANT_FAULT=" + point}, "bob", "resume", task, "--action", "approve", "--interrupt", i2); code == 0 {
						t.Fatalf("%s: bob's approve killed at %s: exit 0\n%s", task, point, errOut)
					}
					for _, c := range []struct {
						args []string
						says string
					}{
						{[]string{"resume", task, "--action", "approve", "--interrupt", i2}, "approve by bob"},
						{[]string{"resume", task, "--action", "approve", "--interrupt", i1}, "approve by alice"},
						{[]string{"resume", task, "--action", "approve"}, "approve by bob"},
						{[]string{"resume", task, "--action", "cancel"}, "approve by bob"},
					} {
						_, errOut := s.want(t, nil, 3, "carol", c.args...)
						if !strings.Contains(errOut, c.says) || !strings.Contains(errOut, "resume "+task+"` to continue it") || strings.Count(errOut, "\n") > 1 {
							t.Errorf("%s (%s): carol %v: %q, want one line saying %q and offering resume", task, point, c.args, errOut, c.says)
						}
					}
					// Alice naming bob's question is refused too.
					s.want(t, nil, 3, "alice", "resume", task, "--action", "approve", "--interrupt", i2)
					sv, _ = s.want(t, nil, 0, "owner", "show", task)
					if sv["status"] == "done" || sv["result"] != nil {
						t.Fatalf("%s (%s): after refused answers: status %v, result %v; want the run still stopped", task, point, sv["status"], sv["result"])
					}
					v, _ := s.want(t, nil, 0, "bob", "resume", task, "--action", "approve", "--interrupt", i2)
					if v["status"] != "done" {
						t.Errorf("%s (%s): bob's retry: status %v, want done", task, point, v["status"])
					}
					h, _ := s.want(t, nil, 0, "owner", "show", task)
					for _, d := range h["decisions"].([]any) {
						if by := d.(map[string]any)["by"]; by == "carol" {
							t.Errorf("%s (%s): carol is in the trail: %v", task, point, h["decisions"])
						}
					}
				})
			}

			// One approval: alice after the owner's approve killed at
			// before:submit.
			t.Run("OneApproval", func(t *testing.T) {
				s.want(t, nil, 0, "owner", "start", "r3", "Z3", "--reason", "size", "--draft-ttl", "1h")
				if _, errOut, code := s.run(t, []string{"ASSISTANT_FAULT=before:submit"}, "owner", "resume", "r3", "--action", "approve"); code == 0 {
					t.Fatalf("owner's approve killed at before:submit: exit 0\n%s", errOut)
				}
				for _, action := range []string{"approve", "cancel"} {
					_, errOut := s.want(t, nil, 3, "alice", "resume", "r3", "--action", action)
					if !strings.Contains(errOut, "approve by owner") {
						t.Errorf("alice's %s after owner's approve: %q, want it to name owner's approve", action, errOut)
					}
				}
				if sv, _ := s.want(t, nil, 0, "owner", "show", "r3"); sv["status"] == "done" {
					t.Fatalf("r3 done after alice's refused approve")
				}
				if v, _ := s.want(t, nil, 0, "owner", "resume", "r3", "--action", "approve"); v["status"] != "done" {
					t.Errorf("owner's retry: status %v, want done", v["status"])
				}
			})
		})
	}
}

// TestLosingApproverIsToldTheTaskWasAnswered: two approvals race; the
// winner (machine A, paused before submit, holding the lease) has taken
// the question; the loser (machine B) is refused with exit 3 and told
// that the task was answered, by whom, not to wait for a question that
// was already asked and answered. On PostgreSQL and on a data dir.
func TestLosingApproverIsToldTheTaskWasAnswered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags func(t *testing.T) []string
	}{
		{"postgres", func(t *testing.T) []string { return []string{"--store", newPGStore(t).url} }},
		{"datadir", func(t *testing.T) []string { return []string{"--data", filepath.Join(dir, "data")} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			flags := append(tc.flags(t), "--output", "json")
			run := func(env []string, args ...string) *exec.Cmd {
				c := exec.Command(assistantBin(), append(flags, args...)...)
				c.Env = append(os.Environ(), env...)
				return c
			}
			if out, err := run(hostA, "start", "r1", "A3003", "--reason", "too small").CombinedOutput(); err != nil {
				t.Fatalf("start: %v\n%s", err, out)
			}
			// The winner, on A, parked holding the lease.
			startPaused(t, run(append([]string{returns.FaultEnv + "=before:submit" + returns.FaultPause}, hostA...), "resume", "r1", "--action", "approve"), "before:submit")
			b := run(hostB, "resume", "r1", "--action", "approve")
			var stderr bytes.Buffer
			b.Stderr = &stderr
			code := exitOf(t, b.Run())
			msg := stderr.String()
			if code != 3 || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "was answered (approve by demo-user at ") ||
				strings.Contains(msg, "ask its question") {
				t.Errorf("the losing approver: exit %d, %q; want 3 and one line saying the task was answered (approve by demo-user)", code, msg)
			}
		})
	}
}

// TestCarriedOutApprovalNamesItsStore: on PostgreSQL the note of an approval the
// trail holds and the head lacks (carried out by the approver's approve
// again) names the schema business, not business.sqlite; on a data dir it
// names business.sqlite.
func TestCarriedOutApprovalNamesItsStore(t *testing.T) {
	t.Parallel()
	for name, make := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := make(t)
			s.ownerOrders(t)
			s.want(t, nil, 0, "owner", "start", "r1", "Z1", "--reason", "size", "--approvals", "2", "--draft-ttl", "1h")
			// Killed after the trail holds alice's approval, before it
			// is saved at the head.
			if _, errOut, code := s.run(t, []string{"ASSISTANT_FAULT=answer:after-trail"}, "alice", "resume", "r1", "--action", "approve"); code == 0 {
				t.Fatalf("alice's approve with a crash after the trail: exit 0, %s", errOut)
			}
			_, errOut := s.want(t, nil, 0, "alice", "resume", "r1", "--action", "approve")
			want, not := "recorded in the schema business", "business.sqlite"
			if s.dir != "" {
				want, not = "recorded in business.sqlite", "schema"
			}
			if !strings.Contains(errOut, want) || strings.Contains(errOut, not) {
				t.Errorf("alice's approve carried out: %q, want %q, not %q", errOut, want, not)
			}
		})
	}
}
