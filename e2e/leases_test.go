package e2e

// Leases and fencing (docs/recovery.md "Leases and fencing"): a paused
// holder is fenced once its lease is taken over, and a live holder on this
// host keeps its task whatever the clock says.

import (
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPausedHolderIsFenced: a holder paused (SIGSTOP) past its
// lease, taken over by another process that finishes the task, then
// resumed (SIGCONT), writes nothing more — no checkpoint, no status — and
// exits 3 saying it lost its lease.
func TestPausedHolderIsFenced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, _, aerr, release := approveBlocked(t, dir)
	pause(t, a)
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

// TestLivePidWinsOverClock: a process on this host whose lease
// looks lapsed to a clock that runs ahead (the lease's expiry set in the
// past) is alive, so recover takes nothing over, and the holder finishes.
func TestLivePidWinsOverClock(t *testing.T) {
	t.Parallel()
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

// TestPausedBatchIsFenced: a paused holder of a batch, whose process may
// hold the checkpoint file's write lock: a takeover raises the fence before
// it takes the lease, so either recover cannot fence (exit 3) and leaves
// the lease as it was, or it takes the batch over and the paused process,
// resumed, writes nothing more and exits 3. Either way the batch ends done
// with each row once.
func TestPausedBatchIsFenced(t *testing.T) {
	t.Parallel()
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
		pause(t, proc)
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
