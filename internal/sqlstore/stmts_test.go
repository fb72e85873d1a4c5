package sqlstore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

// TestStmtsTx checks the statement cache inside transactions: a query runs
// on the transaction's own connection until it has run PromoteAfter times
// (a one-shot command never opens a second connection for it), then it is
// prepared on the pool and keeps giving the same results; a query that
// does not compile gives its error as it would without the cache.
func TestStmtsTx(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "x.sqlite"), sqlite.Spec{
		ApplicationID: 0x12345678,
		Migrations:    []sqlstore.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x INTEGER)"}},
		Create:        true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wrappers := []struct {
		name string
		wrap func(*sqlstore.Stmts, *sql.Tx) sqlstore.Querier
	}{
		{"Tx", func(c *sqlstore.Stmts, tx *sql.Tx) sqlstore.Querier { return c.Tx(tx) }},
		{"CachedTx", func(c *sqlstore.Stmts, tx *sql.Tx) sqlstore.Querier { return c.CachedTx(tx) }},
	}
	for _, w := range wrappers {
		t.Run(w.name, func(t *testing.T) {
			if _, err := db.ExecContext(ctx, `DELETE FROM t`); err != nil {
				t.Fatal(err)
			}
			stmts := sqlstore.NewStmts(db)
			defer stmts.Close()
			runTxs(t, db, stmts, w.wrap)
		})
	}
}

func runTxs(t *testing.T, db *sql.DB, stmts *sqlstore.Stmts, wrap func(*sqlstore.Stmts, *sql.Tx) sqlstore.Querier) {
	ctx := context.Background()
	db.SetMaxIdleConns(1) // each run starts from one open connection
	for i := 1; i <= 2*sqlstore.PromoteAfter; i++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		q := wrap(stmts, tx)
		if _, err := q.ExecContext(ctx, `INSERT INTO t (x) VALUES (?)`, i); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE x <= ?`, i).Scan(&n); err != nil || n != i {
			t.Fatalf("run %d: count %d, %v; want %d", i, n, err, i)
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO nowhere VALUES (1)`); err == nil {
			t.Fatalf("run %d: a query on a missing table succeeded", i)
		}
		// Promotion prepares the query on the pool while tx holds the one
		// connection: a second one opens then, and not before.
		open, want := db.Stats().OpenConnections, 1
		if i >= sqlstore.PromoteAfter {
			want = 2
		}
		if open != want {
			t.Fatalf("run %d: %d connections open, want %d (promotion after %d runs)", i, open, want, sqlstore.PromoteAfter)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}
