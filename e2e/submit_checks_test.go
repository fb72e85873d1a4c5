package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
	"assistant/runs"
)

// cmd is the binary as user with args (and env added) on the store.
func (s cliStore) cmd(env []string, user string, args ...string) *exec.Cmd {
	args = append([]string{"--user", user}, args...)
	if s.dir == "" {
		return s.pg.cmd(env, args...)
	}
	c := exec.Command(assistantBin(), append([]string{"--data", s.dir, "--output", "json"}, args...)...)
	c.Env = append(os.Environ(), env...)
	return c
}

// apps counts the applications of task's drafts in the store.
func (s cliStore) apps(t *testing.T, task string) string {
	t.Helper()
	if s.dir == "" {
		return s.pg.apps(t, task)
	}
	return applications(t, s.dir, task)
}

// submitPath is a way a task comes to its submit: the command that
// carries it there (args) after setup, run on the store s.
type submitPath struct {
	name  string
	runs  int // how many times the race is run on each store
	setup func(t *testing.T, s cliStore)
	args  func(t *testing.T, s cliStore) []string
}

// submitPaths are resume (an approve) and recover (of an approve killed
// before its submit), each on task t of owner waiting for approval of
// order Z1. A decide chunk holds the write lock from its first row to its
// commit, so no stop comes between its check and its submit: a stop
// waits for the chunk, and finds the application
// (TestAStopNeverOvertakesADecide).
var submitPaths = []submitPath{
	{"Resume", 20, func(*testing.T, cliStore) {}, func(*testing.T, cliStore) []string {
		return []string{"resume", "t", "--action", "approve"}
	}},
	{"Recover", 20, func(t *testing.T, s cliStore) {
		if _, _, code := s.run(t, []string{returns.FaultEnv + "=before:submit"}, "owner", "resume", "t", "--action", "approve"); code != 137 {
			t.Fatalf("approve killed before its submit: exit %d, want 137", code)
		}
	}, func(*testing.T, cliStore) []string { return []string{"recover"} }},
}

// TestAStopBeforeTheSubmitWins: a run paused just before its submit
// (before:submit@pause), by each path, is stopped without waiting; the
// stop commits first, so the submit's transaction, which judges the run
// still running under its lease, refuses to make the application when the
// process goes on. A stop that does not say "too late" leaves no
// application (20 times on each store by each path); the task stays
// interrupted, and a resume submits it once.
func TestAStopBeforeTheSubmitWins(t *testing.T) {
	t.Parallel()
	for name, newStore := range cliStores(t) {
		for _, path := range submitPaths {
			t.Run(name+"/"+path.name, func(t *testing.T) {
				t.Parallel()
				for i := range path.runs {
					t.Run(fmt.Sprint(i), func(t *testing.T) {
						t.Parallel()
						s := newStore(t)
						s.ownerOrders(t)
						s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small")
						path.setup(t, s)
						env := []string{returns.FaultEnv + "=before:submit" + returns.FaultPause}
						holder := startPaused(t, s.cmd(env, "owner", path.args(t, s)...), "before:submit")
						out, stderr, code := s.run(t, nil, "owner", "stop", "t", "--wait", "0")
						late := strings.Contains(stderr, "too late")
						holder.goOn(t)
						if got := s.apps(t, "t"); !late && got != "0" {
							t.Fatalf("stop said %q (exit %d, %s) and the paused submit went on: %s applications, want 0", stderr, code, out, got)
						}
						if late {
							return
						}
						v, _ := s.want(t, nil, 0, "owner", "show", "t")
						if v["status"] != "interrupted" {
							t.Fatalf("after the stop and the paused submit: status %v, want interrupted", v["status"])
						}
						if i == 0 {
							v, _ = s.want(t, nil, 0, "owner", "resume", "t")
							if v["status"] != "done" || s.apps(t, "t") != "1" {
								t.Fatalf("resume after the stop: status %v, %s applications; want done, 1", v["status"], s.apps(t, "t"))
							}
						}
					})
				}
			})
		}
	}
}

// TestAStopNeverOvertakesADecide: a decide run paused just before the
// submit of its row (before:submit@pause) holds the write of its chunk,
// and the task is stopped (stop --wait 0) from another process meanwhile.
// Whatever order the two commit in, the stop tells the truth: a stop that
// reports the task interrupted leaves no application, and one that finds
// the application says the task ended done. 20 times on each store.
func TestAStopNeverOvertakesADecide(t *testing.T) {
	t.Parallel()
	for name, newStore := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i := range 20 {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					t.Parallel()
					s := newStore(t)
					s.ownerOrders(t)
					s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small")
					rows := filepath.Join(t.TempDir(), "decisions.csv")
					if err := os.WriteFile(rows, []byte("task,action\nt,approve\n"), 0o600); err != nil {
						t.Fatal(err)
					}
					env := []string{returns.FaultEnv + "=before:submit" + returns.FaultPause}
					holder := startPaused(t, s.cmd(env, "owner", "decide", rows), "before:submit")
					stop := s.cmd(nil, "owner", "stop", "t", "--wait", "0")
					var out bytes.Buffer
					stop.Stdout = &out
					stopper := startProc(t, stop)
					// The stop has done what it can before the decide goes
					// on: it has ended, or it sleeps on the chunk's lock.
					deadline := time.Now().Add(10 * time.Second)
					for len(stopper.done) == 0 && !asleep(stop.Process.Pid) && time.Now().Before(deadline) {
						time.Sleep(10 * time.Millisecond)
					}
					if code := holder.goOn(t); code != 0 {
						t.Fatalf("the paused decide: exit %d, %s", code, holder.stderr)
					}
					code := exitWithin(t, stopper.done, 30*time.Second)
					apps := s.apps(t, "t")
					v, _ := s.want(t, nil, 0, "owner", "show", "t")
					t.Logf("stop: exit %d, %s", code, strings.TrimSpace(stopper.stderr.String()))
					switch {
					case code == 0 && strings.Contains(out.String(), `"interrupted"`):
						if apps != "0" || v["status"] != "interrupted" {
							t.Fatalf("stop reported interrupted, and then: status %v, %s applications; want interrupted, 0", v["status"], apps)
						}
					case strings.Contains(stopper.stderr.String(), "ended (done)") || strings.Contains(stopper.stderr.String(), "too late"):
						if apps != "1" || v["status"] != "done" {
							t.Fatalf("stop said %q, and then: status %v, %s applications; want done, 1", stopper.stderr, v["status"], apps)
						}
					default:
						t.Fatalf("stop during the decide: exit %d, stdout %s, stderr %s; want interrupted or the task done", code, out.String(), stopper.stderr)
					}
				})
			}
		})
	}
}

// TestTwoApprovalsNeedTwoPeopleOtherThanTheRequester: on a task started
// with --approvals 2 the requester's approve is refused (exit 2, nothing
// changed), before or after a grantee's; the requester and one grantee
// never submit it; a second grantee does. The requester may still cancel.
func TestTwoApprovalsNeedTwoPeopleOtherThanTheRequester(t *testing.T) {
	t.Parallel()
	for name, newStore := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			s.ownerOrders(t)
			s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small", "--approvals", "2")
			_, stderr := s.want(t, nil, 2, "owner", "resume", "t", "--action", "approve")
			if !strings.Contains(stderr, "other than its requester") {
				t.Errorf("the requester's approve: %q; want it refused as the requester's", stderr)
			}
			s.approveAs(t, nil, "alice", "t")
			s.want(t, nil, 2, "owner", "resume", "t", "--action", "approve")
			if v, _ := s.want(t, nil, 0, "owner", "show", "t"); v["status"] != "waiting" || s.apps(t, "t") != "0" {
				t.Fatalf("after the requester's and one grantee's approvals: status %v, %s applications; want waiting, 0", v["status"], s.apps(t, "t"))
			}
			s.approveAs(t, nil, "bob", "t")
			if v, _ := s.want(t, nil, 0, "owner", "show", "t"); v["status"] != "done" || s.apps(t, "t") != "1" {
				t.Fatalf("after two grantees' approvals: status %v, %s applications; want done, 1", v["status"], s.apps(t, "t"))
			}

			s.want(t, nil, 0, "owner", "start", "c", "Z2", "--reason", "too small", "--approvals", "2")
			if v, _ := s.want(t, nil, 0, "owner", "resume", "c", "--action", "cancel"); v["status"] != "cancelled" {
				t.Errorf("the requester's cancel: status %v, want cancelled", v["status"])
			}
		})
	}
}

// exec runs stmt, SQL valid on both databases, on the store's business
// tables, as another program would (on PostgreSQL in the schema
// business).
func (s cliStore) exec(t *testing.T, stmt string) {
	t.Helper()
	if s.dir == "" {
		s.pg.exec(t, "SET search_path TO business; "+stmt)
		return
	}
	rawExecBusiness(t, s.dir, stmt)
}

// TestTheRequesterNeverCountsAtTheSubmit: a trail that holds an approval
// of a task's requester (put there by another program, or by a build
// that took it) on a task that needs two approvals does not count at
// the submit, on SQLite and PostgreSQL: alice's approve carries it out
// with hers, and the submit refuses it, marks it in the trail and makes
// nothing; the task waits for a second grantee, whose approve submits it
// once. The requester and one grantee never submit it.
func TestTheRequesterNeverCountsAtTheSubmit(t *testing.T) {
	t.Parallel()
	for name, newStore := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			s.ownerOrders(t)
			v, _ := s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small", "--approvals", "2")
			draft, _ := v["draft"].(map[string]any)["draft_id"].(string)
			at := time.Now().UTC().Add(-time.Second).Format("2006-01-02T15:04:05.000Z")
			s.exec(t, fmt.Sprintf(`INSERT INTO decisions (decision_id, task_id, by_user, action, draft_id, version, at) VALUES ('dec-owner', 't', 'owner', 'approve', '%s', 1, '%s')`, draft, at))

			s.want(t, nil, 0, "alice", "resume", "t", "--action", "approve")
			if v, _ := s.want(t, nil, 0, "owner", "show", "t"); v["status"] != "waiting" || s.apps(t, "t") != "0" {
				t.Fatalf("after the requester's and alice's approvals: status %v, %s applications; want waiting, 0", v["status"], s.apps(t, "t"))
			}
			if trail := s.trailMarks(t, "t"); !strings.Contains(trail, "owner approve (not counted: owner is the task's requester") || !strings.Contains(trail, "alice approve") ||
				strings.Contains(trail, "alice approve (not counted") {
				t.Errorf("trail %q; want the requester's approval marked not counted, alice's counted", trail)
			}
			s.want(t, nil, 0, "bob", "resume", "t", "--action", "approve")
			if v, _ := s.want(t, nil, 0, "owner", "show", "t"); v["status"] != "done" || s.apps(t, "t") != "1" {
				t.Fatalf("after alice's and bob's approvals: status %v, %s applications; want done, 1", v["status"], s.apps(t, "t"))
			}
		})
	}
}

// importOrders imports the orders CSV text (with its header) as owner.
func (s cliStore) importOrders(t *testing.T, text string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	s.want(t, nil, 0, "owner", "orders", "import", file)
}

// TestAnOrderNoLongerReturnableAtTheSubmit: an orders import that makes
// the order final sale between its approval and its submit (the second
// of two approvals, or the recover of an approval killed before its
// submit) refuses the submit, on SQLite and PostgreSQL: nothing is
// created, and the task ends failed with final_sale, the approval kept
// in the trail (docs/approvals.md "Answering a question").
func TestAnOrderNoLongerReturnableAtTheSubmit(t *testing.T) {
	t.Parallel()
	paths := []struct {
		name, approvals string
		before, carry   func(t *testing.T, s cliStore)
	}{
		{"TwoApprovals/Resume", "2", func(t *testing.T, s cliStore) { s.approveAs(t, nil, "alice", "t") },
			func(t *testing.T, s cliStore) { s.want(t, nil, 0, "bob", "resume", "t", "--action", "approve") }},
		{"OneApproval/Recover", "1", func(t *testing.T, s cliStore) {
			if _, _, code := s.run(t, []string{returns.FaultEnv + "=before:submit"}, "alice", "resume", "t", "--action", "approve"); code != 137 {
				t.Fatalf("alice's approve killed before its submit: exit %d, want 137", code)
			}
		}, func(t *testing.T, s cliStore) { s.want(t, nil, 0, "owner", "recover") }},
	}
	for name, newStore := range cliStores(t) {
		for _, path := range paths {
			t.Run(name+"/"+path.name, func(t *testing.T) {
				t.Parallel()
				s := newStore(t)
				s.ownerOrders(t)
				s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small", "--approvals", path.approvals)
				path.before(t, s)
				s.importOrders(t, "order_id,user,item,delivered_days_ago,final_sale\nZ1,owner,Desk lamp,2,true\n")
				path.carry(t, s)
				v, _ := s.want(t, nil, 0, "owner", "show", "t")
				e, _ := v["error"].(map[string]any)
				if v["status"] != "failed" || e == nil || e["code"] != "final_sale" || s.apps(t, "t") != "0" {
					t.Fatalf("after the order became final sale: status %v, error %v, %s applications; want failed, final_sale, 0", v["status"], v["error"], s.apps(t, "t"))
				}
				if trail := s.trailMarks(t, "t"); !strings.HasPrefix(trail, "alice approve") {
					t.Errorf("trail %q; want alice's approval kept", trail)
				}
			})
		}
	}
}

// steps is task's timeline as history prints it on the store s.
func (s cliStore) steps(t *testing.T, task string) []map[string]any {
	t.Helper()
	v, _ := s.want(t, nil, 0, "owner", "history", task)
	raw, _ := v["steps"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, r := range raw {
		st, _ := r.(map[string]any)
		out = append(out, st)
	}
	return out
}

// findings is what verify finds on the store s, one "task: problem" each.
func (s cliStore) findings(t *testing.T) []string {
	t.Helper()
	v, _ := s.want(t, nil, 0, "owner", "verify")
	raw, _ := v["findings"].([]any)
	var out []string
	for _, r := range raw {
		f, _ := r.(map[string]any)
		out = append(out, fmt.Sprintf("%v: %v", f["task"], f["problem"]))
	}
	return out
}

// TestAStoppedRunWritesNothingMore: a run parked right before its submit
// (before:submit@pause) is stopped from another process; when it goes on
// it sees the stop in the submit's transaction and gives up, writing no
// step record: the stop's end of the submit step (failed, "run
// interrupted", ended at the stop) stands as the stop wrote it, and no
// step is added. Three such stops (the approve, then two resumes) leave
// three submit steps, attempts 1 to 3, none of them a failed attempt;
// five real failures after them (the process killed before its submit,
// each found gone by the next recover) reach the limit of five, and the
// run ends failed with attempts_exhausted at attempt 8, nothing
// submitted. On SQLite and PostgreSQL (docs/recovery.md "Operator stop",
// "Attempts").
func TestAStoppedRunWritesNothingMore(t *testing.T) {
	t.Parallel()
	for name, newStore := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			s.ownerOrders(t)
			s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small")
			pause := []string{returns.FaultEnv + "=before:submit" + returns.FaultPause}
			var stopped []map[string]any // the submit steps as each stop ended them
			for i, args := range [][]string{{"resume", "t", "--action", "approve"}, {"resume", "t"}, {"resume", "t"}} {
				holder := startPaused(t, s.cmd(pause, "owner", args...), "before:submit")
				if v, _ := s.want(t, nil, 0, "owner", "stop", "t", "--wait", "0"); v["status"] != "interrupted" {
					t.Fatalf("stop %d: status %v, want interrupted", i+1, v["status"])
				}
				before := s.steps(t, "t")
				if code := holder.goOn(t); code != 0 {
					t.Fatalf("the stopped %v: exit %d, %s", args, code, holder.stderr)
				}
				after := s.steps(t, "t")
				if !reflect.DeepEqual(before, after) {
					t.Fatalf("stop %d: the stopped process wrote step records after the stop:\nbefore %v\nafter  %v", i+1, before, after)
				}
				last := after[len(after)-1]
				if last["node"] != "submit" || last["attempt"] != float64(i+1) || last["status"] != "failed" || last["error"] != runs.MsgInterrupted {
					t.Fatalf("stop %d: last step %v; want submit attempt %d failed %q", i+1, last, i+1, runs.MsgInterrupted)
				}
				stopped = append(stopped, last)
			}
			kill := []string{returns.FaultEnv + "=before:submit"}
			if _, _, code := s.run(t, kill, "owner", "resume", "t"); code != 137 {
				t.Fatalf("resume killed before its submit: exit %d, want 137", code)
			}
			for range 4 {
				if _, _, code := s.run(t, kill, "owner", "recover"); code != 137 {
					t.Fatalf("recover killed before its submit: exit %d, want 137", code)
				}
			}
			s.want(t, nil, 0, "owner", "recover")
			v, _ := s.want(t, nil, 0, "owner", "show", "t")
			if e, _ := v["error"].(map[string]any); v["status"] != "failed" || e == nil || e["code"] != "attempts_exhausted" {
				t.Fatalf("after three stops and five failures: status %v, error %v; want failed, attempts_exhausted", v["status"], v["error"])
			}
			var submits []map[string]any
			for _, st := range s.steps(t, "t") {
				if st["node"] == "submit" {
					submits = append(submits, st)
				}
			}
			if len(submits) != 8 {
				t.Fatalf("submit steps %v; want 8: three stopped, five failed", submits)
			}
			for i, st := range submits {
				if st["attempt"] != float64(i+1) {
					t.Errorf("submit step %d is attempt %v, want %d", i+1, st["attempt"], i+1)
				}
				if i < 3 && !reflect.DeepEqual(st, stopped[i]) {
					t.Errorf("submit step %d %v; want it as the stop ended it: %v", i+1, st, stopped[i])
				}
				if i >= 3 && (st["status"] != "failed" || st["error"] != runs.MsgProcessGone) {
					t.Errorf("submit step %d %v; want failed %q", i+1, st, runs.MsgProcessGone)
				}
			}
			if got := s.apps(t, "t"); got != "0" {
				t.Errorf("applications: %s, want 0", got)
			}
		})
	}
}

// TestARefusalAndAStopTellOneEnd: a node that ends the run failed (the
// order no longer returnable, at the submit or at the lookup) and a stop
// from another process: whichever the business store holds first is the
// task's one end in every view. Parked after the node (after:NODE@pause),
// the failure is recorded already: the stop is refused (exit 3, nothing
// written) and show, list, the record and the head say failed with the
// refusal's code once the run goes on. Parked before it
// (before:NODE@pause), the stop comes first: the run goes on, sees it
// when it would record the failure and gives up, so the task is
// interrupted everywhere, nothing of the failure written, until a resume
// runs the node again and ends it failed. verify finds nothing to warn
// of. On SQLite and PostgreSQL (docs/recovery.md "Operator stop").
func TestARefusalAndAStopTellOneEnd(t *testing.T) {
	t.Parallel()
	paths := []struct {
		name, node string
		// setup brings task t, of order Z1, to where args runs node
		// with Z1 no longer returnable.
		setup func(t *testing.T, s cliStore)
		args  []string
	}{
		{"Submit", "submit", func(t *testing.T, s cliStore) {
			s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small")
			s.importOrders(t, "order_id,user,item,delivered_days_ago,final_sale\nZ1,owner,Desk lamp,2,true\n")
		}, []string{"resume", "t", "--action", "approve"}},
		{"Lookup", "lookup", func(t *testing.T, s cliStore) {
			s.importOrders(t, "order_id,user,item,delivered_days_ago,final_sale\nZ1,owner,Desk lamp,2,true\n")
		}, []string{"start", "t", "Z1", "--reason", "too small"}},
	}
	for name, newStore := range cliStores(t) {
		for _, path := range paths {
			for _, when := range []string{"after", "before"} {
				t.Run(name+"/"+path.name+"/"+when, func(t *testing.T) {
					t.Parallel()
					s := newStore(t)
					s.ownerOrders(t)
					path.setup(t, s)
					point := when + ":" + path.node
					var out bytes.Buffer
					c := s.cmd([]string{returns.FaultEnv + "=" + point + returns.FaultPause}, "owner", path.args...)
					c.Stdout = &out
					holder := startPaused(t, c, point)
					want := "failed"
					if when == "after" {
						_, stderr := s.want(t, nil, 3, "owner", "stop", "t", "--wait", "0")
						if !strings.Contains(stderr, "already ended (failed)") {
							t.Errorf("stop after the refusal: %q; want it refused, the task ended failed", stderr)
						}
					} else {
						s.want(t, nil, 0, "owner", "stop", "t", "--wait", "0")
						want = "interrupted"
					}
					if code := holder.goOn(t); code != 0 || !strings.Contains(out.String(), `"status": "`+want+`"`) {
						t.Fatalf("%v: exit %d, %s%s; want status %s", path.args, code, out.String(), holder.stderr, want)
					}
					s.wantOneEnd(t, want)
					if want == "interrupted" {
						s.want(t, nil, 0, "owner", "resume", "t")
						s.wantOneEnd(t, "failed")
					}
				})
			}
		}
	}
}

// wantOneEnd fails t unless task t reads status (failed with final_sale,
// or interrupted with no error) in show, list and history's head alike,
// with no application and nothing for verify to warn of.
func (s cliStore) wantOneEnd(t *testing.T, status string) {
	t.Helper()
	v, _ := s.want(t, nil, 0, "owner", "show", "t")
	e, _ := v["error"].(map[string]any)
	if v["status"] != status || (status == "failed") != (e != nil && e["code"] == "final_sale") {
		t.Errorf("show: status %v, error %v; want %s", v["status"], v["error"], status)
	}
	l, _ := s.want(t, nil, 0, "owner", "list")
	if ts, _ := l["tasks"].([]any); len(ts) != 1 || ts[0].(map[string]any)["status"] != status {
		t.Errorf("list: %v; want t %s", l["tasks"], status)
	}
	h, _ := s.want(t, nil, 0, "owner", "history", "t")
	cps, _ := h["checkpoints"].([]any)
	if len(cps) > 0 {
		head, _ := cps[0].(map[string]any)["values"].(map[string]any)
		if failed := head["stage"] == "failed"; failed != (status == "failed") {
			t.Errorf("history's head: stage %v; want the task %s", head["stage"], status)
		}
	}
	if f := s.findings(t); len(f) != 0 {
		t.Errorf("verify: %v; want nothing", f)
	}
	if got := s.apps(t, "t"); got != "0" {
		t.Errorf("applications: %s, want 0", got)
	}
}
