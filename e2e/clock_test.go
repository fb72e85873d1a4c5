package e2e

import (
	"encoding/json"
	"testing"

	"assistant/flow/returns"
)

// Machines whose clocks disagree share leases on one PostgreSQL server:
// every time a command stamps there is the server's (docs/postgres.md
// "Many machines"), so a lease lapses at the same moment for all of them.
// ASSISTANT_FAULT=clock:±D skews a process's wall clock by D.

// skewed is machine env's identity with its clock off by d.
func skewed(env []string, d string) []string {
	return append([]string{returns.FaultEnv + "=" + returns.FaultClock + d}, env...)
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
