package e2e

// End-to-end tests on PostgreSQL (issue 18): the built binary with --store
// on a database of its own per test (internal/pgtest: skipped without a
// server, failed in CI), in separate processes, as on a data dir. Two host
// identities (ASSISTANT_HOST) on this one machine stand for two machines:
// a lease of the other "host" is told dead only by its expiry.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"assistant/flow/returns"
	"assistant/internal/pgtest"
)

// Two machines' host identities.
var (
	hostA = []string{returns.EnvHost + "=machine-a"}
	hostB = []string{returns.EnvHost + "=machine-b"}
)

// pgStore is a test's PostgreSQL database, the place its commands keep
// both stores.
type pgStore struct{ url string }

// newPGStore gives the test a new, empty database.
func newPGStore(t *testing.T) pgStore {
	t.Helper()
	return pgStore{url: pgtest.Database(t)}
}

// cmd is the binary with args on the store, env added to this process's.
func (s pgStore) cmd(env []string, args ...string) *exec.Cmd {
	c := exec.Command(assistantBin(), append([]string{"--store", s.url, "--output", "json"}, args...)...)
	c.Env = append(os.Environ(), env...)
	return c
}

// run runs the binary on the store and returns stdout, stderr and the exit
// code (128+signal for a killed process).
func (s pgStore) run(tb testing.TB, env []string, args ...string) (string, string, int) {
	tb.Helper()
	c := s.cmd(env, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), exitOf(tb, err)
}

// must runs the binary on the store and fails unless it exits 0; it
// decodes stdout.
func (s pgStore) must(tb testing.TB, env []string, args ...string) map[string]any {
	tb.Helper()
	out, errOut, code := s.run(tb, env, args...)
	return wantJSON(tb, args, out, errOut, code)
}

// query runs one SQL query on the database and returns the first column
// of the first row as text.
func (s pgStore) query(tb testing.TB, q string, args ...any) string {
	tb.Helper()
	var v any
	s.session(tb, func(ctx context.Context, conn *pgx.Conn) {
		if err := conn.QueryRow(ctx, q, args...).Scan(&v); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	})
	return fmt.Sprint(v)
}

// session runs fn on a session of its own on the database, closed once
// fn returns (or fails tb).
func (s pgStore) session(tb testing.TB, fn func(ctx context.Context, conn *pgx.Conn)) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	fn(ctx, conn)
}

// apps counts the applications of task's drafts.
func (s pgStore) apps(tb testing.TB, task string) string {
	tb.Helper()
	return s.query(tb, `SELECT count(*) FROM business.applications a JOIN business.drafts d ON d.draft_id = a.draft_id WHERE d.task_id = $1`, task)
}

// wantApps checks that task's drafts have want applications.
func (s pgStore) wantApps(tb testing.TB, task, want string) {
	tb.Helper()
	if got := s.apps(tb, task); got != want {
		tb.Errorf("applications of %s = %s, want %s", task, got, want)
	}
}

// verifyClean checks that verify finds the two schemas agree.
func (s pgStore) verifyClean(tb testing.TB) {
	tb.Helper()
	out, errOut, code := s.run(tb, nil, "verify")
	if code != 0 || !strings.Contains(out, `"clean": true`) {
		tb.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
}

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
			c := exec.Command(assistantBin(), append([]string{"--output", "json"}, tc.args...)...)
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
	// Give wait time to open its stores and take its first look: a schema
	// dropped before that is a failed read (exit 1), not this case. After
	// it, the outcome is the same whenever wait looks next.
	time.Sleep(1500 * time.Millisecond)
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

// TestPostgresApproveRaceAcrossHosts: two processes with different host
// identities approve one task at once, round after round: one
// application each time; each process exits 0 (it did it, or reports the
// recorded answer) or 3 (the other holds the task), as on a data dir.
func TestPostgresApproveRaceAcrossHosts(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	const rounds = 6
	orders := make([]string, rounds)
	var csv strings.Builder
	csv.WriteString("order_id,user,item,delivered_at,final_sale\n")
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
	for i := range rounds {
		orders[i] = fmt.Sprintf("RACE%02d", i)
		fmt.Fprintf(&csv, "%s,demo-user,Race item %d,%s,false\n", orders[i], i, day)
	}
	file := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	pg.must(t, hostA, "orders", "import", file)
	for i := range rounds {
		task := fmt.Sprintf("race-%d", i)
		pg.must(t, hostA, "start", task, orders[i], "--reason", "too small")
		var codes [2]int
		var wg sync.WaitGroup
		for j, env := range [][]string{hostA, hostB} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, codes[j] = pg.run(t, env, "resume", task, "--action", "approve")
			}()
		}
		wg.Wait()
		for j, c := range codes {
			if c != 0 && c != 3 {
				t.Errorf("%s: machine %c exited %d, want 0 or 3", task, 'a'+j, c)
			}
		}
		if codes[0] != 0 && codes[1] != 0 {
			t.Errorf("%s: both machines exited 3; one must have approved", task)
		}
		pg.wantApps(t, task, "1")
		if v := pg.must(t, hostB, "show", task); v["stage"] != "submitted" {
			t.Errorf("%s: stage %v, want submitted", task, v["stage"])
		}
	}
	pg.verifyClean(t)
}

// recoverUntil runs recover on env's machine until it takes task over,
// for at most limit, and returns how many runs recovered nothing first.
func (s pgStore) recoverUntil(t *testing.T, env []string, task string, limit time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(limit)
	for misses := 0; ; misses++ {
		var got struct{ Recovered []struct{ Task string } }
		out, errOut, code := s.run(t, env, "recover")
		if code != 0 {
			t.Fatalf("recover: exit %d\n%s%s", code, out, errOut)
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("recover: %v\n%s", err, out)
		}
		for _, r := range got.Recovered {
			if r.Task == task {
				return misses
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("recover did not take %s over within %v", task, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestPostgresKilledHolderRecoveredOnOtherHost: a run that holds its lease
// on machine A is killed; machine B cannot tell that A's process is gone,
// so its recover leaves the task until the lease expires, then takes it
// over and finishes it: one application.
func TestPostgresKilledHolderRecoveredOnOtherHost(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.killedBeforeSubmit(t, "k1", "")
	if misses := pg.recoverUntil(t, hostB, "k1", 3*returns.DefaultLeaseTTL); misses == 0 {
		t.Errorf("recover on B took k1 over at once; a lease of another host must be left until it expires")
	}
	pg.wantFinishedOnB(t, "k1")
}

// killedBeforeSubmit starts task on machine A, its clock off by skew ("",
// or as skewed takes it), and approves it there with the fault point
// before:submit, which kills A (exit 137) while it holds the task's lease.
func (s pgStore) killedBeforeSubmit(t *testing.T, task, skew string) {
	t.Helper()
	start, faults := hostA, "before:submit"
	if skew != "" {
		start, faults = skewed(hostA, skew), faults+","+returns.FaultClock+skew
	}
	s.must(t, start, "start", task, "A3003", "--reason", "too small")
	if _, _, code := s.run(t, append([]string{returns.FaultEnv + "=" + faults}, hostA...), "resume", task, "--action", "approve"); code != 137 {
		t.Fatalf("approve on A: exit %d, want 137 (killed at before:submit)", code)
	}
}

// wantFinishedOnB checks, after machine B recovered task, that B shows it
// done and submitted, with one application, and that verify finds the
// two schemas agree.
func (s pgStore) wantFinishedOnB(t *testing.T, task string) {
	t.Helper()
	if v := s.must(t, hostB, "show", task); v["status"] != "done" || v["stage"] != "submitted" {
		t.Errorf("%s after recover on B: %v/%v, want done/submitted", task, v["status"], v["stage"])
	}
	s.wantApps(t, task, "1")
	s.verifyClean(t)
}

// proc is a process of the binary started in the background (startProc),
// or parked by a fault point (pausedAt, startPaused).
type proc struct {
	*exec.Cmd
	stderr *bytes.Buffer
	done   <-chan int // its exit code, once it exited
}

// startProc starts c in the background, its stderr kept, and returns it.
func startProc(t *testing.T, c *exec.Cmd) proc {
	t.Helper()
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- exitOf(t, c.Wait()) }()
	return proc{c, &errb, done}
}

// goOn lets p, a paused process, go on (SIGCONT) and returns its exit
// code, failing t when it does not exit within 30 s.
func (p proc) goOn(t *testing.T) int {
	t.Helper()
	if err := p.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	return exitWithin(t, p.done, 30*time.Second)
}

// pausedAt starts the binary on env's machine with args, parked by the
// fault point (FaultPause: SIGSTOP) while it holds the task's lease, and
// returns the stopped process.
func (s pgStore) pausedAt(t *testing.T, point string, env []string, args ...string) proc {
	t.Helper()
	return startPaused(t, s.cmd(append([]string{returns.FaultEnv + "=" + point + returns.FaultPause}, env...), args...), point)
}

// startPaused starts c, whose environment parks it at the fault point
// (ASSISTANT_FAULT=point+FaultPause), and returns it once it is stopped
// there, failing t when it is not within 30 s. The process is let go and
// killed when t ends.
func startPaused(t *testing.T, c *exec.Cmd, point string) proc {
	t.Helper()
	p := startProc(t, c)
	t.Cleanup(func() { c.Process.Signal(syscall.SIGCONT); c.Process.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for !stopped(c.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%v did not reach %s", c.Args[1:], point)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// stopped reports whether process pid is stopped by a signal (state T).
func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'T'
}

// exitWithin waits for a process's exit code.
func exitWithin(t *testing.T, done <-chan int, d time.Duration) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(d):
		t.Fatalf("the process did not exit within %v", d)
	}
	return -1
}

// committed is what a holder may write for a task: its checkpoints, its
// record, its applications and decisions.
func (s pgStore) committed(t *testing.T, task string) string {
	t.Helper()
	return s.query(t, `SELECT concat_ws(' ',
		(SELECT count(*) FROM checkpoints.checkpoints WHERE thread_id = $1),
		(SELECT count(*) FROM checkpoints.writes WHERE thread_id = $1),
		(SELECT head_id FROM checkpoints.threads WHERE thread_id = $1),
		(SELECT concat_ws('/', status, stage, updated_at, lease_epoch) FROM business.tasks WHERE task_id = $1),
		(SELECT count(*) FROM business.applications a JOIN business.drafts d ON d.draft_id = a.draft_id WHERE d.task_id = $1),
		(SELECT count(*) FROM business.decisions WHERE task_id = $1))`, task)
}

// TestPostgresFencingRefusesTheLateWriter: machine A approves and is
// paused (as by a long GC or a frozen VM) before submit, holding the
// lease; its lease lapses, machine B's recover takes the task over and
// finishes it. Then A goes on: it must commit nothing and exit 3.
func TestPostgresFencingRefusesTheLateWriter(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, hostA, "start", "f1", "A3003", "--reason", "too small")
	a := pg.pausedAt(t, "before:submit", hostA, "resume", "f1", "--action", "approve")
	pg.recoverUntil(t, hostB, "f1", 3*returns.DefaultLeaseTTL)
	if v := pg.must(t, hostB, "show", "f1"); v["status"] != "done" {
		t.Fatalf("f1 after B's recover: %v, want done", v["status"])
	}
	before := pg.committed(t, "f1")
	if code := a.goOn(t); code != 3 {
		t.Errorf("the late writer on A exited %d, want 3 (lease lost)\n%s", code, a.stderr)
	}
	if after := pg.committed(t, "f1"); after != before {
		t.Errorf("the late writer committed: before %s, after %s", before, after)
	}
	pg.wantApps(t, "f1", "1")
	pg.verifyClean(t)
}

// TestPostgresStopFromOtherHost: machine B stops a task machine A drives
// (A parked between two supersteps, after review's checkpoint, holding the
// lease): the task is interrupted at once; when A goes on, its next
// superstep finds the stop, the stopped run changes no status again and
// submits nothing, and a resume on B finishes it with one application.
func TestPostgresStopFromOtherHost(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, hostA, "start", "s1", "A3003", "--reason", "too small")
	a := pg.pausedAt(t, "after-checkpoint:review", hostA, "resume", "s1", "--action", "approve", "--exit-status")
	if v := pg.must(t, hostB, "stop", "s1", "--wait", "1s"); v["status"] != "interrupted" {
		t.Fatalf("stop on B: status %v, want interrupted", v["status"])
	}
	// A sees the stop and ends its run where it is, submitting nothing.
	if code := a.goOn(t); code != 8 {
		t.Errorf("A after the stop exited %d, want 8 (interrupted)\n%s", code, a.stderr)
	}
	pg.wantApps(t, "s1", "0")
	if v := pg.must(t, hostB, "show", "s1"); v["status"] != "interrupted" {
		t.Errorf("s1 after A went on: %v, want interrupted (the stopped run changes no status again)", v["status"])
	}
	if v := pg.must(t, hostB, "resume", "s1"); v["status"] != "done" || v["stage"] != "submitted" {
		t.Errorf("resume on B: %v/%v, want done/submitted", v["status"], v["stage"])
	}
	pg.wantApps(t, "s1", "1")
	pg.verifyClean(t)
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

// TestPostgresSchemasOfTwoStoresRefused: a business schema beside a
// checkpoint schema of another store (one restored from elsewhere) is
// refused before anything is written, as two files of different data
// dirs are: exit 1, one line, the pair unchanged.
func TestPostgresSchemasOfTwoStoresRefused(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, nil, "start", "p1", "A3003", "--reason", "too small")
	pg.query(t, `WITH u AS (UPDATE checkpoints.data_dir SET id = gen_random_uuid()::text RETURNING 1) SELECT count(*) FROM u`)
	before := pg.committed(t, "p1")
	// verify reports the pair as an error finding in its report
	// (TestPostgresVerifyReportsWhatOthersRefuse).
	for _, args := range [][]string{{"show", "p1"}, {"resume", "p1", "--action", "approve"}} {
		_, stderr, code := pg.run(t, nil, args...)
		if code != 1 || !strings.Contains(stderr, "carry different identities") || strings.Count(stderr, "\n") != 1 ||
			strings.Contains(stderr, "file") || !strings.Contains(stderr, "pg_restore") {
			t.Errorf("%v: exit %d, %q; want 1 and one line naming the schemas (no files) and pg_restore", args, code, stderr)
		}
	}
	if after := pg.committed(t, "p1"); after != before {
		t.Errorf("a refused pair was written: before %s, after %s", before, after)
	}
}

// contents is every row of both schemas' tables, one md5 per table, and
// every table's columns: a database left unchanged gives the same text.
// Schemas that do not exist give nothing.
func (s pgStore) contents(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	s.session(tb, func(ctx context.Context, conn *pgx.Conn) {
		rows, err := conn.Query(ctx, `SELECT table_schema, table_name, string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema IN ('checkpoints', 'business')
		GROUP BY 1, 2 ORDER BY 1, 2`)
		if err != nil {
			tb.Fatal(err)
		}
		type table struct{ schema, name, cols string }
		var tables []table
		for rows.Next() {
			var t table
			if err := rows.Scan(&t.schema, &t.name, &t.cols); err != nil {
				tb.Fatal(err)
			}
			tables = append(tables, t)
		}
		if err := rows.Err(); err != nil {
			tb.Fatal(err)
		}
		var schemas string
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(nspname, ' ' ORDER BY nspname), '') FROM pg_namespace WHERE nspname IN ('checkpoints', 'business')`).Scan(&schemas); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, "schemas: %s\n", schemas)
		for _, t := range tables {
			name := pgx.Identifier{t.schema, t.name}.Sanitize()
			var sum string
			if err := conn.QueryRow(ctx, `SELECT coalesce(md5(string_agg(r::text, E'\n' ORDER BY r::text)), 'empty') FROM `+name+` r`).Scan(&sum); err != nil {
				tb.Fatalf("%s: %v", name, err)
			}
			fmt.Fprintf(&b, "%s (%s): %v\n", name, t.cols, sum)
		}
	})
	return b.String()
}

// TestPostgresFrozenWriterReleasesTheWriteLock: a batch on machine A is
// frozen (SIGSTOP, as a frozen VM) after a row inside its chunk's business
// transaction, which holds the write lock every writer of the database
// takes. The server ends that transaction once it has idled
// idle_in_transaction_session_timeout, so machine B's recover takes the
// batch over once A's lease lapsed (a recover before that may be busy and
// is run again) and finishes it. When A goes on, its transaction is gone
// and fencing refuses the rest: it writes nothing and exits with one
// line. Without the timeout every writer on B is busy for as long as A
// stays frozen.
func TestPostgresFrozenWriterReleasesTheWriteLock(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	const n = 8
	rows, orders := rowFiles(t, n)
	pg.must(t, hostA, "orders", "import", orders)
	a := pg.pausedAt(t, "batch:after-row", hostA, "batch", "fz", rows, "--chunk", "4")
	if got := pg.query(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'`); got == "0" {
		t.Fatalf("the frozen batch holds no transaction open; the fault point must be inside one")
	}
	// B's recover: busy (exit 3) while the frozen transaction holds the
	// write lock, nothing while A's lease lives, then the takeover.
	limit := 2*returns.DefaultLeaseTTL + 30*time.Second
	deadline := time.Now().Add(limit)
	for recovered := false; !recovered; {
		out, errOut, code := pg.run(t, hostB, "recover")
		switch {
		case code == 0:
			var got struct{ Recovered []struct{ Task string } }
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("recover: %v\n%s", err, out)
			}
			for _, r := range got.Recovered {
				recovered = recovered || r.Task == "fz"
			}
		case code != 3:
			t.Fatalf("recover on B: exit %d\n%s%s", code, out, errOut)
		}
		if !recovered && time.Now().After(deadline) {
			t.Fatalf("recover on B did not take the batch over within %v (last: exit %d %s)", limit, code, errOut)
		}
		if !recovered {
			time.Sleep(250 * time.Millisecond)
		}
	}
	if got := pg.query(t, `SELECT count(*) FROM business.tasks WHERE task_id LIKE 'row-%' AND status = 'waiting'`); got != fmt.Sprint(n) {
		t.Fatalf("row tasks waiting after B's recover = %s, want %d", got, n)
	}
	before := pg.contents(t)
	// The point stops A after every row it gets through: let it go on each
	// time, until it exits.
	going := make(chan struct{})
	go func() {
		for {
			a.Process.Signal(syscall.SIGCONT)
			select {
			case <-going:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	code := exitWithin(t, a.done, 60*time.Second)
	close(going)
	t.Logf("A went on: exit %d: %s", code, a.stderr)
	if code == 0 || strings.Count(a.stderr.String(), "\n") != 1 {
		t.Errorf("the frozen batch on A went on: exit %d, stderr %q; want a failure in one line", code, a.stderr)
	}
	if after := pg.contents(t); after != before {
		t.Errorf("the frozen batch wrote after it went on:\nbefore\n%s\nafter\n%s", before, after)
	}
	pg.verifyClean(t)
}

// exec runs SQL statements on the database.
func (s pgStore) exec(tb testing.TB, sql string) {
	tb.Helper()
	s.session(tb, func(_ context.Context, conn *pgx.Conn) { pgtest.Exec(tb, conn, sql) })
}

// TestPostgresForeignOrNewerSchemaRefusedBeforeAnyWrite: a schema named
// business or checkpoints that another program made, or that a newer
// build migrated, beside the other schema or without it, is refused by
// every command that would write, before either store opens: exit 1, one
// line naming the schema, and the database unchanged (no schema made,
// no row written). Before, a foreign business schema was refused only
// after the whole checkpoints schema had been made.
func TestPostgresForeignOrNewerSchemaRefusedBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
	files := map[string]string{
		"orders.csv": "order_id,user,item,delivered_at,final_sale\nFS001,demo-user,Item," + day + ",false\n",
		"rows.csv":   "task,order,reason\nfs-1,A3003,too small\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	commands := [][]string{
		{"start", "n1", "A3003", "--reason", "too small"},
		{"recover"},
		{"orders", "import", filepath.Join(tmp, "orders.csv")},
		{"batch", "fs", filepath.Join(tmp, "rows.csv")},
	}
	for _, tc := range []struct {
		name, schema string
		setup        func(t *testing.T, pg pgStore)
	}{
		{"ForeignBusiness", "business", func(t *testing.T, pg pgStore) {
			pg.exec(t, `CREATE SCHEMA business; CREATE TABLE business.tasks (id int)`)
		}},
		{"ForeignBusinessBesideCheckpoints", "business", func(t *testing.T, pg pgStore) {
			pg.must(t, nil, "start", "o1", "A3003", "--reason", "too small")
			pg.exec(t, `DROP SCHEMA business CASCADE; CREATE SCHEMA business; CREATE TABLE business.tasks (id int)`)
		}},
		{"ForeignCheckpoints", "checkpoints", func(t *testing.T, pg pgStore) {
			pg.exec(t, `CREATE SCHEMA checkpoints; CREATE TABLE checkpoints.threads (id int)`)
		}},
		{"NewerBusiness", "business", func(t *testing.T, pg pgStore) {
			pg.must(t, nil, "start", "o1", "A3003", "--reason", "too small")
			pg.exec(t, `INSERT INTO business.schema_version (version, name) SELECT max(version) + 1, 'future' FROM business.schema_version`)
		}},
		{"NewerCheckpointsWithoutBusiness", "checkpoints", func(t *testing.T, pg pgStore) {
			pg.must(t, nil, "start", "o1", "A3003", "--reason", "too small")
			pg.exec(t, `DROP SCHEMA business CASCADE;
				INSERT INTO checkpoints.schema_version (version, name) SELECT max(version) + 1, 'future' FROM checkpoints.schema_version`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			tc.setup(t, pg)
			before := pg.contents(t)
			for _, args := range commands {
				_, stderr, code := pg.run(t, nil, args...)
				if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "schema "+tc.schema) || !strings.Contains(stderr, "nothing was changed") {
					t.Errorf("%v: exit %d, %q; want 1 and one line naming the schema %s", args, code, stderr, tc.schema)
				}
				if after := pg.contents(t); after != before {
					t.Fatalf("%v changed the database:\nbefore\n%s\nafter\n%s", args, before, after)
				}
			}
		})
	}
}

// TestPostgresVerifyNamesTheIdentity: verify on the server reports the
// data dir identity each schema carries (before, null for both).
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

// TestPostgresLostSchemaSpeaksOfSchemas: one schema of the pair dropped
// while the other holds runs is refused in the server's words (the
// schemas, the database, pg_restore or dropping both), not a data dir's
// files: exit 1, one line, nothing made.
func TestPostgresLostSchemaSpeaksOfSchemas(t *testing.T) {
	t.Parallel()
	for _, drop := range []string{"checkpoints", "business"} {
		t.Run(drop, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			pg.must(t, nil, "start", "l1", "A3003", "--reason", "too small")
			pg.exec(t, `DROP SCHEMA `+drop+` CASCADE`)
			before := pg.contents(t)
			for _, args := range [][]string{{"show", "l1"}, {"start", "l2", "A3004", "--reason", "too small"}} {
				_, stderr, code := pg.run(t, nil, args...)
				if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "schema "+drop+" is missing") ||
					!strings.Contains(stderr, "pg_restore") || strings.Contains(stderr, "file") || strings.Contains(stderr, ".sqlite") {
					t.Errorf("%v: exit %d, %q; want 1 and one line about the schema %s and pg_restore, no files", args, code, stderr, drop)
				}
			}
			if after := pg.contents(t); after != before {
				t.Errorf("the refused commands changed the database:\nbefore\n%s\nafter\n%s", before, after)
			}
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
