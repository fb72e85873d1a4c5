package runs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"assistant/business"
	"assistant/internal/testkit"
)

// TestPostgresTwoProcessesRace races run bookkeeping writes from two pools
// on one PostgreSQL database (two processes on two machines, as the server
// sees them): one CreateLeasedTask of a task id wins and every other gets
// ErrTaskExists; one AcquireLease of a free task wins and every other is
// told the lease is held (ErrBusy, naming the winner), never a conflict:
// the write lock makes each acquisition read what the one before it
// committed, as on SQLite; one stop of a running task wins and every other
// is ErrConflict.
func TestPostgresTwoProcessesRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, _ := twoProcesses(t)
	stores := [2]*Store{a, b}
	const writers = 12
	race := func(fn func(i int, s *Store) error) []error {
		return testkit.Race(writers, func(i int) error { return fn(i, stores[i%2]) })
	}
	// oneWins checks that exactly one writer succeeded and every other
	// failed with want.
	oneWins := func(t *testing.T, errs []error, want error) {
		t.Helper()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, want):
				t.Errorf("writer %d: %v, want %v", i, err, want)
			}
		}
		if won != 1 {
			t.Errorf("%d writers won, want 1", won)
		}
	}
	lease := func(i int) Lease {
		return Lease{Owner: fmt.Sprintf("o%d", i), PID: 100 + i, Host: fmt.Sprintf("host-%d", i%2), Until: t0.Add(time.Hour)}
	}

	t.Run("CreateLeasedTask", func(t *testing.T) {
		errs := race(func(i int, s *Store) error {
			return s.CreateLeasedTask(ctx, TaskRecord{ID: "return-1", User: "demo-user", OrderID: "A3003"}, KindReturn, time.Minute, lease(i))
		})
		oneWins(t, errs, ErrTaskExists)
	})
	t.Run("AcquireLease", func(t *testing.T) {
		if err := stores[0].CreateTask(ctx, TaskRecord{ID: "return-2", User: "demo-user", OrderID: "A3003", Status: "interrupted"}); err != nil {
			t.Fatal(err)
		}
		errs := race(func(i int, s *Store) error {
			_, err := s.AcquireLease(ctx, "return-2", lease(i), t0, func(Lease) Liveness { return HolderAlive })
			return err
		})
		oneWins(t, errs, ErrBusy)
		if rec := mustTask(t, stores[1], "return-2"); rec.Lease.Epoch != 1 {
			t.Errorf("epoch = %d after one acquisition, want 1", rec.Lease.Epoch)
		}
	})
	t.Run("RequestStop", func(t *testing.T) {
		errs := race(func(_ int, s *Store) error { return s.RequestStop(ctx, "return-1") })
		oneWins(t, errs, ErrConflict)
	})
}

// TestExistingTaskInsideInTxKeepsTheTransaction: inside a batch chunk's
// transaction (InTx) a task that exists already is ErrTaskExists and the
// transaction goes on: the next row's task is created and the commit
// keeps both. On PostgreSQL a failed statement would abort the whole
// transaction, so the inserts must not fail on the key.
func TestExistingTaskInsideInTxKeepsTheTransaction(t *testing.T) {
	t.Parallel()
	forStores(t, testExistingTaskInsideInTxKeepsTheTransaction)
}

func testExistingTaskInsideInTxKeepsTheTransaction(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, desk := newSeededOn(t, kind)
	mustCreateLeased(t, s, "return-1", holder)
	err := desk.InTx(ctx, func(tx *business.Store) error {
		rs := New(tx.Handle(), fixed(t0))
		if err := rs.CreateLeasedTask(ctx, TaskRecord{ID: "return-1", User: "demo-user", OrderID: "A3003"}, KindReturn, time.Minute, holder); !errors.Is(err, ErrTaskExists) {
			t.Errorf("CreateLeasedTask of an existing task = %v, want ErrTaskExists", err)
		}
		if err := rs.CreateTask(ctx, TaskRecord{ID: "return-1", User: "demo-user", OrderID: "A3003"}); !errors.Is(err, ErrTaskExists) {
			t.Errorf("CreateTask of an existing task = %v, want ErrTaskExists", err)
		}
		return rs.CreateLeasedTask(ctx, TaskRecord{ID: "return-2", User: "demo-user", OrderID: "A3003"}, KindReturn, time.Minute, holder)
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	if rec := mustTask(t, s, "return-2"); rec.Lease.Owner != holder.Owner {
		t.Errorf("return-2 = %+v, want it created in the chunk's commit", rec)
	}
}
