package e2e

// The command line on PostgreSQL (docs/postgres.md "The command
// line"): the built binary with --store on a database of its own per
// test (internal/pgtest: skipped without a server, failed in CI), as on a
// data dir.

import (
	"assistant/flow/returns"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// walkthrough is the README's tour as the JSON contract sees it: start
// asking for a reason, the reason, show, approve twice (the second
// reuses the application), list, history.
var walkthrough = [][]string{
	{"start", "w1", "A3004"},
	{"resume", "w1", "--reason", "wrong colour"},
	{"show", "w1"},
	{"resume", "w1", "--action", "approve"},
	{"resume", "w1", "--action", "approve"},
	{"list"},
	{"history", "w1"},
}

// normalRE finds what differs between two runs of one walkthrough: ids,
// times and durations.
var normalRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|"[0-9a-f]{16}"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|"(\w+_ms|pid|host)": ("[^"]*"|\d+)`)

func normalise(s string) string {
	return normalRE.ReplaceAllStringFunc(s, func(m string) string {
		if i := strings.Index(m, `":`); i > 0 && strings.HasPrefix(m, `"`) {
			return m[:i+2] + " …"
		}
		return "…"
	})
}

// TestPostgresWalkthroughMatchesSQLite runs the walkthrough on a data dir
// and on PostgreSQL: every command's exit code and JSON are the same once
// ids and times are masked, and the approve made one application.
func TestPostgresWalkthroughMatchesSQLite(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	dir := t.TempDir()
	for _, args := range walkthrough {
		lite, liteErr, liteCode := run(t, dir, args...)
		srv, srvErr, srvCode := pg.run(t, nil, args...)
		if liteCode != 0 || srvCode != 0 {
			t.Fatalf("%v: exit %d on a data dir, %d on PostgreSQL\n%s\n%s", args, liteCode, srvCode, liteErr, srvErr)
		}
		if normalise(lite) != normalise(srv) {
			t.Errorf("%v: JSON differs between the stores\nSQLite:\n%s\nPostgreSQL:\n%s", args, normalise(lite), normalise(srv))
		}
	}
	var v struct{ Result struct{ Reused bool } }
	out, _, _ := pg.run(t, nil, "resume", "w1", "--action", "approve")
	if err := json.Unmarshal([]byte(out), &v); err != nil || !v.Result.Reused {
		t.Errorf("approve again: reused %v (%v), want true", v.Result.Reused, err)
	}
	pg.wantApps(t, "w1", "1")
	pg.verifyClean(t)
}

// TestPostgresReadCommandsMakeNothing: a read command on an empty database
// is not found (exit 4), says so in one line, and leaves no schema behind,
// as a read command on a missing data dir makes no directory.
func TestPostgresReadCommandsMakeNothing(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	for _, args := range [][]string{{"show", "x"}, {"history", "x"}, {"resume", "x", "--action", "approve"}, {"stop", "x"}, {"verify"}, {"wait", "x"}} {
		_, stderr, code := pg.run(t, nil, args...)
		if code != 4 || !strings.Contains(stderr, "no task has been started in database") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v on an empty database: exit %d, stderr %q; want 4 and one line", args, code, stderr)
		}
	}
	// As on a missing data dir, list and recover find nothing to show.
	for _, args := range [][]string{{"list"}, {"recover"}, {"approvers", "list"}} {
		if out, stderr, code := pg.run(t, nil, args...); code != 0 || !strings.Contains(out, "[]") {
			t.Errorf("%v on an empty database: exit %d, %s%s; want 0 and an empty list", args, code, out, stderr)
		}
	}
	if got := pg.query(t, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('checkpoints', 'business')`); got != "0" {
		t.Errorf("schemas after read commands: %s, want 0", got)
	}
}

// TestPostgresStoreFlagRefusals: a URL that is not PostgreSQL's, --store
// with --data, both variables: exit 2, one line. An unreachable server:
// exit 1, one line naming host and port, and never the password.
func TestPostgresStoreFlagRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const password = "s3cret-Pa55"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"NotPostgres", nil, []string{"--store", "mysql://u:" + password + "@h/db", "show", "x"}, 2, "must be a postgres:// or postgresql:// URL"},
		{"EmptyStore", nil, []string{"--store", "", "show", "x"}, 2, "--store needs a postgres:// URL"},
		{"StoreAndData", nil, []string{"--store", "postgres://h/db", "--data", dir, "show", "x"}, 2, "--store and --data"},
		{"BothVariables", []string{"ASSISTANT_STORE=postgres://h/db", "ASSISTANT_DATA=" + dir}, []string{"show", "x"}, 2, "ASSISTANT_STORE and ASSISTANT_DATA are both set"},
		{"BadHost", []string{returns.EnvHost + "=two words"}, []string{"--store", "postgres://h/db", "show", "x"}, 2, "ASSISTANT_HOST"},
		{"Unreachable", nil, []string{"--store", "postgres://someone:" + password + "@127.0.0.1:1/db?connect_timeout=5", "show", "x"}, 1, "127.0.0.1:1"},
		{"UnreachableFromEnv", []string{"ASSISTANT_STORE=postgresql://someone:" + password + "@127.0.0.1:1/db?connect_timeout=5"}, []string{"start", "x", "A3003"}, 1, "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := exec.Command(assistantBin(), withDefaults(tc.args, "--output", "json")...)
			c.Env = append(os.Environ(), tc.env...)
			c.Dir = t.TempDir()
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			code := exitOf(t, c.Run())
			stderr := errb.String()
			if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want %d and one line holding %q", code, stderr, tc.code, tc.want)
			}
			if strings.Contains(stderr, password) || strings.Contains(out.String(), password) {
				t.Errorf("the password is echoed: %q %q", stderr, out.String())
			}
			if entries, _ := os.ReadDir(c.Dir); len(entries) > 0 {
				t.Errorf("the command made %d files in its working dir", len(entries))
			}
		})
	}
}

// TestPostgresBackupWaitVerify: backup refuses with one line pointing at
// pg_dump (nothing made); verify is clean; wait ends exit 4 once the
// business schema is dropped under it.
func TestPostgresBackupWaitVerify(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, nil, "start", "b1", "A3003", "--reason", "too small")
	backup := filepath.Join(t.TempDir(), "bk")
	if _, stderr, code := pg.run(t, nil, "backup", backup); code != 2 || !strings.Contains(stderr, "pg_dump -n checkpoints -n business") {
		t.Errorf("backup: exit %d, %q; want 2 pointing at pg_dump", code, stderr)
	}
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Errorf("backup made %s: %v", backup, err)
	}
	pg.verifyClean(t)

	w := startProc(t, pg.cmd(nil, "wait", "b1", "--timeout", "60s"))
	// Let wait open its stores and take its first look: a schema dropped
	// before that is a failed read (exit 1), not this case. After it, the
	// outcome is the same whenever wait looks next. It has once its check
	// that the schema business is still there, which it makes before each
	// look, ran a second time: pg_stat_activity shows that query (cmd's
	// stores_postgres.go) as its session's last, with a later start.
	lookedAt := func() string {
		return pg.query(t, `SELECT coalesce(max(query_start)::text, '') FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
			AND query = 'SELECT to_regclass(''business.tasks'') IS NOT NULL'`)
	}
	var first string
	eventually(t, "wait checks that its schema is there", func() bool { first = lookedAt(); return first != "" })
	eventually(t, "wait checks that its schema is there again", func() bool { return lookedAt() != first })
	pg.exec(t, `DROP SCHEMA business CASCADE`)
	select {
	case code := <-w.done:
		if code != 4 || !strings.Contains(w.stderr.String(), "was dropped while waiting") {
			t.Errorf("wait after the schema was dropped: exit %d, %q; want 4", code, w.stderr.String())
		}
	case <-time.After(30 * time.Second):
		w.Process.Kill()
		t.Fatal("wait did not end after its schema was dropped")
	}
}

// TestPostgresBatchDecideImport: orders import, a batch and a decide file
// on PostgreSQL: one task, draft and application per row.
func TestPostgresBatchDecideImport(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	const n = 40
	rows, orders := rowFiles(t, n)
	var decisions strings.Builder
	decisions.WriteString("task,action\n")
	for i := range n {
		fmt.Fprintf(&decisions, "row-%04d,approve\n", i)
	}
	decide := filepath.Join(t.TempDir(), "decide.csv")
	if err := os.WriteFile(decide, []byte(decisions.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := pg.must(t, nil, "orders", "import", orders); fmt.Sprint(v["added"]) != fmt.Sprint(n) {
		t.Fatalf("orders import: %v", v)
	}
	if got := pg.query(t, `SELECT count(*) FROM business.orders WHERE order_id LIKE 'R%'`); got != fmt.Sprint(n) {
		t.Errorf("orders stored = %s, want %d", got, n)
	}
	pg.must(t, nil, "batch", "b1", rows, "--chunk", "16")
	if got := pg.query(t, `SELECT count(*) FROM business.tasks WHERE task_id LIKE 'row-%' AND status = 'waiting'`); got != fmt.Sprint(n) {
		t.Errorf("row tasks waiting after the batch = %s, want %d", got, n)
	}
	pg.must(t, nil, "decide", decide)
	if got := pg.query(t, `SELECT count(*) FROM business.tasks WHERE task_id LIKE 'row-%' AND status = 'done' AND stage = 'submitted'`); got != fmt.Sprint(n) {
		t.Errorf("submitted row tasks = %s, want %d", got, n)
	}
	if got := pg.query(t, `SELECT count(*) FROM business.applications a JOIN business.drafts d ON d.draft_id = a.draft_id WHERE d.task_id LIKE 'row-%'`); got != fmt.Sprint(n) {
		t.Errorf("applications = %s, want %d (one per task)", got, n)
	}
	if got := pg.query(t, `SELECT count(*) FROM (SELECT task_id FROM business.drafts WHERE task_id LIKE 'row-%' GROUP BY task_id HAVING count(*) > 1) d`); got != "0" {
		t.Errorf("%s row tasks have more than one draft", got)
	}
	pg.verifyClean(t)
}

// TestPostgresVerifyNamesTheIdentity: verify on the server reports the
// data dir identity each schema carries, the same for both.
func TestPostgresVerifyNamesTheIdentity(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, nil, "start", "v1", "A3003", "--reason", "too small")
	want := pg.query(t, `SELECT id FROM checkpoints.data_dir`)
	if got := pg.query(t, `SELECT id FROM business.data_dir`); got != want {
		t.Fatalf("the schemas carry %s and %s", want, got)
	}
	out, errOut, code := pg.run(t, nil, "verify")
	var rep struct {
		Files []struct {
			File      string  `json:"file"`
			DataDirID *string `json:"data_dir_id"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("verify: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if len(rep.Files) != 2 {
		t.Fatalf("verify lists %d schemas, want 2\n%s", len(rep.Files), out)
	}
	for _, f := range rep.Files {
		if f.DataDirID == nil || *f.DataDirID != want {
			t.Errorf("verify: schema %s data_dir_id %v, want %s", f.File, f.DataDirID, want)
		}
	}
}
