package testkit

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // the driver "sqlite"

	"assistant/internal/sqlstore"
)

// CheckDurableWrite runs write, a durable write of rows into table of the
// SQLite file at path, and fails the test unless it counted one durable
// commit (sqlstore.Syncs) and the database file itself, without its -wal,
// then holds inFile rows of table (RowsInFileAlone).
func CheckDurableWrite(tb testing.TB, path, table string, inFile int, write func() error) {
	tb.Helper()
	before := sqlstore.Syncs()
	if err := write(); err != nil {
		tb.Fatal(err)
	}
	if got := sqlstore.Syncs() - before; got != 1 {
		tb.Errorf("durable commits counted: %d, want 1", got)
	}
	if n := RowsInFileAlone(tb, path, table); n != inFile {
		tb.Errorf("rows of %s in the database file without its -wal: %d, want %d", table, n, inFile)
	}
}

// RowsInFileAlone counts the rows of table in a copy of the SQLite file at
// path made without its -wal: what the database file itself holds, as a
// power loss that kept only it would leave it.
func RowsInFileAlone(tb testing.TB, path, table string) int {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	alone := filepath.Join(tb.TempDir(), "alone.sqlite")
	if err := os.WriteFile(alone, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	db, err := sql.Open("sqlite", alone)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var n int
	// table is the caller's constant, never input.
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		tb.Fatalf("rows of %s in %s without its -wal: %v", table, path, err)
	}
	return n
}
