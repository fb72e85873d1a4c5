package e2e

// How a refusal reads (docs/cli.md "Errors"): one line on stderr,
// "assistant: message; hint", and with json output the error object
// {"code", "message", "hint"} holding the two apart; the message says what
// happened without command-line syntax, the hint what to do next; the exit
// code follows the kind; and a refused command leaves every byte of the
// data dir as it was, making no file.

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"assistant/internal/testkit"
)

// cliSyntax matches command-line syntax in a message: a command to paste
// or a flag.
var cliSyntax = regexp.MustCompile("`assistant |(^|[\\s(])--[a-z]")

// TestRefusalsKeepMessageAndHintApart: for each refusal, of a store's file
// and of the command line, the exit code and JSON code follow its kind,
// stderr is one line ending in the hint, the JSON error object has a
// message and a hint, the message holds no command-line syntax (cobra's
// refusal of a flag names the flag given), and the data dir is unchanged
// with no new file.
func TestRefusalsKeepMessageAndHintApart(t *testing.T) {
	t.Parallel()
	notSQLite := func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "business.sqlite"), []byte("these are not the bytes of a database\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	foreign := func(t *testing.T, dir string) {
		execSQL(t, filepath.Join(dir, "business.sqlite"), "PRAGMA application_id = 1234", "CREATE TABLE notes (body TEXT)")
	}
	newer := func(t *testing.T, dir string) {
		makeDataDir(t, dir)
		execSQL(t, filepath.Join(dir, "checkpoints.sqlite"), "PRAGMA user_version = 99")
	}
	made := func(t *testing.T, dir string) { makeDataDir(t, dir) }
	cases := []struct {
		name       string
		setup      func(t *testing.T, dir string)
		args       []string
		exit       int
		code       string
		hint       string // a part of the hint
		namesFlags bool   // cobra's message names the flag or command given
	}{
		{"a business file that is not SQLite, on start", notSQLite, []string{"start", "t1", "A3001", "--reason", "r"}, 1, "internal", " backup DIR`", false},
		{"another program's business file, on start", foreign, []string{"start", "t1", "A3001", "--reason", "r"}, 1, "internal", "move it aside", false},
		{"a checkpoint file of a newer build, on show", newer, []string{"show", "t1"}, 1, "internal", "upgrade assistant", false},
		{"a checkpoint file of a newer build, on list", newer, []string{"list"}, 1, "internal", "upgrade assistant", false},
		{"an unknown command", made, []string{"frobnicate"}, 2, "invalid_input", " --help` for the commands", true},
		{"an unknown flag", made, []string{"list", "--frobnicate"}, 2, "invalid_input", "list --help` for its flags", true},
		{"an unknown help topic", made, []string{"help", "frobnicate"}, 2, "invalid_input", " --help` for the commands", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tc.setup(t, dir)
			before := dirSums(t, dir)
			out, errOut, code := run(t, dir, tc.args...)
			if code != tc.exit {
				t.Fatalf("%v: exit %d, want %d; stderr %q", tc.args, code, tc.exit, errOut)
			}
			if lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "assistant: ") {
				t.Errorf("%v: stderr is not one line \"assistant: …\": %q", tc.args, errOut)
			}
			var obj struct {
				Error *struct {
					Code    string  `json:"code"`
					Message string  `json:"message"`
					Hint    *string `json:"hint"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(out), &obj); err != nil || obj.Error == nil {
				t.Fatalf("%v: stdout is no error object (%v): %q", tc.args, err, out)
			}
			e := obj.Error
			switch {
			case e.Code != tc.code:
				t.Errorf("%v: code %q, want %q", tc.args, e.Code, tc.code)
			case e.Message == "" || e.Hint == nil || !strings.Contains(*e.Hint, tc.hint):
				t.Errorf("%v: message %q, hint %v: want a message and a hint with %q", tc.args, e.Message, e.Hint, tc.hint)
			case errOut != "assistant: "+e.Message+"; "+*e.Hint+"\n":
				t.Errorf("%v: stderr %q is not the message and the hint joined", tc.args, errOut)
			case strings.Contains(e.Message, *e.Hint):
				t.Errorf("%v: the message %q holds its hint", tc.args, e.Message)
			case strings.Contains(e.Message, "`assistant ") || (!tc.namesFlags && cliSyntax.MatchString(e.Message)):
				t.Errorf("%v: the message %q holds command-line syntax", tc.args, e.Message)
			}
			if after := dirSums(t, dir); !sameDir(before, after) {
				t.Errorf("%v: the data dir changed: %v, then %v", tc.args, before, after)
			}
		})
	}
}

// dirSums is the SHA-256 of every file in dir, by name.
func dirSums(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		out[e.Name()] = testkit.FileSHA256(tb, filepath.Join(dir, e.Name()))
	}
	return out
}

// sameDir reports whether a and b name the same files with the same sums.
func sameDir(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for n, s := range a {
		if b[n] != s {
			return false
		}
	}
	return true
}

// execSQL runs each statement on the SQLite file at path (made when
// missing), as another program or a newer build would.
func execSQL(tb testing.TB, path string, stmts ...string) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
}

// TestNoStoreYetReadsAsOneSentence: a read command where no task has been
// started (a data dir that does not exist, a database without the
// schemas) is exit 4 with a message that says so in a sentence of its
// own, on stderr and in the JSON error object, without the word of its
// kind tacked on: the exit code and the JSON code say "not found".
func TestNoStoreYetReadsAsOneSentence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) cliStore
		says  *regexp.Regexp
	}{
		{"DataDir", func(t *testing.T) cliStore { return cliStore{dir: filepath.Join(t.TempDir(), "data")} },
			regexp.MustCompile(`^data dir /\S+/data does not exist \(no task has been started there\)$`)},
		{"Postgres", func(t *testing.T) cliStore { return cliStore{pg: newPGStore(t)} },
			regexp.MustCompile(`^no task has been started in database .+ \(it holds no schemas checkpoints and business\)$`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.store(t)
			out, errOut, code := s.run(t, nil, "demo-user", "show", "return-25")
			var v struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("show: stdout %q is not the error object: %v", out, err)
			}
			if code != 4 || v.Error.Code != "not_found" || !tc.says.MatchString(v.Error.Message) {
				t.Errorf("show: exit %d, code %q, message %q; want 4, not_found and a message matching %s", code, v.Error.Code, v.Error.Message, tc.says)
			}
			if errOut != "assistant: "+v.Error.Message+"\n" {
				t.Errorf("show: stderr %q, want the message in one line", errOut)
			}
		})
	}
}

// TestBusyCheckpointsRefusalChangesNoByte: a command refused because
// another process holds checkpoints.sqlite's write lock past the busy
// timeout (exit 3) leaves both files as they were: the tasks' rows (a
// lease, its epoch, updated_at; no new task), the decision trail and the
// checkpoints, byte for byte (each file and its -wal) and row for row.
func TestBusyCheckpointsRefusalChangesNoByte(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"resume", []string{"resume", "t1", "--action", "approve"}},
		{"start", []string{"start", "t2", "A3001", "--reason", "size"}},
		{"batch", []string{"batch", "b1", "ROWS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mustRun(t, dir, "start", "t1", "A3003", "--reason", "size")
			rowsFile := writeFile(t, "rows.csv", "task,order,reason\nb1-1,A3001,size\n")
			args := slices.Clone(tc.args)
			for i, a := range args {
				if a == "ROWS" {
					args[i] = rowsFile
				}
			}
			rows := func() string {
				return query(t, dir, "business.sqlite", `SELECT group_concat(task_id || '|' || status || '|' || stage || '|' || coalesce(lease_owner, '') || '|' || lease_epoch || '|' || coalesce(lease_until, '') || '|' || updated_at, ';') FROM tasks`) +
					" decisions " + query(t, dir, "business.sqlite", `SELECT count(*) FROM decisions`)
			}
			was := rows()
			// The sums are read before the lock is taken and after it is let
			// go: this process closing a file it read would drop its own
			// POSIX locks on it, the write lock among them.
			before := dirSums(t, dir)
			release := holdCheckpointsLock(t, dir)
			out, errOut, code := run(t, dir, args...)
			release()
			after := dirSums(t, dir)
			if code != 3 || !strings.Contains(errOut+out, "write lock") {
				t.Fatalf("%v while checkpoints.sqlite is held: exit %d, stderr %q; want 3, the write lock held", args, code, errOut)
			}
			for name, sum := range after {
				// A -shm is the WAL index, shared memory that every
				// connection (the lock holder's too) writes as it reads: it
				// holds no data.
				if before[name] != sum && !strings.HasSuffix(name, "-shm") {
					t.Errorf("the refused %s changed %s", tc.name, name)
				}
			}
			if got := rows(); got != was {
				t.Errorf("tasks after the refused %s: %s, want %s", tc.name, got, was)
			}
			// Once the lock is let go, the same command goes through.
			if v := mustRun(t, dir, args...); v["status"] != "done" && v["status"] != "waiting" {
				t.Errorf("%v once the lock is let go: %v, want it run", args, v["status"])
			}
		})
	}
}

// holdCheckpointsLock holds the write lock of dir's checkpoints.sqlite on
// one connection of this process (BEGIN IMMEDIATE), as another process in
// a long write would, until release.
func holdCheckpointsLock(t *testing.T, dir string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "checkpoints.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	return func() { _, _ = conn.ExecContext(context.Background(), `ROLLBACK`) }
}

// TestContextFault: the check every PostgreSQL command's error line goes
// through finds a context said twice and an id left empty, and passes a
// line that says each context once.
func TestContextFault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line  string
		fault bool
	}{
		{"assistant: task g3: task g3: ERROR: canceling statement due to lock timeout (SQLSTATE 55P03); try again", true},
		{"assistant: show g1: state g1: get checkpoint g1/: ERROR: canceling statement due to lock timeout (SQLSTATE 55P03)", true},
		{"assistant: show g1: state g1: read the head checkpoint of g1: ERROR: canceling statement due to lock timeout (SQLSTATE 55P03); try again", false},
		{"assistant: task g1: no such task for user ann; run `assistant list` to see your tasks", false},
		// The hint may repeat what the message says.
		{"assistant: task g1: busy; run `assistant show g1`: task g1", false},
		{"not an error line: a: a", false},
	} {
		if got := contextFault(tc.line); (got != "") != tc.fault {
			t.Errorf("contextFault(%q) = %q, want a fault: %v", tc.line, got, tc.fault)
		}
	}
}

// TestBusyAfterTheSubmitSaysItSubmitted (docs/json.md "result"): an
// approve whose submit made its application and whose checkpoint another
// process's write lock then kept it from saving is exit 3 (busy), and its
// error says that the application was made: the request is submitted, and
// the next resume records that end, with no second application.
func TestBusyAfterTheSubmitSaysItSubmitted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "s1", "A3003", "--reason", "too small")
	holder := pausedAnswer(t, dir, "before:submit", "demo-user", "s1")
	release := holdCheckpointsLock(t, dir)
	code := holder.goOn(t)
	release()
	app := query(t, dir, "business.sqlite", `SELECT application_id FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = 's1'`)
	if code != 3 || app == "" || !strings.Contains(holder.stderr.String(), "its application "+app+" was made") {
		t.Fatalf("the approve kept from saving its checkpoint: exit %d, application %q, stderr %s; want exit 3 naming the application made", code, app, holder.stderr)
	}
	if v := mustRun(t, dir, "resume", "s1"); v["status"] != "done" || appsOf(t, dir, "s1") != "1" {
		t.Errorf("resume after it: %v with %s applications; want done with one", v["status"], appsOf(t, dir, "s1"))
	}
}
