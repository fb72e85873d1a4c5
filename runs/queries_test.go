package runs

import (
	"testing"

	"assistant/internal/sqlstore/sqlstoretest"
)

// TestQueriesForEachDatabase: every statement is written for SQLite and
// for PostgreSQL, with as many parameters on both (sqlstoretest).
func TestQueriesForEachDatabase(t *testing.T) {
	t.Parallel()
	sqlstoretest.CheckQueries(t, sqliteQueries, postgresQueries)
}
