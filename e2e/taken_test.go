package e2e

// End-to-end tests of refusals of a task id that is taken: the commands
// they offer must work for the person told. Each command a process of its
// own.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quotedCommand is a command a message offers: `assistant …` in backquotes.
var quotedCommand = regexp.MustCompile("`(assistant [^`]*)`")

// offered returns the commands msg offers, each split into its words
// (the tests' ids and paths hold no blank or quote).
func offered(msg string) [][]string {
	var cmds [][]string
	for _, m := range quotedCommand.FindAllStringSubmatch(msg, -1) {
		cmds = append(cmds, strings.Fields(m[1]))
	}
	return cmds
}

// writeFile writes text to name in a new temporary directory and returns
// its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTakenIDOffersOnlyWhatWorks: a start, batch or decide whose id is
// another task's is exit 3 and nothing is made; the refusal offers
// `assistant show` only to a user who may see that task (its owner, or an
// approver its owner granted for a return task), and every command it
// offers then works. bob, granted by ci-bot, may see ci-bot's return task
// t1 but no batch or decide run of another user: ci-bot's decide run u1
// and alice's batch newrun exist for him only as taken ids. resume and
// stop of those ids are exit 4, as for an unknown task.
func TestTakenIDOffersOnlyWhatWorks(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "approvers", "grant", "bob")
	as(t, dir, "bob", 0, "orders", "import", writeFile(t, "bob.csv", "order_id,user,item,delivered_days_ago,final_sale\nB1,bob,Desk lamp,2,false\n"))
	as(t, dir, "ci-bot", 0, "start", "t1", "C1", "--reason", "broken")
	as(t, dir, "ci-bot", 0, "start", "t2", "C2", "--reason", "broken")
	small := writeFile(t, "small.csv", "task,action\nt2,approve\n")
	as(t, dir, "ci-bot", 0, "decide", small, "--id", "u1")
	as(t, dir, "alice", 0, "batch", "newrun", writeFile(t, "a.csv", "task,order,reason\na-r1,NOPE,size\n"))
	bobDecides := writeFile(t, "bob-decides.csv", "task,action\nt1,cancel\n")
	bobRows := writeFile(t, "b1.csv", "task,order,reason\nb-r1,B1,size\n")

	for _, tc := range []struct {
		name     string
		user     string
		args     []string
		want     int
		showable bool // the refusal offers `show` of the id
	}{
		{name: "DecideOverAnotherUsersDecideRun", user: "bob", args: []string{"decide", bobDecides, "--id", "u1"}, want: 3},
		{name: "BatchOverAnotherUsersBatch", user: "bob", args: []string{"batch", "newrun", bobRows}, want: 3},
		{name: "StartOverAnotherUsersDecideRun", user: "bob", args: []string{"start", "u1", "B1", "--reason", "r"}, want: 3},
		{name: "StartOverAnotherUsersBatch", user: "bob", args: []string{"start", "newrun", "B1", "--reason", "r"}, want: 3},
		{name: "BatchOverAReturnTaskHeApproves", user: "bob", args: []string{"batch", "t1", bobRows}, want: 3, showable: true},
		{name: "DecideOverAReturnTaskHeApproves", user: "bob", args: []string{"decide", bobDecides, "--id", "t1"}, want: 3, showable: true},
		{name: "StartOverAReturnTaskHeApproves", user: "bob", args: []string{"start", "t1", "B1", "--reason", "r"}, want: 3, showable: true},
		{name: "OwnDecideRunOtherInput", user: "ci-bot", args: []string{"decide", writeFile(t, "other.csv", "task,action\nt1,cancel\n"), "--id", "u1"}, want: 3, showable: true},
		{name: "OwnBatchOtherInput", user: "alice", args: []string{"batch", "newrun", writeFile(t, "a2.csv", "task,order,reason\na-r2,NOPE,size\n")}, want: 3, showable: true},
		{name: "OwnBatchAsAStart", user: "alice", args: []string{"start", "newrun", "NOPE", "--reason", "r"}, want: 3, showable: true},
		{name: "ResumeAnotherUsersDecideRun", user: "bob", args: []string{"resume", "u1"}, want: 4},
		{name: "StopAnotherUsersBatch", user: "bob", args: []string{"stop", "newrun"}, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks`)
			_, stderr, code := runAs(t, dir, tc.user, tc.args...)
			if code != tc.want {
				t.Fatalf("--user %s %v: exit %d, want %d: %s", tc.user, tc.args, code, tc.want, stderr)
			}
			if after := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks`); after != before {
				t.Errorf("tasks %s → %s: the refusal made a task", before, after)
			}
			cmds := offered(stderr)
			shows := 0
			for _, c := range cmds {
				if len(c) > 1 && c[len(c)-2] == "show" {
					shows++
				}
				// As a person pastes it: its own --data and --user.
				out, errOut, code := runEnv(t, "", nil, c[1:]...)
				if code != 0 {
					t.Errorf("the refusal %q offers `%s`, which exits %d: %s%s", stderr, strings.Join(c, " "), code, out, errOut)
				}
			}
			if tc.showable && shows == 0 {
				t.Errorf("refusal %q offers no `show` of a task %s may see", stderr, tc.user)
			}
			if tc.want == 3 && !strings.Contains(stderr, "choose another") {
				t.Errorf("refusal %q does not say to choose another id", stderr)
			}
		})
	}
}
