package runs

import (
	"context"
	"errors"
	"testing"
	"time"

	"assistant/business"
	"assistant/internal/pgtest"
	"assistant/internal/sqlstore"
	"assistant/internal/testkit"
)

// On PostgreSQL a write outside a transaction (autocommit) must
// wait for the write lock, as on SQLite, so it never commits in the middle
// of another process's read-then-write transaction. Each test holds process
// A inside a write transaction, starts process B's write, waits until the
// server shows B waiting for a lock (or B has finished: the fault), then
// lets A go on, and checks that the outcome is one a serial order gives.

// twoProcesses opens two stores on one fresh PostgreSQL database, each on
// its own pool (two processes, as the server sees them), and returns them
// with the database's URL.
func twoProcesses(t *testing.T) (a, b *Store, url string) {
	t.Helper()
	ctx := context.Background()
	url = pgtest.Database(t)
	seed := testkit.SeedOrders(t)
	var stores [2]*Store
	for i := range stores {
		desk, err := business.OpenPostgres(ctx, url, business.Options{Seed: seed, Now: fixed(t0)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { desk.Close() })
		stores[i] = New(desk.Handle(), fixed(t0))
	}
	return stores[0], stores[1], url
}

// mustBegin opens a write transaction on s (it takes the write lock
// first), rolled back when t ends unless the test committed it.
func mustBegin(t *testing.T, s *Store) *sqlstore.Txn {
	t.Helper()
	tx, err := s.h.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

// waitable runs fn in a goroutine and returns a channel that carries its
// error once it returned (pgtest.UntilWaitingOrDone may take it and put
// it back).
func waitable(fn func() error) chan error {
	out := make(chan error, 1)
	go func() { out <- fn() }()
	return out
}

// TestPostgresRenewWaitsForTakeover: recover on host A reads a lapsed lease
// in AcquireLease's transaction and decides to take it over; the holder on
// host B renews the lease (an autocommit UPDATE) before A writes. Serially
// either A takes over and B's renewal fails (ErrLeaseLost), or B renews
// first and A finds the lease held. Without the write lock on autocommit
// writes B's renewal committed between A's read and A's write: both
// succeeded, and two processes believed they held the task.
func TestPostgresRenewWaitsForTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, url := twoProcesses(t)
	mustCreateLeased(t, a, "return-1", holder) // o1 on B, lease until t0+1m
	var renewed chan error
	check := func(Lease) Liveness {
		// A is inside its write transaction, after its read.
		renewed = waitable(func() error { return b.RenewLease(ctx, "return-1", holder.Owner, t0.Add(10*time.Minute)) })
		pgtest.UntilWaitingOrDone(t, url, renewed)
		return HolderUnknown // the lease's expiry decides: lapsed at now
	}
	me := Lease{Owner: "o2", PID: 202, Host: "host-b", Until: t0.Add(5 * time.Minute)}
	got, err := a.AcquireLease(ctx, "return-1", me, t0.Add(2*time.Minute), check)
	errB := <-renewed
	if err != nil || !got.TookOver {
		t.Fatalf("AcquireLease = %+v, %v; want a takeover", got, err)
	}
	if !errors.Is(errB, ErrLeaseLost) {
		t.Fatalf("RenewLease by the old holder after the takeover = %v, want ErrLeaseLost (it committed inside the takeover's transaction)", errB)
	}
	if l := mustTask(t, a, "return-1").Lease; l.Owner != me.Owner || !l.Until.Equal(me.Until) {
		t.Errorf("lease = %+v, want o2's until %s", l, me.Until)
	}
}

// TestPostgresStartStepWaitsForWriter: process A's write transaction has
// added step 1 of a task and not committed yet; process B starts a step of
// the same task. Serially B's step is 2. Without the write lock B's
// statement read the timeline before A's commit, took seq 1 too, and failed
// with a unique violation once A committed.
func TestPostgresStartStepWaitsForWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, url := twoProcesses(t)
	mustCreateLeased(t, a, "return-1", holder)
	tx := mustBegin(t, a)
	if _, err := tx.ExecContext(ctx, `INSERT INTO steps (task_id, seq, node, attempt, status, started_at) VALUES ($1, 1, 'draft', 1, 'running', $2)`,
		"return-1", formatTime(t0)); err != nil {
		t.Fatal(err)
	}
	var seq int
	started := waitable(func() error {
		var err error
		seq, err = b.StartStep(ctx, "return-1", "draft", t0)
		return err
	})
	pgtest.UntilWaitingOrDone(t, url, started)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil || seq != 2 {
		t.Fatalf("StartStep after another writer's step 1 = %d, %v; want 2, nil", seq, err)
	}
}

// TestPostgresStopIsFinal checks docs/design.md "A stop is final" ("Once interrupted is written,
// the stopped run changes no status again") across two processes on the
// server, in both orders: a stop runs in a write transaction (it waits
// for the lock), and the holder's status writes keep interrupted in the
// statement itself (pgKeepInterrupted).
func TestPostgresStopIsFinal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("stop waits for the run's read-then-write", func(t *testing.T) {
		a, b, url := twoProcesses(t)
		mustCreateLeased(t, a, "return-1", holder)
		tx := mustBegin(t, a)
		var status string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM tasks WHERE task_id = $1`, "return-1").Scan(&status); err != nil || status != "running" {
			t.Fatalf("status = %q, %v", status, err)
		}
		stopped := waitable(func() error { return b.RequestStop(ctx, "return-1") })
		pgtest.UntilWaitingOrDone(t, url, stopped)
		// The worst a read-then-write can do: an unguarded write of what
		// it decided from its read.
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'done', lease_owner = NULL WHERE task_id = $1`, "return-1"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-stopped; !errors.Is(err, ErrConflict) {
			t.Fatalf("stop after the run finished = %v, want ErrConflict", err)
		}
		if got := mustTask(t, a, "return-1").Status; got != "done" {
			t.Errorf("status = %s, want done (the stop came second)", got)
		}
	})

	for _, durable := range []bool{false, true} {
		name := "release waits for the stop"
		if durable {
			name += ", durable"
		}
		t.Run(name, func(t *testing.T) {
			a, b, url := twoProcesses(t)
			mustCreateLeased(t, a, "return-1", holder)
			// B's stop, inside its write transaction, has written
			// interrupted and not committed yet.
			tx := mustBegin(t, b)
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = 'interrupted' WHERE task_id = $1 AND status = 'running'`, "return-1"); err != nil {
				t.Fatal(err)
			}
			released := waitable(func() error {
				return a.Release(ctx, "return-1", Release{Owner: holder.Owner, Status: "done", Stage: "submitted", Durable: durable})
			})
			pgtest.UntilWaitingOrDone(t, url, released)
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := <-released; err != nil {
				t.Fatalf("release: %v", err)
			}
			got := mustTask(t, a, "return-1")
			if got.Status != "interrupted" || got.Stage != "submitted" || got.Lease.Owner != "" {
				t.Errorf("after the stop and the release: status %s, stage %s, holder %q; want interrupted, submitted, none", got.Status, got.Stage, got.Lease.Owner)
			}
		})
	}
}
