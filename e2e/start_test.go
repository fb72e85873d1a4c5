package e2e

// start (docs/json.md "start, show, resume, wait, stop and batch", "Task ids"): what a start makes, what is
// part of its input, and what a refusal of a taken task id offers.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStartOfAnUnknownOrderMakesNoStores: start on a data dir or database
// that does not exist yet makes it with the teaching orders alone (or none
// with --teaching-orders=false); an order that would not be in it is exit
// 4, as on stores that exist, and nothing is made (a mistyped --data made
// a data dir full of teaching orders). An order that would be there is
// started as before.
func TestStartOfAnUnknownOrderMakesNoStores(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"UnknownOrder", []string{"start", "x1", "NOPE", "--reason", "size"}, 4},
		{"AnotherUsersTeachingOrder", []string{"--user", "other-user", "start", "x1", "A3003", "--reason", "size"}, 4},
		{"NoTeachingOrders", []string{"--teaching-orders=false", "start", "x1", "A3003", "--reason", "size"}, 4},
		{"TeachingOrder", []string{"start", "x1", "A3003", "--reason", "size"}, 0},
	}
	for _, tt := range tests {
		t.Run("DataDir/"+tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			_, stderr, code := run(t, dir, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (%s)", code, tt.code, stderr)
			}
			_, err := os.Stat(dir)
			if made := !errors.Is(err, fs.ErrNotExist); made != (tt.code == 0) {
				t.Fatalf("data dir made: %v, want %v (stat: %v)", made, tt.code == 0, err)
			}
			if tt.code == 4 && (strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not found for user")) {
				t.Errorf("stderr %q, want one line saying the order is not found", stderr)
			}
		})
		t.Run("Postgres/"+tt.name, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			_, stderr, code := pg.run(t, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (%s)", code, tt.code, stderr)
			}
			want := "0"
			if tt.code == 0 {
				want = "2"
			}
			if got := pg.query(t, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('checkpoints', 'business')`); got != want {
				t.Errorf("schemas made: %s, want %s", got, want)
			}
		})
	}
}

// TestDraftTTLIsPartOfTheInput: the draft validity is part of a start's
// input (another --draft-ttl for a task id is exit 3, the first window
// stays), and a sub-second validity is refused (exit 2), never cut to whole
// seconds.
func TestDraftTTLIsPartOfTheInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := mustRun(t, dir, "start", "t5", "A3003", "--reason", "size", "--draft-ttl", "60s")
	window := first["draft"].(map[string]any)["expires_at"]
	refused(t, dir, 3, "t5", "start", "t5", "A3003", "--reason", "size", "--draft-ttl", "120s")
	refused(t, dir, 3, "t5", "start", "t5", "A3003", "--reason", "size")
	again := mustRun(t, dir, "start", "t5", "A3003", "--reason", "size", "--draft-ttl", "1m")
	if again["draft"].(map[string]any)["expires_at"] != window {
		t.Errorf("the same start again: expires_at %v, want the first window %v", again["draft"], window)
	}

	mustRun(t, dir, "start", "t6", "A3004", "--reason", "size")
	mustRun(t, dir, "start", "t6", "A3004", "--reason", "size", "--draft-ttl", "300s") // the default, given

	refused(t, dir, 2, "1.999s", "start", "t7", "A3001", "--reason", "size", "--draft-ttl", "1999ms")
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id = 't7'`); got != "0" {
		t.Errorf("a refused start recorded t7")
	}
	fresh := filepath.Join(t.TempDir(), "data")
	if _, stderr, code := run(t, fresh, "start", "t8", "A3001", "--reason", "size", "--draft-ttl", "1500ms"); code != 2 || stderr == "" {
		t.Errorf("--draft-ttl 1500ms on a new data dir: exit %d, %q; want 2", code, stderr)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a refused start made the data dir: %v", err)
	}
	verifyClean(t, dir)
}

// TestLockedFileIsConflict holds business.sqlite's write lock from another
// connection for longer than the busy timeout: a command that must write
// exits 3 (busy, as a task held by another process) with a hint, not 1;
// its JSON error code is busy.
func TestLockedFileIsConflict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeDataDir(t, dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	out, stderr, code := run(t, dir, "start", "t1", "A3001", "--reason", "too small")
	if code != 3 || !strings.Contains(stderr, "write lock") {
		t.Errorf("start on a locked file: exit %d, stderr %q; want 3 and a hint about the lock", code, stderr)
	}
	var e struct{ Error struct{ Code, Hint string } }
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Error.Code != "busy" || e.Error.Hint == "" {
		t.Errorf("start on a locked file: error object %q (%v); want code busy with a hint", out, err)
	}
}

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

// TestTakenIDOffersOnlyWhatWorks: a start, batch or decide whose id is
// another task's is exit 3 and nothing is made; the refusal offers
// `assistant show` only to a user who may see that task (its owner, or an
// approver its owner granted for a return task), and every command it
// offers then works. bob, granted by ci-bot, may see ci-bot's return task
// t1 but no batch or decide run of another user: ci-bot's decide run u1
// and alice's batch newrun exist for him only as taken ids. resume and
// stop of those ids are exit 4, as for an unknown task.
func TestTakenIDOffersOnlyWhatWorks(t *testing.T) {
	t.Parallel()
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
