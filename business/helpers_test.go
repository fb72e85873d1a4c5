package business

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// t0 is the fixed clock of the tests: the moment the seeded file is created.
var t0 = time.Date(2025, time.March, 10, 9, 0, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time {
	return func() time.Time { return t }
}

// seedCSV returns the teaching orders the CLI seeds with.
func seedCSV(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "orders.csv"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

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

// newSeeded creates a seeded store, created at t0, in a fresh directory.
func newSeeded(tb testing.TB) (*Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "business.sqlite")
	return mustOpen(tb, path, Options{Create: true, Seed: seedCSV(tb), Now: fixedClock(t0)}), path
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

func count(tb testing.TB, s *Store, query string, args ...any) int {
	tb.Helper()
	var n int
	if err := s.DB().QueryRow(query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// sqliteMagic opens every SQLite database file (https://sqlite.org/fileformat.html).
const sqliteMagic = "SQLite format 3\x00"
