package e2e

// Approvers and their scope (docs/approvals.md "Approvers"): who may answer a
// task, what a person without the grant is told, and why an approval whose
// grant was revoked before its submit no longer counts.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"assistant/flow/returns"
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

// trailMarks is task's decision trail as show prints it on the store s:
// "by action" per answer, with "(not counted: why)" after an approval a
// submit no longer counted, joined by ", ".
func (s cliStore) trailMarks(t *testing.T, task string) string {
	t.Helper()
	v, _ := s.want(t, nil, 0, "owner", "show", task)
	ds, _ := v["decisions"].([]any)
	parts := make([]string, 0, len(ds))
	for _, raw := range ds {
		d, _ := raw.(map[string]any)
		p := fmt.Sprintf("%v %v", d["by"], d["action"])
		if why, ok := d["not_counted_because"].(string); ok {
			p += " (not counted: " + why + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// revokedPath is a way an approval of alice, granted, comes to be carried
// out after the owner revoked her grant: setup brings task t there (her
// approval recorded, the revoke made), carry runs the command that
// carries it out (and gives the other approval of a task that needs two)
// and returns its stderr, and next is who approves once it waits again.
type revokedPath struct {
	name      string
	approvals string
	setup     func(t *testing.T, s cliStore)
	carry     func(t *testing.T, s cliStore) string
	next      string
}

var revokedPaths = []revokedPath{
	{"OneApproval/Recover", "1", func(t *testing.T, s cliStore) {
		if _, _, code := s.run(t, []string{returns.FaultEnv + "=before:submit"}, "alice", "resume", "t", "--action", "approve"); code != 137 {
			t.Fatalf("alice's approve killed before its submit: exit %d, want 137", code)
		}
		s.want(t, nil, 0, "owner", "approvers", "revoke", "alice")
	}, recoverSaysWhy, "owner"},
	{"OneApproval/Resume", "1", func(t *testing.T, s cliStore) {
		if _, _, code := s.run(t, []string{returns.FaultEnv + "=before:submit"}, "alice", "resume", "t", "--action", "approve"); code != 137 {
			t.Fatalf("alice's approve killed before its submit: exit %d, want 137", code)
		}
		s.want(t, nil, 0, "owner", "approvers", "revoke", "alice")
	}, func(t *testing.T, s cliStore) string {
		// The owner continues the killed run: its submit no longer
		// counts alice's approval, and says so as recover does.
		_, stderr := s.want(t, nil, 0, "owner", "resume", "t")
		if !strings.Contains(stderr, "the approval of alice no longer counts (revoked at ") || !strings.Contains(stderr, "the task waits for another approval") {
			t.Errorf("resume's stderr %q; want it to say alice's approval no longer counts and t waits for another approval", stderr)
		}
		return stderr
	}, "owner"},
	{"TwoApprovals/Resume", "2", func(t *testing.T, s cliStore) {
		s.approveAs(t, nil, "alice", "t")
		s.want(t, nil, 0, "owner", "approvers", "revoke", "alice")
	}, func(t *testing.T, s cliStore) string {
		_, stderr := s.want(t, nil, 0, "bob", "resume", "t", "--action", "approve")
		if !strings.Contains(stderr, "approved as approver 2 of 2") || !strings.Contains(stderr, "the approval of alice no longer counts (revoked at") ||
			!strings.Contains(stderr, "the task waits for another approval") {
			t.Errorf("bob's approve says %q; want his approval taken, alice's no longer counted, the task waiting", stderr)
		}
		return stderr
	}, "carol"},
	{"TwoApprovals/Recover", "2", func(t *testing.T, s cliStore) {
		s.approveAs(t, nil, "alice", "t")
		if _, _, code := s.run(t, []string{returns.FaultEnv + "=before:submit"}, "bob", "resume", "t", "--action", "approve"); code != 137 {
			t.Fatalf("bob's approve killed before its submit: exit %d, want 137", code)
		}
		s.want(t, nil, 0, "owner", "approvers", "revoke", "alice")
	}, recoverSaysWhy, "carol"},
	{"TwoApprovals/Decide", "2", func(t *testing.T, s cliStore) {
		s.approveAs(t, nil, "alice", "t")
		s.want(t, nil, 0, "owner", "approvers", "revoke", "alice")
	}, func(t *testing.T, s cliStore) string {
		file := filepath.Join(t.TempDir(), "decide.csv")
		if err := os.WriteFile(file, []byte("task,action\nt,approve\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		v, stderr := s.want(t, nil, 0, "bob", "decide", file)
		rows, _ := v["rows"].([]any)
		if len(rows) != 1 || rows[0].(map[string]any)["outcome"] == "submitted" {
			t.Fatalf("bob's decide row: %v; want one row, not submitted", rows)
		}
		// The row says what resume and recover say: taken, and why the
		// task waits for another approval.
		row := rows[0].(map[string]any)
		if why, _ := row["error"].(string); row["outcome"] != "draft_ready" || row["error_code"] != "approval_not_counted" ||
			!strings.Contains(why, "the approval of alice no longer counts (revoked at") || !strings.Contains(why, "the task waits for another approval") {
			t.Errorf("bob's decide row: %v; want draft_ready, approval_not_counted, saying alice's approval no longer counts", row)
		}
		return stderr
	}, "carol"},
}

// recoverSaysWhy runs recover as the owner and checks that it says, on
// stderr and in its text report's line of task t, that the approval it
// carried out no longer counts and that t waits for another approval.
func recoverSaysWhy(t *testing.T, s cliStore) string {
	t.Helper()
	_, stderr := s.want(t, nil, 0, "owner", "recover")
	why := "the approval of alice no longer counts (revoked at "
	if !strings.Contains(stderr, "recover t: "+why) || !strings.Contains(stderr, "the task waits for another approval") {
		t.Errorf("recover's stderr %q; want it to say alice's approval no longer counts and t waits for another approval", stderr)
	}
	return stderr
}

// TestARevokedApprovalNoLongerCounts: an approval whose approver's grant
// the owner revoked before it was carried out (killed before its submit,
// or the first of two) no longer counts at the submit, by resume, recover
// and a decide row, on SQLite and PostgreSQL: no application is made, the
// trail keeps the approval marked "revoked at …" (show, the card), the
// task waits for another approval (the card and list --awaiting-me offer
// it), and that approval submits it once.
func TestARevokedApprovalNoLongerCounts(t *testing.T) {
	t.Parallel()
	for name, newStore := range cliStores(t) {
		for _, path := range revokedPaths {
			t.Run(name+"/"+path.name, func(t *testing.T) {
				t.Parallel()
				s := newStore(t)
				s.ownerOrders(t)
				s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small", "--approvals", path.approvals)
				path.setup(t, s)
				path.carry(t, s)
				if v, _ := s.want(t, nil, 0, "owner", "show", "t"); v["status"] != "waiting" || s.apps(t, "t") != "0" {
					t.Fatalf("after alice's revoked approval was carried: status %v, %s applications; want waiting, 0", v["status"], s.apps(t, "t"))
				}
				trail := s.trailMarks(t, "t")
				if !strings.HasPrefix(trail, "alice approve (not counted: revoked at ") || !strings.Contains(trail, "alice no longer holds a grant from owner)") {
					t.Errorf("trail %q; want alice's approval kept, marked revoked", trail)
				}
				if path.approvals == "2" && !strings.HasSuffix(trail, ", bob approve") {
					t.Errorf("trail %q; want bob's approval counted", trail)
				}
				card, _, _ := s.run(t, nil, path.next, "--output", "text", "show", "t")
				if !strings.Contains(card, "(not counted: revoked at") || !strings.Contains(card, "--action approve") {
					t.Errorf("%s's card does not show alice's approval not counted, or offers no approve:\n%s", path.next, card)
				}
				if path.approvals == "2" {
					// The requester's approve of a task that needs two
					// never counts: neither the card nor the decide file
					// offers it.
					card, _, _ := s.run(t, nil, "owner", "--output", "text", "show", "t")
					if strings.Contains(card, "--action approve") || !strings.Contains(card, "yours cannot count: owner is the task's requester") {
						t.Errorf("the requester's card offers an approve, or does not say why not:\n%s", card)
					}
					if out, _, _ := s.run(t, nil, "owner", "--output", "csv", "list"); strings.Contains(out, "\nt,") {
						t.Errorf("the requester's list --output csv holds t:\n%s", out)
					}
				}
				if path.next != "owner" {
					if out, _, _ := s.run(t, nil, path.next, "--output", "csv", "list", "--awaiting-me"); !strings.Contains(out, "\nt,") {
						t.Errorf("%s's list --awaiting-me lacks t:\n%s", path.next, out)
					}
				}
				s.want(t, nil, 0, path.next, "resume", "t", "--action", "approve")
				if v, _ := s.want(t, nil, 0, "owner", "show", "t"); v["status"] != "done" || s.apps(t, "t") != "1" {
					t.Fatalf("after %s's approval: status %v, %s applications; want done, 1", path.next, v["status"], s.apps(t, "t"))
				}
				if s.dir != "" {
					verifyClean(t, s.dir)
				} else {
					s.pg.verifyClean(t)
				}
			})
		}
	}
}
