package pgdb_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"assistant/internal/pgdb"
	"assistant/internal/pgtest"
	"assistant/internal/sqlstore"
)

// TestPostgresStatementsNotPrepared checks that on PostgreSQL the
// statement caches leave preparing to pgx's driver, which prepares each
// SQL text once per connection (stmtcache_… statements): a database/sql
// prepare would cost a parse and a deallocate round trip per text in
// every chunk's transaction (CachedTx), and on every pooled connection
// (Stmts). Results are the same either way.
func TestPostgresStatementsNotPrepared(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("pgx", pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	h := pgdb.NewHandle(db, "test", 42)
	defer h.Close()
	const others = `SELECT count(*) FROM pg_prepared_statements WHERE name NOT LIKE 'stmtcache_%'`
	cases := []struct {
		name string
		run  func(fn func(q sqlstore.Querier) error) error
	}{
		{"pool", func(fn func(q sqlstore.Querier) error) error {
			db.SetMaxOpenConns(1) // every statement on one session
			defer db.SetMaxOpenConns(0)
			return fn(h.Q())
		}},
		{"InTx", func(fn func(q sqlstore.Querier) error) error {
			return h.InTx(ctx, func(tx *sqlstore.Handle) error { return fn(tx.Q()) })
		}},
		{"Durable", func(fn func(q sqlstore.Querier) error) error {
			return h.Durable(ctx, fn)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run(func(q sqlstore.Querier) error {
				for i := range sqlstore.PromoteAfter + 2 {
					var got int
					if err := q.QueryRowContext(ctx, `SELECT CAST($1 AS INTEGER) + CAST($2 AS INTEGER)`, i, 1).Scan(&got); err != nil {
						return err
					}
					if got != i+1 {
						t.Errorf("run %d: got %d, want %d", i, got, i+1)
					}
				}
				var n int
				if err := q.QueryRowContext(ctx, others).Scan(&n); err != nil {
					return err
				}
				if n != 0 {
					t.Errorf("%d statements prepared through database/sql in the session, want 0 (pgx caches them)", n)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
