package postgres

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"assistant/flow"
	"assistant/internal/pgdb"
	"assistant/internal/pgtest"
)

// holdLock runs lock (a statement that takes a lock) in a transaction of
// its own session on the database at url, held until the test ends.
func holdLock(t *testing.T, url, lock string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, lock, args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx); conn.Close(ctx) })
}

// TestLockedTableIsBusy: a table of the store that another session keeps
// locked makes a read and a write fail with lock_not_available
// (pgdb.IsBusy, exit 3 in the command line) after the sessions'
// lock_timeout, instead of waiting for as long as the lock is held.
// (Before, the store's sessions had no lock_timeout: both waited until
// the guard's deadline.)
func TestLockedTableIsBusy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, table string
		op          func(ctx context.Context, s *Store) error
	}{
		{"GetLatest", "checkpoints.checkpoints", func(ctx context.Context, s *Store) error {
			_, err := s.Get(ctx, "t", "")
			return err
		}},
		{"List", "checkpoints.checkpoints", func(ctx context.Context, s *Store) error {
			_, err := s.List(ctx, "t", flow.ListOptions{})
			return err
		}},
		{"Put", "checkpoints.threads", func(ctx context.Context, s *Store) error {
			return s.Put(ctx, &flow.Checkpoint{ThreadID: "t2", ID: "c2", Format: 1, Values: json.RawMessage(`{}`),
				Metadata: flow.Metadata{Source: flow.SourceInput}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.Database(t)
			s := openForTest(t, url)
			ctx := context.Background()
			if err := s.Put(ctx, &flow.Checkpoint{ThreadID: "t", ID: "c1", Format: 1, Values: json.RawMessage(`{}`),
				Metadata: flow.Metadata{Source: flow.SourceInput}}); err != nil {
				t.Fatal(err)
			}
			holdLock(t, url, `LOCK TABLE `+tc.table+` IN ACCESS EXCLUSIVE MODE`)
			// A guard against a hang, far above the timeout: not a timing check.
			guard, cancel := context.WithTimeout(ctx, 12*pgdb.LockTimeout)
			defer cancel()
			err := tc.op(guard, s)
			if !pgdb.IsBusy(err) || guard.Err() != nil {
				t.Fatalf("%s with %s locked: %v; want lock_not_available before the guard's deadline", tc.name, tc.table, err)
			}
		})
	}
}

// TestMigrationLockHeldIsBusy: Open on a database whose migration lock
// another session holds (a migrating process frozen inside its
// transaction) fails busy after the lock_timeout, creating nothing,
// instead of waiting for ever.
func TestMigrationLockHeldIsBusy(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	holdLock(t, url, `SELECT pg_advisory_xact_lock($1)`, migrationLock)
	guard, cancel := context.WithTimeout(context.Background(), 12*pgdb.LockTimeout)
	defer cancel()
	s, err := Open(guard, url, Options{})
	if err == nil {
		s.Close()
	}
	if !pgdb.IsBusy(err) || guard.Err() != nil {
		t.Fatalf("Open beside a held migration lock: %v; want lock_not_available before the guard's deadline", err)
	}
}
