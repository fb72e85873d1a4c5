package business

import (
	"testing"

	"assistant/internal/sqlstore"
	"assistant/internal/sqlstore/sqlstoretest"
)

// TestQueriesForEachDatabase: every statement is written for SQLite and
// for PostgreSQL, with as many parameters on both (sqlstoretest).
func TestQueriesForEachDatabase(t *testing.T) {
	t.Parallel()
	sqlstoretest.CheckQueries(t, sqliteQueries, postgresQueries)
}

// TestQueriesFullBatchBuiltOnFirstUse: the text of a full import batch is
// built when a statement first needs it, once, and never at package
// init, where every command would pay for it (docs/performance.md "What
// keeps it fast").
func TestQueriesFullBatchBuiltOnFirstUse(t *testing.T) {
	t.Parallel()
	built := map[int]int{}
	q := fullBatch(func(n int) string {
		built[n]++
		return sqlstoreRows(n)
	})
	if len(built) != 0 {
		t.Fatalf("built before any use: %v", built)
	}
	for range 3 {
		if got, want := q(importBatch), sqlstoreRows(importBatch); got != want {
			t.Fatalf("full batch text %q, want %q", got[:40], want[:40])
		}
	}
	if got, want := q(2), sqlstoreRows(2); got != want {
		t.Fatalf("text of 2 rows %q, want %q", got, want)
	}
	if built[importBatch] != 1 || built[2] != 1 {
		t.Errorf("built %v, want the full batch once and the short one once", built)
	}
}

// sqlstoreRows is a statement text of n rows, as a builder returns one.
func sqlstoreRows(n int) string { return "VALUES " + sqlstore.SQLiteRows(n, 2) }
