package e2e

// Tester findings of fix round 9 (engineer FIX9), on a data dir and on
// PostgreSQL: --interrupt on a task that has ended is checked against the
// questions its run asked and who answered them; a batch row naming
// another user's task id says the id is taken; a note on PostgreSQL names
// the schema business, not business.sqlite.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fix9Store is where a test's commands keep both stores: a data dir, or a
// PostgreSQL database.
type fix9Store struct {
	dir string // the data dir; "" on PostgreSQL
	pg  pgStore
}

// fix9Stores returns the two kinds of store, each made for t.
func fix9Stores(t *testing.T) map[string]func(t *testing.T) fix9Store {
	return map[string]func(t *testing.T) fix9Store{
		"DataDir":  func(t *testing.T) fix9Store { return fix9Store{dir: t.TempDir()} },
		"Postgres": func(t *testing.T) fix9Store { return fix9Store{pg: newPGStore(t)} },
	}
}

// run runs the binary as user with args (and env added) on the store, and
// returns stdout, stderr and the exit code.
func (s fix9Store) run(t *testing.T, env []string, user string, args ...string) (string, string, int) {
	t.Helper()
	args = append([]string{"--user", user}, args...)
	if s.dir == "" {
		return s.pg.run(t, env, args...)
	}
	c := exec.Command(assistantBin(), append([]string{"--data", s.dir, "--output", "json"}, args...)...)
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), exitOf(t, err)
}

// want runs the binary as user and fails t unless it exits code; it
// returns stdout decoded (when it exits 0) and stderr.
func (s fix9Store) want(t *testing.T, env []string, code int, user string, args ...string) (map[string]any, string) {
	t.Helper()
	out, errOut, got := s.run(t, env, user, args...)
	if got != code {
		t.Fatalf("--user %s %s: exit %d, want %d\n%s%s", user, strings.Join(args, " "), got, code, out, errOut)
	}
	var v map[string]any
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("--user %s %s: %v\n%s", user, strings.Join(args, " "), err, out)
		}
	}
	return v, errOut
}

// ownerOrders imports owner's returnable orders Z1..Z5 and grants alice,
// bob and carol.
func (s fix9Store) ownerOrders(t *testing.T) {
	t.Helper()
	var b strings.Builder
	b.WriteString("order_id,user,item,delivered_days_ago,final_sale\n")
	for _, id := range []string{"Z1", "Z2", "Z3", "Z4", "Z5"} {
		b.WriteString(id + ",owner,Desk lamp,2,false\n")
	}
	file := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.want(t, nil, 0, "owner", "orders", "import", file)
	for _, u := range []string{"alice", "bob", "carol"} {
		s.want(t, nil, 0, "owner", "approvers", "grant", u)
	}
}

var fix9Interrupt = regexp.MustCompile(`\(interrupt ([0-9a-f]{16})\)`)

// approveAs gives user's approve of task and returns the interrupt it
// answered, as its line on stderr names it.
func (s fix9Store) approveAs(t *testing.T, env []string, user, task string) string {
	t.Helper()
	_, errOut := s.want(t, env, 0, user, "resume", task, "--action", "approve")
	m := fix9Interrupt.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("%s's approve of %s names no interrupt: %q", user, task, errOut)
	}
	return m[1]
}

// TestEndedTaskChecksInterrupt: on a task that has ended (done, cancelled,
// failed), --interrupt naming a question someone else answered is exit 3
// saying who; an id the task never asked is exit 2; the person who
// answered it giving the same answer again is a retry, exit 0 (on a done
// task the application, "reused": true). Before the fix every one of
// them was exit 0 (carol, who never approved, got the application) or,
// on a failed task, exit 3.
func TestEndedTaskChecksInterrupt(t *testing.T) {
	t.Parallel()
	for name, make := range fix9Stores(t) {
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
				time.Sleep(3500*time.Millisecond - time.Since(begun))
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

// TestBatchRowOfAnotherUsersTask: a batch row whose task id is another
// user's task says "task id … is already taken", with the same order and
// reason too, never "already exists with other input"; it names `show`
// only to a person who may see that task. The user's own task with other
// input keeps "already exists with other input".
func TestBatchRowOfAnotherUsersTask(t *testing.T) {
	t.Parallel()
	for name, make := range fix9Stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := make(t)
			s.ownerOrders(t)
			s.want(t, nil, 0, "owner", "start", "r1", "Z1", "--reason", "size")
			s.want(t, nil, 0, "owner", "start", "r2", "Z2", "--reason", "size")
			file := filepath.Join(t.TempDir(), "rows.csv")
			if err := os.WriteFile(file, []byte("task,order,reason\nr1,Z1,size\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(t.TempDir(), "own.csv")
			if err := os.WriteFile(own, []byte("task,order,reason\nr2,Z3,size\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				user, batch, file, says, not string
			}{
				{"dave", "b1", file, "task id r1 is already taken (choose another task id)", "show"},
				{"alice", "b2", file, "task id r1 is already taken (choose another task id, or see that task with `assistant ", "other input"},
				{"owner", "b3", own, "task r2 already exists with other input", "taken"},
			} {
				s.run(t, nil, c.user, "batch", c.batch, c.file)
				v, _ := s.want(t, nil, 0, c.user, "show", c.batch, "--rows")
				raw, _ := json.Marshal(v)
				got := string(raw)
				if !strings.Contains(got, jsonText(c.says)) || strings.Contains(got, c.not) && c.not != "show" {
					t.Errorf("%s's batch row: %s\nwant %q, not %q", c.user, got, c.says, c.not)
				}
				if c.not == "show" && strings.Contains(got, "assistant show r1") {
					t.Errorf("%s, who may not see r1, is offered show: %s", c.user, got)
				}
			}
		})
	}
}

// jsonText is s as it reads inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// TestPostgresNoteNamesSchema: on PostgreSQL the note of an approval the
// trail holds and the head lacks (carried out by the approver's approve
// again) names the schema business, not business.sqlite; on a data dir it
// names business.sqlite.
func TestPostgresNoteNamesSchema(t *testing.T) {
	t.Parallel()
	for name, make := range fix9Stores(t) {
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
