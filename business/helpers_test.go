package business

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"assistant/internal/pgtest"
	"assistant/internal/testkit"
)

// t0 is the fixed clock of the tests: the moment the seeded file is created.
var t0 = time.Date(2025, time.March, 10, 9, 0, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time {
	return func() time.Time { return t }
}

// seedCSV returns the teaching orders the CLI seeds with.
var seedCSV = testkit.SeedOrders

// mustOpen opens the store at path and closes it when the test ends.
func mustOpen(tb testing.TB, path string, opts Options) *Store {
	tb.Helper()
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// storeKind names the database a test's store runs on: a SQLite file,
// or a PostgreSQL database (pgtest: skipped without a server, a failure
// in CI).
type storeKind = pgtest.Kind

// The stores the behavioural tests run against.
const (
	sqliteStore = pgtest.SQLite
	pgStore     = pgtest.Postgres
)

// forStores runs fn as one subtest per store kind, named after it.
var forStores = pgtest.ForKinds

// openStore opens a new store of kind with opts (a SQLite file in a fresh
// directory, made with opts.Create; a fresh PostgreSQL database) and
// closes it when the test ends. path is the file's, "" on PostgreSQL.
func openStore(tb testing.TB, kind storeKind, opts Options) (s *Store, path string) {
	tb.Helper()
	if kind == pgStore {
		s, err := OpenPostgres(context.Background(), pgtest.SharedDatabase(tb), opts)
		if err != nil {
			tb.Fatalf("OpenPostgres: %v", err)
		}
		tb.Cleanup(func() { s.Close() })
		return s, ""
	}
	path = filepath.Join(tb.TempDir(), "business.sqlite")
	opts.Create = true
	return mustOpen(tb, path, opts), path
}

// newSeeded creates a seeded SQLite store, created at t0, in a fresh
// directory.
func newSeeded(tb testing.TB) (*Store, string) {
	tb.Helper()
	return newSeededOn(tb, sqliteStore)
}

// newSeededOn creates a seeded store of kind, created at t0 (a SQLite file
// in a fresh directory, and its path; or a fresh PostgreSQL database, and
// "").
func newSeededOn(tb testing.TB, kind storeKind) (*Store, string) {
	tb.Helper()
	if kind == pgStore || migrationsOverride != nil {
		// withMigrations: a file of the steps the test makes this build
		// know, not the template's.
		return openStore(tb, kind, Options{Seed: seedCSV(tb), Now: fixedClock(t0)})
	}
	path := filepath.Join(tb.TempDir(), "business.sqlite")
	seededFile.CopyTo(tb, path)
	return mustOpen(tb, path, Options{Now: fixedClock(t0)}), path
}

// seededFile is a seeded business.sqlite created at t0, made once for the
// test binary: newSeededOn opens a copy of it.
var seededFile = testkit.NewFileTemplate(func(path string) error {
	seed, err := testkit.ReadSeedOrders()
	if err != nil {
		return err
	}
	s, err := Open(context.Background(), path, Options{Create: true, Seed: seed, Now: fixedClock(t0)})
	if err != nil {
		return err
	}
	return s.Close()
})

// mustExec runs query on s: SQL of s's database, or without parameters
// and valid on both.
func mustExec(tb testing.TB, s *Store, query string, args ...any) {
	tb.Helper()
	if _, err := s.h.Q().ExecContext(context.Background(), query, args...); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// mustPrepare prepares the draft of taskID for demo-user's order.
func mustPrepare(tb testing.TB, s *Store, taskID, orderID string, ttl time.Duration, now time.Time) Draft {
	tb.Helper()
	d, _, err := s.PrepareDraft(context.Background(), taskID, orderID, "demo-user", "size", ttl, now)
	if err != nil {
		tb.Fatalf("PrepareDraft(%s, %s): %v", taskID, orderID, err)
	}
	return d
}

// rawExec runs statements on path with a bare connection: no business
// pragmas, as another program would.
func rawExec(tb testing.TB, path string, stmts ...string) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}

// count runs query, a count, on s: SQL of s's database, or without
// parameters and valid on both.
func count(tb testing.TB, s *Store, query string, args ...any) int {
	tb.Helper()
	var n int
	if err := s.h.Q().QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// sqliteMagic opens every SQLite database file (https://sqlite.org/fileformat.html).
const sqliteMagic = "SQLite format 3\x00"

// raceForOneRow runs fn(0) … fn(n-1) at once (testkit.Race), each a
// writer that returns the id of the row it made or found and whether it
// made it (fresh), and checks that every writer succeeded with the same
// id and exactly one made the row.
func raceForOneRow(t *testing.T, n int, fn func(i int) (id string, fresh bool, err error)) {
	t.Helper()
	type result struct {
		id    string
		fresh bool
		err   error
	}
	results := make([]result, n)
	testkit.Race(n, func(i int) error {
		id, fresh, err := fn(i)
		results[i] = result{id, fresh, err}
		return nil
	})
	fresh := 0
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("writer %d: %v", i, r.err)
		}
		if r.id != results[0].id {
			t.Errorf("writer %d got %s, writer 0 got %s", i, r.id, results[0].id)
		}
		if r.fresh {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d writers made a new row, want exactly 1", fresh)
	}
}
