package e2e

// resume (docs/approvals.md "Answering a question"): answers to a waiting task (approve,
// edit, revise, cancel), answers that race, and answers to a task that is
// busy or has ended.

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentApprovals: ten approvals of one waiting task at once,
// on a data dir and on PostgreSQL alike, all exit 0: one submits the
// application, every other waits for the process that holds the task and
// finds its approval applied for the same draft (reused: true). One
// application always (docs/approvals.md "Answers that race").
func TestConcurrentApprovals(t *testing.T) {
	t.Parallel()
	for name, store := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := store(t)
			s.want(t, nil, 0, "demo-user", "start", "c10", "A3003", "--reason", "too small")
			const n = 10
			type outcome struct {
				code   int
				reused bool
				stderr string
			}
			outcomes := make([]outcome, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out, stderr, code := s.run(t, nil, "demo-user", "resume", "c10", "--action", "approve")
					outcomes[i] = outcome{code, strings.Contains(out, `"reused": true`), stderr}
				}()
			}
			wg.Wait()
			fresh := 0
			for i, o := range outcomes {
				if o.code != 0 {
					t.Errorf("approve %d exited %d, want 0: %s", i, o.code, o.stderr)
				}
				if o.code == 0 && !o.reused {
					fresh++
				}
			}
			if fresh != 1 {
				t.Errorf("%d approvals made an application (reused: false), want 1", fresh)
			}
			v, _ := s.want(t, nil, 0, "demo-user", "show", "c10")
			if v["stage"] != "submitted" {
				t.Errorf("stage = %v, want submitted", v["stage"])
			}
			if s.dir == "" {
				s.pg.wantApps(t, "c10", "1")
			} else if got := applications(t, s.dir, "c10"); got != "1" {
				t.Errorf("applications = %s, want 1", got)
			}
		})
	}
}

// TestEditMakesANewVersion: an edit makes draft version 2, which the
// question then names; an approve of version 1 is stale (exit 3); the
// approve of version 2 submits once.
func TestEditMakesANewVersion(t *testing.T) {
	t.Parallel()
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
	// So is the question version 1 asked, named by its interrupt id, while
	// the task waits and once it has ended.
	refused(t, dir, 3, "stale", "--user", "ci-bot", "resume", "e1", "--action", "approve", "--version", "2", "--interrupt", v1.Interrupts[0].ID)
	if sup := query(t, dir, "business.sqlite", `SELECT superseded_at IS NOT NULL FROM drafts WHERE draft_id = ?`, v1.Draft.DraftID); sup != "1" {
		t.Fatalf("version 1 superseded: %s", sup)
	}
	done, _ := as(t, dir, "ci-bot", 0, "resume", "e1", "--action", "approve", "--version", "2")
	if done.Status != "done" || done.Result == nil {
		t.Fatalf("approve of version 2: %+v", done)
	}
	as(t, dir, "ci-bot", 0, "resume", "e1", "--action", "approve") // again: reused
	refused(t, dir, 3, "stale", "--user", "ci-bot", "resume", "e1", "--action", "approve", "--interrupt", v1.Interrupts[0].ID)
	if n := allApplications(t, dir); n != "1" {
		t.Fatalf("%s applications, want 1", n)
	}
	if n := query(t, dir, "business.sqlite", `SELECT draft_id FROM applications WHERE user = 'ci-bot'`); n != v2.Draft.DraftID {
		t.Fatalf("application of draft %s, want version 2's %s", n, v2.Draft.DraftID)
	}
}

// TestApproveNamesTheVersion: once a draft has more than one version, an
// approve must name the draft or the version it approves. A bare approve,
// and a decide row without its draft, are refused (exit 2, the hint the
// approve naming the draft, nothing changed); the text card offers that
// approve; a bare approve of version 1 submits.
func TestApproveNamesTheVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "start", "v1only", "C1", "--reason", "broken")
	as(t, dir, "ci-bot", 0, "start", "n1", "C2", "--reason", "broken")
	as(t, dir, "ci-bot", 0, "start", "n2", "C3", "--reason", "broken")
	drafts := map[string]string{}
	for _, task := range []string{"n1", "n2"} {
		v, _ := as(t, dir, "ci-bot", 0, "resume", task, "--action", "edit", "--reason", "wrong size")
		drafts[task] = v.Draft.DraftID
	}
	refused(t, dir, 2, "--draft "+drafts["n1"], "--user", "ci-bot", "resume", "n1", "--action", "approve")
	card, _, _ := run(t, dir, "--user", "ci-bot", "--output", "text", "show", "n1")
	if !strings.Contains(card, "resume n1 --action approve --draft "+drafts["n1"]) {
		t.Errorf("the card does not offer the approve naming the draft %s:\n%s", drafts["n1"], card)
	}
	if v, _ := as(t, dir, "ci-bot", 0, "resume", "v1only", "--action", "approve"); v.Status != "done" {
		t.Errorf("bare approve of version 1: %s, want done", v.Status)
	}
	path := filepath.Join(t.TempDir(), "decisions.csv")
	rows := "task,action,draft\nn1,approve,\nn2,approve," + drafts["n2"] + "\n"
	if err := os.WriteFile(path, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, stderr, code := decide(t, dir, "", []string{"ASSISTANT_USER=ci-bot"}, path)
	if code != 0 {
		t.Fatalf("decide: exit %d, %s", code, stderr)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].ErrorCode != "invalid_input" || rep.Rows[1].Outcome != "submitted" {
		t.Fatalf("decide rows %+v: want n1 invalid_input, n2 submitted", rep.Rows)
	}
	for task, want := range map[string]string{"n1": "waiting", "n2": "done"} {
		if got := record(t, dir, task, "status"); got != want {
			t.Errorf("%s is %s after decide, want %s", task, got, want)
		}
	}
}

// TestReviseAsksTheOwner: an approver's revise asks the owner for a new
// reason, with the approver's comment on the card; the new reason makes
// draft version 2.
func TestReviseAsksTheOwner(t *testing.T) {
	t.Parallel()
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

// TestTooManyRevisions: an edit to a sixth draft version ends the task
// failed (too_many_revisions), with five drafts and no application.
func TestTooManyRevisions(t *testing.T) {
	t.Parallel()
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

// TestAnswerToAnEndedTask: an answer to a task that has ended is
// the answer it recorded (exit 0, the outcome) or exit 3 with one line
// saying what the task ended as; a --draft that is not the task's is exit
// 2; none changes a file.
func TestAnswerToAnEndedTask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c1 := mustRun(t, dir, "start", "c1", "A3003", "--reason", "size")
	draft := c1["draft"].(map[string]any)["draft_id"].(string)
	mustRun(t, dir, "resume", "c1", "--action", "cancel")
	refused(t, dir, 2, "--draft d_wrong", "resume", "c1", "--action", "approve", "--draft", "d_wrong")
	refused(t, dir, 2, "--draft d_wrong", "resume", "c1", "--action", "cancel", "--draft", "d_wrong")
	refused(t, dir, 3, "task c1 ended as cancelled; the answer approve changes nothing", "resume", "c1", "--action", "approve")
	refused(t, dir, 3, "task c1 ended as cancelled", "resume", "c1", "--action", "approve", "--draft", draft)
	if v := mustRun(t, dir, "resume", "c1", "--action", "cancel", "--draft", draft); v["status"] != "cancelled" {
		t.Errorf("cancel again: %v, want the outcome cancelled", v["status"])
	}

	mustRun(t, dir, "start", "d1", "A3004", "--reason", "size")
	mustRun(t, dir, "resume", "d1", "--action", "approve")
	if v := mustRun(t, dir, "resume", "d1", "--action", "approve"); v["status"] != "done" || v["result"].(map[string]any)["reused"] != true {
		t.Errorf("approve again: %v %v, want done with the application reused", v["status"], v["result"])
	}
	refused(t, dir, 3, "task d1 ended as done; the answer cancel changes nothing", "resume", "d1", "--action", "cancel")
	if applications(t, dir, "c1") != "0" || applications(t, dir, "d1") != "1" {
		t.Errorf("applications: c1 %s, d1 %s; want 0 and 1", applications(t, dir, "c1"), applications(t, dir, "d1"))
	}
	verifyClean(t, dir)
}

// TestReturnWindowClosesWhileTheDraftWaits: the order's return window
// closes while its draft waits for approval: approve ends the request
// failed with return_window_closed, nothing submitted.
func TestReturnWindowClosesWhileTheDraftWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	closes := time.Now().Add(3 * time.Second)
	shop := filepath.Join(t.TempDir(), "shop.csv")
	delivered := closes.Add(-30 * 24 * time.Hour).UTC().Format(time.RFC3339)
	if err := os.WriteFile(shop, []byte("order_id,user,item,delivered_at,final_sale\nW1,demo-user,Lamp,"+delivered+",false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "orders", "import", shop)
	if v := mustRun(t, dir, "start", "t", "W1", "--reason", "too dim"); v["status"] != "waiting" {
		t.Fatalf("start: %v %v, want waiting (the window is still open)", v["status"], v["error"])
	}
	time.Sleep(time.Until(closes) + 500*time.Millisecond) // the window closes on the wall clock
	v := mustRun(t, dir, "resume", "t", "--action", "approve")
	e, _ := v["error"].(map[string]any)
	if v["status"] != "failed" || e == nil || e["code"] != "return_window_closed" {
		t.Fatalf("approve after the window closed: status %v, error %v; want failed, return_window_closed", v["status"], v["error"])
	}
	if n := appsOf(t, dir, "t"); n != "0" {
		t.Fatalf("%s applications, want 0", n)
	}
	verifyClean(t, dir)
}

// TestAnswerWhileRunning answers a task that a live process is running
// part-way (the lease names this test process, alive, on this host): the
// answer is refused as busy (exit 3), not as "stopped part-way".
func TestAnswerWhileRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runningElsewhere(t, dir)
	_, stderr, code := run(t, dir, "resume", "t1", "--action", "approve")
	if code != 3 || !strings.Contains(stderr, "being run by process") {
		t.Errorf("answer to a task run by a live process: exit %d, %q; want 3, busy", code, stderr)
	}
}

// runningElsewhere leaves task t1 (order A3001, reason "too small") in dir
// part-way, after its lookup, held by this test process: alive, on this
// host, as a process still driving it would be.
func runningElsewhere(t *testing.T, dir string) {
	t.Helper()
	if _, code, _ := faultRun(t, dir, "after-checkpoint:lookup", []string{"start", "t1", "A3001", "--reason", "too small"}); code != 137 {
		t.Fatalf("start exited %d, want 137 (killed at the point)", code)
	}
	if err := setLease(dir, "t1", os.Getpid(), time.Hour); err != nil {
		t.Fatal(err)
	}
}

// TestEndedTaskChecksInterrupt: on a task that has ended (done, cancelled,
// failed), --interrupt naming a question someone else answered is exit 3
// saying who; an id the task never asked is exit 2; the person who
// answered it giving the same answer again is a retry, exit 0 (on a done
// task the application, "reused": true); carol, who never approved,
// never gets the application.
func TestEndedTaskChecksInterrupt(t *testing.T) {
	t.Parallel()
	for name, make := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := make(t)
			s.ownerOrders(t)

			// Done: alice and bob approved, without --interrupt.
			s.want(t, nil, 0, "owner", "start", "r1", "Z1", "--reason", "size", "--approvals", "2", "--draft-ttl", "1h")
			s.approveAs(t, nil, "alice", "r1")
			bobs := s.approveAs(t, nil, "bob", "r1")
			_, errOut := s.want(t, nil, 3, "carol", "resume", "r1", "--action", "approve", "--interrupt", bobs)
			if !strings.Contains(errOut, "answered already (approve by bob") {
				t.Errorf("carol naming bob's question: %q, want it to say bob answered it", errOut)
			}
			_, errOut = s.want(t, nil, 3, "alice", "resume", "r1", "--action", "approve", "--interrupt", bobs)
			if !strings.Contains(errOut, "approve by bob") {
				t.Errorf("alice naming bob's question: %q, want it to say bob answered it", errOut)
			}
			s.want(t, nil, 2, "alice", "resume", "r1", "--action", "approve", "--interrupt", "ffffffffffffffff")
			v, _ := s.want(t, nil, 0, "bob", "resume", "r1", "--action", "approve", "--interrupt", bobs)
			if res, _ := v["result"].(map[string]any); res == nil || res["reused"] != true {
				t.Errorf("bob's approve again of his question: %v, want the application, reused", v["result"])
			}

			// Cancelled: alice's cancel answers both questions.
			s.want(t, nil, 0, "owner", "start", "r2", "Z2", "--reason", "size", "--approvals", "2", "--draft-ttl", "1h")
			sv, _ := s.want(t, nil, 0, "owner", "show", "r2")
			ins, _ := sv["interrupts"].([]any)
			if len(ins) != 2 {
				t.Fatalf("r2 asks %d questions, want 2: %v", len(ins), sv["interrupts"])
			}
			second := ins[1].(map[string]any)["id"].(string)
			s.want(t, nil, 0, "alice", "resume", "r2", "--action", "cancel")
			_, errOut = s.want(t, nil, 3, "bob", "resume", "r2", "--action", "cancel", "--interrupt", second)
			if !strings.Contains(errOut, "answered already (cancel by alice") {
				t.Errorf("bob naming a question alice's cancel answered: %q, want it to say alice did", errOut)
			}
			s.want(t, nil, 2, "bob", "resume", "r2", "--action", "cancel", "--interrupt", "ffffffffffffffff")
			s.want(t, nil, 0, "alice", "resume", "r2", "--action", "cancel", "--interrupt", second)

			// Failed: bob's approve comes after the draft expired: his
			// clock two hours on, on a data dir; on PostgreSQL, which
			// stamps by the server's clock, a 3s draft and a wait.
			ttl, late := "1h", []string{"ASSISTANT_FAULT=clock:+2h"}
			if s.dir == "" {
				ttl, late = "3s", nil
			}
			begun := time.Now()
			s.want(t, nil, 0, "owner", "start", "r3", "Z3", "--reason", "size", "--approvals", "2", "--draft-ttl", ttl)
			alices := s.approveAs(t, nil, "alice", "r3")
			if late == nil {
				if time.Since(begun) > 2500*time.Millisecond {
					t.Skip("start and alice's approve took over 2.5s; the 3s draft may expire before it is asked")
				}
				// Until show, by the server's clock, reads the draft
				// expired: a sleep measured from before start would not
				// cover a start that was slow to prepare it.
				eventually(t, "r3's draft expires", func() bool {
					v, _ := s.want(t, nil, 0, "owner", "show", "r3")
					d, _ := v["draft"].(map[string]any)
					return d != nil && d["expired"] == true
				})
			}
			if v, _ := s.want(t, late, 0, "bob", "resume", "r3", "--action", "approve"); v["status"] != "failed" {
				t.Fatalf("bob's approve after the draft expired: status %v, want failed", v["status"])
			}
			s.want(t, nil, 2, "carol", "resume", "r3", "--action", "approve", "--interrupt", "ffffffffffffffff")
			_, errOut = s.want(t, nil, 3, "carol", "resume", "r3", "--action", "approve", "--interrupt", alices)
			if !strings.Contains(errOut, "approve by alice") {
				t.Errorf("carol naming alice's question on a failed task: %q, want it to say alice answered it", errOut)
			}
		})
	}
}
