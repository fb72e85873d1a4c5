package postgres

import (
	"context"
	"testing"

	"assistant/internal/pgtest"
)

// TestFrozenWriterDoesNotHoldFenceForEver: a fenced writer whose process
// froze inside its transaction (it holds the thread's fence lock shared
// and sends nothing more, as under SIGSTOP) is ended by the server after
// IdleInTxTimeout, so another machine's Fence gets the lock, and the
// frozen transaction commits nothing when it goes on. Without the session
// setting the Fence waits for as long as the frozen session lives (here,
// until the guard's deadline).
func TestFrozenWriterDoesNotHoldFenceForEver(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	ctx := context.Background()
	a, b := openForTest(t, url), openForTest(t, url)
	frozen, err := a.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Rollback(ctx)
	if _, err := frozen.Exec(ctx, sqlFenceLockShared, fenceLockClass, "t"); err != nil {
		t.Fatal(err)
	}
	// A guard against a hang, far above the timeout: not a timing check.
	guard, cancel := context.WithTimeout(ctx, 12*IdleInTxTimeout)
	defer cancel()
	if err := b.Fence(guard, "t", 1); err != nil {
		t.Fatalf("Fence beside a frozen writer: %v", err)
	}
	_, err = frozen.Exec(ctx, sqlRaiseFence, "t", 7)
	if err == nil {
		err = frozen.Commit(ctx)
	}
	if err == nil {
		t.Fatal("the frozen writer's transaction committed after the server should have ended it")
	}
	var epoch int64
	if err := b.pool.QueryRow(ctx, sqlFenceOf, "t").Scan(&epoch); err != nil || epoch != 1 {
		t.Fatalf("fence of t = %d, %v; want 1 (the frozen writer wrote nothing)", epoch, err)
	}
}

func openForTest(tb testing.TB, url string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), url, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
