package e2e

// Run lifecycle end to end (issue 5): concurrent approvals, operator stop,
// SIGKILL at random moments followed by recover, stale tasks. Every command
// is a separate process of the real binary; kills are real SIGKILLs.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// run runs the binary with args in data dir dir and returns stdout, stderr
// and the exit code (128+signal for a killed process).
func run(tb testing.TB, dir string, args ...string) (string, string, int) {
	tb.Helper()
	c := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json"}, args...)...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), exitOf(tb, err)
}

func exitOf(tb testing.TB, err error) int {
	tb.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	tb.Fatalf("run assistant: %v", err)
	return -1
}

// makeDataDir creates the data dir dir as a command that makes one would
// (read-only commands make none): it imports one order, INIT0, delivered
// two days ago, that no test uses.
func makeDataDir(t *testing.T, dir string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "init-orders.csv")
	row := "order_id,user,item,delivered_at,final_sale\nINIT0,demo-user,Data dir maker," + time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339) + ",false\n"
	if err := os.WriteFile(file, []byte(row), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "orders", "import", file)
}

// mustRun runs the binary and fails unless it exits 0; it decodes stdout.
func mustRun(tb testing.TB, dir string, args ...string) map[string]any {
	tb.Helper()
	out, errOut, code := run(tb, dir, args...)
	return wantJSON(tb, args, out, errOut, code)
}

// wantJSON fails tb unless the run of the binary with args exited 0
// (code) and printed a JSON object (out), and returns it decoded.
func wantJSON(tb testing.TB, args []string, out, errOut string, code int) map[string]any {
	tb.Helper()
	if code != 0 {
		tb.Fatalf("assistant %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		tb.Fatalf("assistant %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// query runs one SQL query on a file of the data dir (read-only) and returns
// the first column of the first row as text.
func query(tb testing.TB, dir, file, q string, args ...any) string {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, file)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var v any
	if err := db.QueryRow(q, args...).Scan(&v); err != nil {
		tb.Fatalf("%s: %s: %v", file, q, err)
	}
	return fmt.Sprint(v)
}

// batchFile writes a batch CSV of n rows, each for an eligible order of its
// own that it imports into data dir dir, each with a reason, so that every
// row's task parks at approval with one draft, and returns its path.
func batchFile(tb testing.TB, dir string, n int) string {
	tb.Helper()
	path, ordersPath := rowFiles(tb, n)
	mustRun(tb, dir, "orders", "import", ordersPath)
	return path
}

// rowFiles writes, in a fresh directory, a batch CSV of n rows (tasks
// row-0000, row-0001, …, each with a reason) and an orders CSV with an
// eligible order of demo-user for each row (R00000, R00001, …), and
// returns their paths.
func rowFiles(tb testing.TB, n int) (rows, orders string) {
	tb.Helper()
	// Each row has an order of its own: a batch runs only the first row
	// of an order (later ones are duplicate_order). Two days ago, with
	// its zone (an import refuses a bare date).
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
	var b, o strings.Builder
	b.WriteString("task,order,reason\n")
	o.WriteString("order_id,user,item,delivered_at,final_sale\n")
	for i := range n {
		fmt.Fprintf(&b, "row-%04d,R%05d,reason %d\n", i, i, i)
		fmt.Fprintf(&o, "R%05d,demo-user,Row item %d,%s,false\n", i, i, day)
	}
	tmp := tb.TempDir()
	rows, orders = filepath.Join(tmp, "rows.csv"), filepath.Join(tmp, "orders.csv")
	if err := os.WriteFile(rows, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(orders, []byte(o.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return rows, orders
}

// checkBatchDone checks the invariants of a finished n-row batch: one task
// and one draft per row, no duplicate, both files intact.
func checkBatchDone(t *testing.T, dir, batch string, n int) {
	t.Helper()
	v := mustRun(t, dir, "show", batch)
	if v["status"] != "done" {
		t.Fatalf("batch status = %v, want done: %v", v["status"], v)
	}
	want := fmt.Sprint(n)
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE kind = 'return'`); got != want {
		t.Errorf("return tasks = %s, want %s", got, want)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id LIKE 'row-%'`); got != want {
		t.Errorf("drafts = %s, want %s (one per row)", got, want)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(DISTINCT task_id) FROM drafts WHERE task_id LIKE 'row-%'`); got != want {
		t.Errorf("distinct draft tasks = %s, want %s", got, want)
	}
	// Every row task has its run: a crash between a chunk's business
	// commit and its checkpoint commit must not leave records without one.
	if got := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM threads WHERE thread_id LIKE 'row-%'`); got != want {
		t.Errorf("row runs in checkpoints.sqlite = %s, want %s", got, want)
	}
	// Each row's timeline: numbered without gaps, nothing left running, and
	// its last step the approval question it waits at.
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM (SELECT task_id FROM steps WHERE task_id LIKE 'row-%'
		GROUP BY task_id HAVING max(seq) = count(*) AND sum(status = 'running') = 0
		AND (SELECT node || ' ' || status FROM steps l WHERE l.task_id = steps.task_id ORDER BY seq DESC LIMIT 1) = 'review waiting')`); got != want {
		t.Errorf("rows with a whole timeline = %s, want %s", got, want)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE lease_owner IS NOT NULL`); got != "0" {
		t.Errorf("%s tasks still hold a lease after the batch", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE kind = 'return' AND status != 'waiting'`); got != "0" {
		t.Errorf("%s row tasks are not waiting at approval", got)
	}
	for _, f := range []string{"business.sqlite", "checkpoints.sqlite"} {
		if got := query(t, dir, f, `PRAGMA integrity_check`); got != "ok" {
			t.Errorf("%s integrity_check: %s", f, got)
		}
	}
	verifyClean(t, dir)
}

func TestConcurrentApprovals(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "c20", "A3003", "--reason", "too small")
	const n = 20
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, codes[i] = run(t, dir, "resume", "c20", "--action", "approve")
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 && c != 3 {
			t.Errorf("process %d exited %d, want 0 or 3", i, c)
		}
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = 'c20'`); got != "1" {
		t.Errorf("applications = %s, want 1", got)
	}
	if v := mustRun(t, dir, "show", "c20"); v["stage"] != "submitted" {
		t.Errorf("stage = %v, want submitted", v["stage"])
	}
}

// waitPosition polls show until the batch has handled at least min rows:
// the batch process tells its progress only through the files.
func waitPosition(t *testing.T, dir, batch string, min int, proc *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, _, code := run(t, dir, "show", batch)
		if code == 0 {
			var v struct {
				Batch struct{ Position int } `json:"batch"`
			}
			if json.Unmarshal([]byte(out), &v) == nil && v.Batch.Position >= min {
				return
			}
		}
		if proc.ProcessState != nil {
			t.Fatalf("batch process ended before row %d", min)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("batch did not reach row %d", min)
}

// startBatch starts batch b1 over rows as a background process whose JSON
// output lands in the returned buffer. The data dir is made first, so that
// show can poll it from the first moment.
func startBatch(t *testing.T, dir, rows string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	makeDataDir(t, dir)
	proc := exec.Command(assistantBin(), "--data", dir, "--output", "json", "batch", "b1", rows)
	out := &bytes.Buffer{}
	proc.Stdout = out
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	return proc, out
}

func TestBatchStopAndResume(t *testing.T) {
	dir := t.TempDir()
	// Big enough that the stop lands while the batch runs (a chunk of rows
	// is one commit, thousands of rows a second).
	proc, out := startBatch(t, dir, batchFile(t, dir, 10000))
	waitPosition(t, dir, "b1", 100, proc)

	stopped := mustRun(t, dir, "stop", "b1")
	if stopped["status"] != "interrupted" {
		t.Errorf("stop printed status %v, want interrupted", stopped["status"])
	}
	// A stop from another process is no signal to this one: without
	// --exit-status the command did its work, exit 0 with status
	// interrupted (with it, 8: TestWaitOutcomes).
	checkBatchStopped(t, dir, proc, out, "stopped batch", 1, 0)
	if v := mustRun(t, dir, "show", "b1"); v["status"] != "interrupted" {
		t.Errorf("show after stop: status %v, want interrupted", v["status"])
	}

	// Stop the resumed batch too: it ends as the first run did.
	pos := int(mustRun(t, dir, "show", "b1")["batch"].(map[string]any)["position"].(float64))
	proc = exec.Command(assistantBin(), "--data", dir, "--output", "json", "resume", "b1")
	out.Reset()
	proc.Stdout = out
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	waitPosition(t, dir, "b1", pos+100, proc)
	if v := mustRun(t, dir, "stop", "b1"); v["status"] != "interrupted" {
		t.Errorf("second stop printed status %v, want interrupted", v["status"])
	}
	checkBatchStopped(t, dir, proc, out, "stopped resume", 2, 0)

	mustRun(t, dir, "resume", "b1")
	checkBatchDone(t, dir, "b1", 10000)
	// Timeline numbers go on with no gap and no reuse.
	if got := query(t, dir, "business.sqlite", `SELECT max(seq) = count(*) FROM steps WHERE task_id = 'b1'`); got != "1" {
		t.Errorf("batch timeline has gaps or reused numbers")
	}
	// A task that finished keeps its status: stop is a conflict.
	if _, _, code := run(t, dir, "stop", "b1"); code != 3 {
		t.Errorf("stop of a finished batch exited %d, want 3", code)
	}
	if v := mustRun(t, dir, "show", "b1"); v["status"] != "done" {
		t.Errorf("after stop of a finished batch: status %v, want done", v["status"])
	}
}

func TestBatchKilledAndRecovered(t *testing.T) {
	dir := t.TempDir()
	rows := batchFile(t, dir, 5000)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("kill moments from seed %d", seed)
	for range 10 {
		// Ten kills may all land before a chunk finishes (a slow machine,
		// -race): the attempt bound is lifted, as in TestChaos.
		args := []string{"--data", dir, chaosAttempts, "recover"}
		if _, _, code := run(t, dir, "show", "b1"); code == 4 {
			// Not created yet (killed before its first commit): start it again.
			args = []string{"--data", dir, chaosAttempts, "batch", "b1", rows}
		}
		proc := exec.Command(assistantBin(), args...)
		if err := proc.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rng.IntN(450)) * time.Millisecond)
		_ = proc.Process.Signal(syscall.SIGKILL) // SIGKILL: no cleanup at all, as in a crash
		_ = proc.Wait()
	}
	// Recover until nothing is left running (a recover can itself leave a
	// row half-way only if killed; this one is not).
	for range 3 {
		mustRun(t, dir, chaosAttempts, "recover")
	}
	checkBatchDone(t, dir, "b1", 5000)
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE status = 'running'`); got != "0" {
		t.Errorf("%s tasks still running after recover", got)
	}
}

func TestStaleTaskShownWithRecoverCommand(t *testing.T) {
	dir := t.TempDir()
	// Rows enough that the kill lands while the batch runs (thousands of
	// rows a second).
	proc, _ := startBatch(t, dir, batchFile(t, dir, 5000))
	waitPosition(t, dir, "b1", 1, proc)
	_ = proc.Process.Signal(syscall.SIGKILL)
	_ = proc.Wait()

	v := mustRun(t, dir, "show", "b1")
	holder, _ := v["holder"].(map[string]any)
	if v["status"] != "running" || holder == nil || holder["alive"] != false {
		t.Fatalf("show of a killed batch: status %v holder %v, want running with holder gone", v["status"], v["holder"])
	}
	c := exec.Command(assistantBin(), "--data", dir, "--output", "text", "show", "b1")
	text, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte("is gone")) || !bytes.Contains(text, []byte("assistant --data "+dir+" recover")) {
		t.Errorf("text show does not say the holder is gone and how to recover:\n%s", text)
	}
	got := mustRun(t, dir, "recover")
	if list, _ := got["recovered"].([]any); len(list) == 0 {
		t.Errorf("recover recovered nothing: %v", got)
	}
	if v := mustRun(t, dir, "show", "b1"); v["status"] != "done" {
		t.Errorf("after recover: status %v, want done", v["status"])
	}
}

// TestSIGTERMStopsLikeStop sends SIGTERM to a running batch: it must end as
// an operator stop does — status interrupted, the step failed — but exit
// 143, so `batch … && deploy` does not go on (issue 15), and resume must
// finish it.
func TestSIGTERMStopsLikeStop(t *testing.T) {
	dir := t.TempDir()
	proc, out := startBatch(t, dir, batchFile(t, dir, 5000))
	waitPosition(t, dir, "b1", 50, proc)
	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	checkBatchStopped(t, dir, proc, out, "batch after SIGTERM", 1, 143)
	mustRun(t, dir, "resume", "b1")
	checkBatchDone(t, dir, "b1", 5000)
}

// checkBatchStopped waits for batch b1's process proc (what names it) after
// its stops-th stop: it must exit want (8 for a batch stopped from another
// process, 0 for a resume so stopped, 128+signal for a signal to it)
// printing status interrupted, its last
// timeline step failed as interrupted, and exactly stops steps so failed,
// one per stop.
func checkBatchStopped(t *testing.T, dir string, proc *exec.Cmd, out *bytes.Buffer, what string, stops, want int) {
	t.Helper()
	if code := exitOf(t, proc.Wait()); code != want {
		t.Fatalf("%s exited %d, want %d: %s", what, code, want, out)
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["status"] != "interrupted" {
		t.Fatalf("%s printed %v (%v), want status interrupted", what, v, err)
	}
	if got := query(t, dir, "business.sqlite", `SELECT status || ': ' || error FROM steps WHERE task_id = 'b1' ORDER BY seq DESC LIMIT 1`); got != "failed: run interrupted; step not completed" {
		t.Errorf("%s: last timeline step = %q", what, got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = 'b1' AND error = 'run interrupted; step not completed'`); got != fmt.Sprint(stops) {
		t.Errorf("%s: %s steps recorded as interrupted by %d stops, want %d", what, got, stops, stops)
	}
}

// TestLockedFileIsConflict holds business.sqlite's write lock from another
// connection for longer than the busy timeout: a command that must write
// exits 3 (busy, as a task held by another process) with a hint, not 1.
func TestLockedFileIsConflict(t *testing.T) {
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
	_, stderr, code := run(t, dir, "start", "t1", "A3001", "--reason", "too small")
	if code != 3 || !strings.Contains(stderr, "write lock") {
		t.Errorf("start on a locked file: exit %d, stderr %q; want 3 and a hint about the lock", code, stderr)
	}
}

// TestStopBeforeFirstCheckpoint interrupts a start, and a batch, that wait
// for the checkpoints file's write lock (another process holds it) before
// their first checkpoint: each ends as any stop does, status interrupted,
// not as a failure (show agrees, and a batch still counts its rows), and
// exits 130 as SIGINT asks; once the lock is free, resume runs it on.
func TestStopBeforeFirstCheckpoint(t *testing.T) {
	rows := filepath.Join(t.TempDir(), "rows.csv")
	if err := os.WriteFile(rows, []byte("task,order,reason\nr1,A3001,too small\nr2,A3002,broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task      string
		args      []string
		wantAfter string // status after resume
		wantRows  float64
	}{
		{"t1", []string{"start", "t1", "A3001", "--reason", "too small"}, "waiting", 0},
		{"b1", []string{"batch", "b1", rows}, "done", 2},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			dir := t.TempDir()
			release := holdWriteLock(t, dir, "checkpoints.sqlite")

			proc := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json"}, tc.args...)...)
			out := &bytes.Buffer{}
			proc.Stdout = out
			if err := proc.Start(); err != nil {
				t.Fatal(err)
			}
			// The task record is made before the first checkpoint, which waits.
			deadline := time.Now().Add(4 * time.Second)
			for query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id = ?`, tc.task) != "1" {
				if time.Now().After(deadline) {
					_ = proc.Process.Kill()
					t.Fatal("no task record")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := proc.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if code := exitOf(t, proc.Wait()); code != 130 {
				t.Fatalf("interrupted before its first checkpoint: exit %d, want 130; stdout %s", code, out)
			}
			var v map[string]any
			if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["status"] != "interrupted" {
				t.Fatalf("interrupted before its first checkpoint: printed %s (%v), want status interrupted", out, err)
			}
			shown := mustRun(t, dir, "show", tc.task)
			if shown["status"] != "interrupted" {
				t.Errorf("show after the stop: status %v, want interrupted", shown["status"])
			}
			if b, _ := shown["batch"].(map[string]any); tc.wantRows > 0 && (b == nil || b["total"] != tc.wantRows) {
				t.Errorf("show after the stop: batch %v, want total %v", shown["batch"], tc.wantRows)
			}
			release()
			if v := mustRun(t, dir, "resume", tc.task); v["status"] != tc.wantAfter {
				t.Errorf("resume after the stop: status %v, want %s", v["status"], tc.wantAfter)
			}
		})
	}
}

// TestInterruptBeforeAnythingStored interrupts a start that waits for the
// business file's write lock (another process holds it) to make its task:
// nothing is stored, and the command says it was interrupted (exit 130,
// code "interrupted", one line on stderr), not that it failed.
func TestInterruptBeforeAnythingStored(t *testing.T) {
	dir := t.TempDir()
	release := holdWriteLock(t, dir, "business.sqlite")

	proc := exec.Command(assistantBin(), "--data", dir, "--output", "json", "start", "t3", "A3003", "--reason", "small")
	var out, stderr bytes.Buffer
	proc.Stdout, proc.Stderr = &out, &stderr
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until it has the business file open (its signal handling is set
	// up by then), and a little more for it to be waiting for the lock.
	deadline := time.Now().Add(4 * time.Second)
	for !hasOpen(proc.Process.Pid, "business.sqlite") {
		if time.Now().After(deadline) {
			_ = proc.Process.Kill()
			t.Fatal("start never opened business.sqlite")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if err := proc.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := exitOf(t, proc.Wait())
	var v struct{ Error struct{ Code string } }
	_ = json.Unmarshal(out.Bytes(), &v)
	if code != 130 || v.Error.Code != "interrupted" || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "interrupted by SIGINT") {
		t.Fatalf("start interrupted while waiting for the lock: exit %d, stdout %s, stderr %q; want 130, code interrupted, one line", code, out.String(), stderr.String())
	}
	release()
	if _, _, code := run(t, dir, "show", "t3"); code != 4 {
		t.Errorf("show of the interrupted start: exit %d, want 4 (nothing stored)", code)
	}
}

// holdWriteLock makes dir's files (a first command) and holds the write lock
// of file in it, as another process in a long write transaction would,
// until release is called or the test ends.
func holdWriteLock(t *testing.T, dir, file string) (release func()) {
	t.Helper()
	makeDataDir(t, dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, file)+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin() // BEGIN IMMEDIATE: takes the write lock
	if err != nil {
		t.Fatal(err)
	}
	release = func() { _ = tx.Rollback() }
	t.Cleanup(release)
	return release
}

// hasOpen reports whether process pid has a file named name open (Linux
// /proc).
func hasOpen(pid int, name string) bool {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && filepath.Base(target) == name {
			return true
		}
	}
	return false
}
