package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of this file are the cases of issue 13 (a stop is final, a
// lease is fenced, a retry is bounded, recovery is measured), each in
// separate processes of the built binary.

// background starts the binary with args in dir and returns it with its
// stdout and stderr; the test waits for it (wait) or kills it at the end.
func background(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json"}, args...)...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c, &out, &errb
}

// wait waits for c and returns its exit code.
func wait(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	return exitOf(t, c.Wait())
}

// eventually polls cond (a query of another process's files: there is
// nothing to wait on but the files) until it holds or 15 s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// record returns a column of task's record.
func record(t *testing.T, dir, task, column string) string {
	t.Helper()
	return query(t, dir, "business.sqlite", `SELECT coalesce(`+column+`, '') FROM tasks WHERE task_id = ?`, task)
}

// applications counts the applications made from task's draft.
func applications(t *testing.T, dir, task string) string {
	t.Helper()
	return query(t, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = ?`, task)
}

// approveBlocked parks t1 at approval, then starts `resume t1 --action
// approve` while this test holds the checkpoint file's write lock, and
// returns once that process holds the task (running, its lease taken): it
// is blocked saving the answer. release lets it go on.
func approveBlocked(t *testing.T, dir string) (proc *exec.Cmd, out, errb *bytes.Buffer, release func()) {
	t.Helper()
	mustRun(t, dir, "start", "t1", "A3003", "--reason", "size")
	release = holdWriteLock(t, dir, "checkpoints.sqlite")
	proc, out, errb = background(t, dir, "resume", "t1", "--action", "approve")
	eventually(t, "the approving process holds t1", func() bool {
		return record(t, dir, "t1", "status") == "running" && record(t, dir, "t1", "lease_owner") != ""
	})
	return proc, out, errb, release
}

// TestStopIsFinal is cases 1 and 2: a stop lands while an approval waits
// for the checkpoint file (held by another process); when the file is free
// again, no step starts after the stop, nothing is submitted, the task stays
// interrupted, and the approving command says so (exit 0, status
// interrupted; not 130 as for a signal), with the timeline recording the
// step that did not run.
func TestStopIsFinal(t *testing.T) {
	dir := t.TempDir()
	proc, out, errb, release := approveBlocked(t, dir)
	if _, stderr, code := run(t, dir, "stop", "t1", "--wait", "100ms"); code != 0 {
		t.Fatalf("stop: exit %d, %s", code, stderr)
	}
	defer func() {
		// show agrees with the record: the stop stands at the question the
		// run had reached; a plain resume puts the question back.
		if v := mustRun(t, dir, "show", "t1"); v["status"] != "interrupted" {
			t.Errorf("show after the stop: %v, want interrupted", v["status"])
		}
		// The answer was saved before the stop took effect, or it was not:
		// resuming applies it, or asks the question again.
		v := mustRun(t, dir, "resume", "t1")
		switch v["status"] {
		case "waiting":
			v = mustRun(t, dir, "resume", "t1", "--action", "approve")
		case "done":
		default:
			t.Fatalf("resume after the stop: %v, want waiting or done", v["status"])
		}
		if v["status"] != "done" || applications(t, dir, "t1") != "1" {
			t.Errorf("after the stop and a resume: %v, %s applications; want done and 1", v["status"], applications(t, dir, "t1"))
		}
	}()
	eventually(t, "t1 reads interrupted", func() bool { return record(t, dir, "t1", "status") == "interrupted" })
	stoppedAt := time.Now().UTC().Format("2006-01-02T15:04:05.000000000Z")
	release()
	code := wait(t, proc)
	var v struct{ Status string }
	_ = json.Unmarshal(out.Bytes(), &v)
	if code != 0 || v.Status != "interrupted" {
		t.Errorf("the approving command: exit %d, status %q, stderr %q; want 0 and interrupted", code, v.Status, errb.String())
	}
	if got := applications(t, dir, "t1"); got != "0" {
		t.Errorf("%s applications after the stop, want 0", got)
	}
	if got := record(t, dir, "t1", "status"); got != "interrupted" {
		t.Errorf("status after the stopped run ended = %s, want interrupted", got)
	}
	// Only the record of the step that did not run (failed, "run
	// interrupted") may carry a later time: no node ran after the stop.
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = 't1' AND started_at > ? AND (status != 'failed' OR node = 'submit')`, stoppedAt); got != "0" {
		t.Errorf("%s steps started after the stop, want 0", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = 't1' AND status = 'failed' AND error LIKE 'run interrupted%'`); got == "0" {
		t.Errorf("the timeline records no interrupted step")
	}
}

// TestPausedHolderIsFenced is case 3: a holder paused (SIGSTOP) past its
// lease, taken over by another process that finishes the task, then
// resumed (SIGCONT), writes nothing more — no checkpoint, no status — and
// exits 3 saying it lost its lease.
func TestPausedHolderIsFenced(t *testing.T) {
	dir := t.TempDir()
	a, _, aerr, release := approveBlocked(t, dir)
	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// As if the paused process ran on another machine and its lease
	// lapsed: only expiry tells then.
	rawExecBusiness(t, dir, `UPDATE tasks SET lease_host = 'elsewhere', lease_until = '2000-01-01T00:00:00.000000000Z' WHERE task_id = 't1'`)
	release()
	if v := mustRun(t, dir, "resume", "t1", "--action", "approve"); v["status"] != "done" {
		t.Fatalf("approve by the taker: %v", v)
	}
	checkpointsBefore := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM checkpoints WHERE thread_id = 't1'`)
	writesBefore := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM writes WHERE thread_id = 't1'`)
	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, a); code != 3 || !strings.Contains(aerr.String(), "lease lost") {
		t.Errorf("the paused holder: exit %d, %q; want 3 and lease lost", code, aerr.String())
	}
	if got := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM checkpoints WHERE thread_id = 't1'`); got != checkpointsBefore {
		t.Errorf("checkpoints after the paused holder went on: %s, want %s (none written)", got, checkpointsBefore)
	}
	if got := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM writes WHERE thread_id = 't1'`); got != writesBefore {
		t.Errorf("pending writes after the paused holder went on: %s, want %s", got, writesBefore)
	}
	if st, owner, apps := record(t, dir, "t1", "status"), record(t, dir, "t1", "lease_owner"), applications(t, dir, "t1"); st != "done" || owner != "" || apps != "1" {
		t.Errorf("t1 after both: status %s, lease owner %q, %s applications; want done, none, 1", st, owner, apps)
	}
}

// TestLivePidWinsOverClock is case 4: a process on this host whose lease
// looks lapsed to a clock that runs ahead (the lease's expiry set in the
// past) is alive, so recover takes nothing over, and the holder finishes.
func TestLivePidWinsOverClock(t *testing.T) {
	dir := t.TempDir()
	a, _, aerr, release := approveBlocked(t, dir)
	rawExecBusiness(t, dir, `UPDATE tasks SET lease_until = '2000-01-01T00:00:00.000000000Z' WHERE task_id = 't1'`)
	if v := mustRun(t, dir, "recover"); len(v["recovered"].([]any)) != 0 {
		t.Errorf("recover took over a live holder: %v", v)
	}
	release()
	if code := wait(t, a); code != 0 {
		t.Errorf("the holder: exit %d, %q; want 0", code, aerr.String())
	}
	if st, apps := record(t, dir, "t1", "status"), applications(t, dir, "t1"); st != "done" || apps != "1" {
		t.Errorf("t1: status %s, %s applications; want done, 1", st, apps)
	}
}

// TestAttemptsAreBounded is case 5: a node killed every time it runs is
// tried DefaultMaxAttempts (5) times, then the run ends failed with
// attempts_exhausted, each attempt on the timeline, and recover leaves it.
func TestAttemptsAreBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 8 {
		args := []string{"resume", "t1"}
		if i == 0 {
			args = []string{"start", "t1", "A3003", "--reason", "size"}
		}
		_, code, _ := faultRun(t, dir, "after:prepare", args)
		if want := 137; i >= 5 {
			want = 0
			if code != want {
				t.Fatalf("run %d: exit %d, want %d (the node is not tried again)", i+1, code, want)
			}
		} else if code != want {
			t.Fatalf("run %d: exit %d, want %d (killed after prepare)", i+1, code, want)
		}
	}
	v := mustRun(t, dir, "show", "t1")
	e, _ := v["error"].(map[string]any)
	if v["status"] != "failed" || e["code"] != "attempts_exhausted" {
		t.Errorf("show: status %v, error %v; want failed, attempts_exhausted", v["status"], v["error"])
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = 't1' AND node = 'prepare'`); got != "5" {
		t.Errorf("prepare attempts on the timeline = %s, want 5", got)
	}
	if got := mustRun(t, dir, "recover"); len(got["recovered"].([]any)) != 0 {
		t.Errorf("recover retried a run that ended failed: %v", got)
	}
}

// TestRecoverReportsFailures is case 6: a task recover cannot recover (its
// business file locked by another process past the busy timeout) makes it
// exit 3, naming the task on stderr; the JSON report names it too.
func TestRecoverReportsFailures(t *testing.T) {
	dir := t.TempDir()
	if _, code, _ := faultRun(t, dir, "after-checkpoint:lookup", []string{"start", "t1", "A3003", "--reason", "size"}); code != 137 {
		t.Fatalf("start: exit %d, want 137", code)
	}
	holdWriteLock(t, dir, "business.sqlite")
	out, stderr, code := run(t, dir, "recover")
	if code != 3 || !strings.Contains(stderr, "task t1") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("recover with t1 locked: exit %d, stderr %q; want 3 and one line naming t1", code, stderr)
	}
	if !strings.Contains(out, `"task": "t1"`) || !strings.Contains(out, `"error"`) {
		t.Errorf("recover's report does not name t1's failure: %s", out)
	}
}

// TestRecoveryFigures is case 7: recover reports what continuing a crashed
// run cost: the step the crash cut (interrupted, not counted as finished
// work), the steps kept, none redone, and the wall time.
func TestRecoveryFigures(t *testing.T) {
	dir := t.TempDir()
	if _, code, _ := faultRun(t, dir, "after:prepare", []string{"start", "t1", "A3003", "--reason", "size"}); code != 137 {
		t.Fatalf("start: exit %d, want 137", code)
	}
	out, stderr, code := run(t, dir, "recover")
	if code != 0 {
		t.Fatalf("recover: exit %d, %s", code, stderr)
	}
	var got struct {
		Recovered []struct {
			Task     string
			Recovery *struct {
				SinceCrashMS     *int64   `json:"since_crash_ms"`
				RecoveryMS       *int64   `json:"recovery_ms"`
				StepsKept        int      `json:"steps_kept"`
				StepsRedone      int      `json:"steps_redone"`
				StepsInterrupted int      `json:"steps_interrupted"`
				RedoRatio        *float64 `json:"redo_ratio"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Recovered) != 1 || got.Recovered[0].Recovery == nil {
		t.Fatalf("recover report %s (%v): want t1 with its recovery figures", out, err)
	}
	r := got.Recovered[0].Recovery
	if r.StepsKept != 1 || r.StepsRedone != 0 || r.StepsInterrupted != 1 || r.RecoveryMS == nil || r.SinceCrashMS == nil || r.RedoRatio == nil || *r.RedoRatio != 0 {
		t.Errorf("recovery figures %s; want lookup kept, prepare interrupted, none redone", fmt.Sprint(*r))
	}
}

// TestBatchStopKeepsFinishedRows is case 8: a batch ended inside a chunk
// (SIGTERM, which reaches it mid-chunk; an operator stop is written only
// between chunks, as the chunk holds the write lock) keeps the rows the
// chunk finished: its checkpoint counts exactly the row tasks that exist,
// and over a few signals some lands inside a chunk (before, a signal threw
// the whole chunk away, so the batch always stood at a chunk boundary).
func TestBatchStopKeepsFinishedRows(t *testing.T) {
	const chunk = 100
	offBoundary := false
	for attempt := 0; attempt < 6 && !offBoundary; attempt++ {
		dir := t.TempDir()
		proc, out := startBatch(t, dir, batchFile(t, dir, 20000))
		waitPosition(t, dir, "b1", 300, proc)
		// The position moves at a chunk's commit: a signal sent the moment
		// it is seen may land before the next chunk's first row ends (a
		// boundary, rightly). Later attempts wait a little longer, so that
		// the signal lands inside a chunk; a build that throws the chunk
		// away stands at a boundary however late it comes.
		time.Sleep(time.Duration(attempt) * 15 * time.Millisecond)
		if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		_ = proc.Wait()
		var v struct {
			Status string
			Batch  struct{ Position int }
		}
		if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.Status != "interrupted" {
			t.Fatalf("batch ended by SIGTERM: %s (%v)", out, err)
		}
		rows := atoi(query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'row-%'`))
		if rows != v.Batch.Position {
			t.Fatalf("stopped at position %d with %d row tasks: the checkpoint and the rows disagree", v.Batch.Position, rows)
		}
		offBoundary = v.Batch.Position%chunk != 0
	}
	if !offBoundary {
		t.Errorf("six SIGTERMs all left the batch at a chunk boundary: a signal throws away the chunk it lands in")
	}
}

// rawExecBusiness runs a statement on dir's business file as another
// program would.
func rawExecBusiness(t *testing.T, dir, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func init() {
	// The tests here start processes that must not inherit a fault point.
	os.Unsetenv("ASSISTANT_FAULT")
}

// TestOverlappingBatches is the second half of case 6: two batches over the
// same rows, run at the same time, both finish; each row's task is run once
// (one task, one draft), and nothing is left running without a holder.
func TestOverlappingBatches(t *testing.T) {
	dir := t.TempDir()
	rows := batchFile(t, dir, 3000)
	makeDataDir(t, dir) // make the data dir before both start
	b1, out1, err1 := background(t, dir, "batch", "b1", rows)
	waitPosition(t, dir, "b1", 100, b1)
	b2, out2, err2 := background(t, dir, "batch", "b2", rows)
	for _, b := range []struct {
		name     string
		proc     *exec.Cmd
		out, err *bytes.Buffer
	}{{"b1", b1, out1, err1}, {"b2", b2, out2, err2}} {
		code := wait(t, b.proc)
		var v struct{ Status string }
		_ = json.Unmarshal(b.out.Bytes(), &v)
		if code != 0 || v.Status != "done" {
			t.Errorf("%s: exit %d, status %q, stderr %q; want 0 and done", b.name, code, v.Status, b.err.String())
		}
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'row-%'`); got != "3000" {
		t.Errorf("%s row tasks, want 3000", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id LIKE 'row-%'`); got != "3000" {
		t.Errorf("%s drafts, want 3000 (one per row)", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE status = 'running'`); got != "0" {
		t.Errorf("%s tasks left running", got)
	}
}

// TestPausedBatchIsFenced is case 3 for a batch, whose paused process may
// hold the checkpoint file's write lock: a takeover raises the fence before
// it takes the lease, so either recover cannot fence (exit 3) and leaves the
// lease as it was, or it takes the batch over and the paused process,
// resumed, writes nothing more and exits 3. Either way the batch ends done
// with each row once.
func TestPausedBatchIsFenced(t *testing.T) {
	dir := t.TempDir()
	proc, _ := startBatch(t, dir, batchFile(t, dir, 6000))
	waitPosition(t, dir, "b1", 300, proc)
	pauseOutsideChunk(t, dir, proc, `UPDATE tasks SET lease_host = 'elsewhere', lease_until = '2000-01-01T00:00:00.000000000Z' WHERE task_id = 'b1'`)
	owner, epoch := record(t, dir, "b1", "lease_owner"), record(t, dir, "b1", "lease_epoch")
	_, stderr, code := run(t, dir, "recover")
	t.Logf("recover: exit %d (3: it could not fence and left the lease, or it took the batch over and met rows the paused process holds; 0: it took the batch over)", code)
	switch code {
	case 3:
		o, e := record(t, dir, "b1", "lease_owner"), record(t, dir, "b1", "lease_epoch")
		if o == owner && e == epoch {
			break // it could not fence: the lease is left as it was
		}
		// The process was paused between a chunk's two commits: recover
		// fenced the batch and took it over, then met that chunk's rows,
		// which the paused process still holds (it lets go of them after
		// its checkpoints): busy. The fence must be the takeover's.
		if got := query(t, dir, "checkpoints.sqlite", `SELECT epoch FROM fences WHERE thread_id = 'b1'`); got != fmt.Sprint(atoi(epoch)+1) {
			t.Errorf("recover changed the lease (owner %s epoch %s, was %s %s) but the fence is %s, want %d", o, e, owner, epoch, got, atoi(epoch)+1)
		}
	case 0:
		if got := query(t, dir, "checkpoints.sqlite", `SELECT epoch FROM fences WHERE thread_id = 'b1'`); got != fmt.Sprint(atoi(epoch)+1) {
			t.Errorf("fence after the takeover = %s, want %d", got, atoi(epoch)+1)
		}
	default:
		t.Fatalf("recover: exit %d, %s", code, stderr)
	}
	if err := proc.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	_ = proc.Wait()
	if code == 3 {
		mustRun(t, dir, "recover") // the batch may have ended on its own
	}
	if v := mustRun(t, dir, "show", "b1"); v["status"] != "done" {
		t.Fatalf("b1 after both: %v", v)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id LIKE 'row-%'`); got != "6000" {
		t.Errorf("%s row drafts, want 6000", got)
	}
}

// pauseOutsideChunk stops proc (SIGSTOP) at a moment it does not hold the
// business file's write lock (a batch holds it for a chunk) and runs stmt
// on that file then; it tries again, letting proc run a moment, while the
// lock is held.
func pauseOutsideChunk(t *testing.T, dir string, proc *exec.Cmd, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite")+"?_pragma=busy_timeout(100)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for try := 0; try < 100; try++ {
		if err := proc.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(stmt); err == nil {
			return
		}
		if err := proc.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // let the batch end its chunk
	}
	t.Fatal("the batch never let go of the business file's write lock")
}
