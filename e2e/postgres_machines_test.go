package e2e

// Many machines on one PostgreSQL database (docs/postgres.md "Many
// machines"): two host identities (ASSISTANT_HOST) on this one machine
// stand for two machines, so a lease of the other "host" is told dead only
// by its expiry; ASSISTANT_FAULT=clock:±D skews a process's wall clock by
// D, and every time a command stamps is the server's.

import (
	"assistant/flow/returns"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Two machines' host identities.
var (
	hostA = []string{returns.EnvHost + "=machine-a"}
	hostB = []string{returns.EnvHost + "=machine-b"}
)

// skewed is machine env's identity with its clock off by d.
func skewed(env []string, d string) []string {
	return append([]string{returns.FaultEnv + "=" + returns.FaultClock + d}, env...)
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

// TestPostgresSkewedHolderLeaseLapses: machine A, whose clock runs an hour
// ahead, is killed holding its lease; machine B, on time, takes the task
// over once the lease lapses by the server's clock (5 s), not an hour
// later.
func TestPostgresSkewedHolderLeaseLapses(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.killedBeforeSubmit(t, "s1", "+1h")
	pg.recoverUntil(t, hostB, "s1", 3*returns.DefaultLeaseTTL)
	pg.wantFinishedOnB(t, "s1")
}

// TestPostgresSkewedRecoverLeavesLiveLease: machine A holds a task's lease
// (parked before submit, its lease fresh); machine B, whose clock runs an
// hour ahead, runs recover at once: the lease has not lapsed by the
// server's clock, so B leaves the task alone, and A, let go on, finishes
// it.
func TestPostgresSkewedRecoverLeavesLiveLease(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, hostA, "start", "s2", "A3003", "--reason", "too small")
	a := pg.pausedAt(t, "before:submit", hostA, "resume", "s2", "--action", "approve")
	out, errOut, code := pg.run(t, skewed(hostB, "+1h"), "recover")
	if code != 0 {
		t.Fatalf("recover on B: exit %d\n%s%s", code, out, errOut)
	}
	var got struct{ Recovered []struct{ Task string } }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	for _, r := range got.Recovered {
		if r.Task == "s2" {
			t.Errorf("recover on B, an hour ahead, took s2 over from A's fresh lease")
		}
	}
	if code := a.goOn(t); code != 0 {
		t.Errorf("A after SIGCONT: exit %d, want 0\n%s", code, a.stderr)
	}
	pg.wantApps(t, "s2", "1")
	pg.verifyClean(t)
}
