package e2e

// Tester findings of fix round 10 (engineer FIX10), on a data dir and on
// PostgreSQL: an answer to a run that stopped part-way with no question
// pending (its answering command killed after the answers were saved) is
// a retry only for the person who gave the answer the run carries, with
// the same answer; from anyone else it is exit 3 saying who answered
// what, and nothing changes.

import (
	"strings"
	"testing"
)

// TestStoppedRunAnswerFromAnother: carol's approve of a task whose second
// approval (bob's) was killed at before:submit or after-checkpoint:review_2
// is exit 3 naming bob (with --interrupt naming either question or none),
// and changes nothing: the run is still stopped, bob's own approve again
// continues it and submits. With one approval, alice's approve after the
// owner's approve was killed at before:submit is exit 3 naming the owner;
// the owner's again submits. Before the fix each refused answer was exit
// 0 and submitted the application.
func TestStoppedRunAnswerFromAnother(t *testing.T) {
	t.Parallel()
	for name, make := range fix9Stores(t) {
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
