package pgdb_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"assistant/internal/pgdb"
	"assistant/internal/pgtest"
	"assistant/internal/sqlstore"
)

func TestIsWrite(t *testing.T) {
	cases := []struct {
		q    string
		want bool
	}{
		{`SELECT 1`, false},
		{"  \n\tselect x FROM t", false},
		{`-- a comment
		  SELECT x FROM t`, false},
		{`/* c */ (SELECT 1) UNION (SELECT 2)`, false},
		{`VALUES (1)`, false},
		{`TABLE t`, false},
		{`SHOW search_path`, false},
		{`INSERT INTO t VALUES (1)`, true},
		{`update t SET x = 1`, true},
		{`DELETE FROM t`, true},
		{`/* SELECT */ DELETE FROM t`, true},
		{`-- SELECT
		  UPDATE t SET x = 1`, true},
		{`WITH d AS (DELETE FROM t RETURNING x) SELECT x FROM d`, true}, // a CTE may write
		{`EXPLAIN ANALYZE DELETE FROM t`, true},                         // ANALYZE runs it
		{`MERGE INTO t USING u ON true WHEN MATCHED THEN DELETE`, true},
		{`SELECTED`, true}, // not the keyword
		{``, true},
		{`-- only a comment`, true},
	}
	for _, c := range cases {
		if got := pgdb.IsWrite(c.q); got != c.want {
			t.Errorf("IsWrite(%q) = %v, want %v", c.q, got, c.want)
		}
	}
}

// countQueries counts the statements pgx sends (each one round trip once
// its text is prepared on the connection).
type countQueries struct{ n atomic.Int64 }

func (c *countQueries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *countQueries) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// openPG returns two Handles on one fresh database with the table
// t (k text PRIMARY KEY, x integer) holding row ('a', 0), each on its own
// pool (two processes, as the server sees them), the database's URL, and
// the statement counter of the second.
func openPG(t *testing.T) (a, b *sqlstore.Handle, url string, count *countQueries) {
	t.Helper()
	url = pgtest.Database(t)
	count = &countQueries{}
	var hs [2]*sqlstore.Handle
	for i := range hs {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			cfg.Tracer = count
		}
		hs[i] = pgdb.NewHandle(stdlib.OpenDB(*cfg), "test", 42)
		t.Cleanup(func() { hs[i].Close() })
	}
	if _, err := hs[0].DB().Exec(`CREATE TABLE t (k text PRIMARY KEY, x integer NOT NULL); INSERT INTO t VALUES ('a', 0)`); err != nil {
		t.Fatal(err)
	}
	return hs[0], hs[1], url, count
}

// TestPostgresWriteOutsideTxWaitsForWriteLock: every kind of write through
// Q outside a transaction waits for another process's write transaction,
// even one that has only read (no row lock to meet), and then sees its
// commit; so a read-then-write transaction never has a write commit under
// it, as on SQLite. Without the lock each write committed at once, inside
// the other's transaction.
func TestPostgresWriteOutsideTxWaitsForWriteLock(t *testing.T) {
	ctx := context.Background()
	a, b, url, _ := openPG(t)
	cases := []struct {
		name, write string
		want        int // x of row 'a' after A's commit (x = 1) and then B's write
	}{
		{"update", `UPDATE t SET x = x * 10 WHERE k = 'a'`, 10},
		{"insert from a read", `INSERT INTO t (k, x) SELECT 'b', x FROM t WHERE k = 'a'`, 1},
		{"delete", `/* a comment first */ DELETE FROM t WHERE k = 'a' AND x = 1`, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := a.DB().Exec(`DELETE FROM t; INSERT INTO t VALUES ('a', 0)`); err != nil {
				t.Fatal(err)
			}
			tx, err := a.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var x int
			if err := tx.QueryRowContext(ctx, `SELECT x FROM t WHERE k = $1`, "a").Scan(&x); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := b.Q().ExecContext(ctx, c.write)
				done <- err
			}()
			pgtest.UntilWaitingOrDone(t, url, done)
			// A writes what it decided from its read: nothing wrote in
			// between.
			var now int
			if err := tx.QueryRowContext(ctx, `SELECT x FROM t WHERE k = $1`, "a").Scan(&now); err != nil || now != x {
				t.Fatalf("A read x = %d, then %d (%v): a write committed inside A's transaction", x, now, err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE t SET x = $1 WHERE k = $2`, x+1, "a"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got := -1
			if c.name == "insert from a read" {
				err = a.Q().QueryRowContext(ctx, `SELECT x FROM t WHERE k = 'b'`).Scan(&got)
			} else {
				err = a.Q().QueryRowContext(ctx, `SELECT x FROM t WHERE k = 'a'`).Scan(&got)
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("x = %d after A's commit then B's write, want %d (B's write after A's commit)", got, c.want)
			}
		})
	}
}

// TestPostgresWriteReturningRowsOutsideTxRefused: a write whose rows come
// back cannot commit after the lock through Q, so it is refused and writes
// nothing; inside Begin it runs.
func TestPostgresWriteReturningRowsOutsideTxRefused(t *testing.T) {
	ctx := context.Background()
	a, _, _, _ := openPG(t)
	const ins = `INSERT INTO t (k, x) VALUES ($1, 5) RETURNING x`
	var x int
	if err := a.Q().QueryRowContext(ctx, ins, "b").Scan(&x); !errors.Is(err, pgdb.ErrWriteOutsideTx) {
		t.Errorf("QueryRowContext(INSERT … RETURNING) = %v, want ErrWriteOutsideTx", err)
	}
	if rows, err := a.Q().QueryContext(ctx, ins, "c"); !errors.Is(err, pgdb.ErrWriteOutsideTx) {
		if rows != nil {
			rows.Close()
		}
		t.Errorf("QueryContext(INSERT … RETURNING) = %v, want ErrWriteOutsideTx", err)
	}
	var n int
	if err := a.Q().QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows = %d, %v; want 1: a refused write wrote", n, err)
	}
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, ins, "b").Scan(&x); err != nil || x != 5 {
		t.Fatalf("in Begin: %d, %v", x, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresAutocommitWriteRoundTrips measures the cost of the lock: a
// write through Q outside a transaction sends four statements (BEGIN, the
// lock, the write, COMMIT: four round trips, where the write alone would
// be one); a read still sends one.
func TestPostgresAutocommitWriteRoundTrips(t *testing.T) {
	ctx := context.Background()
	_, b, _, count := openPG(t)
	for range 2 { // the first run also prepares each text on the connection
		if _, err := b.Q().ExecContext(ctx, `UPDATE t SET x = x + 1 WHERE k = $1`, "a"); err != nil {
			t.Fatal(err)
		}
	}
	before := count.n.Load()
	res, err := b.Q().ExecContext(ctx, `UPDATE t SET x = x + 1 WHERE k = $1`, "a")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Errorf("RowsAffected after the commit = %d, %v; want 1", n, err)
	}
	if got := count.n.Load() - before; got != 4 {
		t.Errorf("an autocommit write sent %d statements, want 4 (BEGIN, lock, write, COMMIT)", got)
	}
	before = count.n.Load()
	var x int
	if err := b.Q().QueryRowContext(ctx, `SELECT x FROM t WHERE k = $1`, "a").Scan(&x); err != nil {
		t.Fatal(err)
	}
	if got := count.n.Load() - before; got != 1 {
		t.Errorf("a read sent %d statements, want 1", got)
	}
}

// BenchmarkPostgresAutocommitWrite is the time of one write through Q
// outside a transaction, with the lock ("Q") and without it (the pool as
// is, "DB"), on the test server.
func BenchmarkPostgresAutocommitWrite(b *testing.B) {
	ctx := context.Background()
	url := pgtest.Database(b)
	db, err := sql.Open("pgx", url)
	if err != nil {
		b.Fatal(err)
	}
	h := pgdb.NewHandle(db, "bench", 42)
	b.Cleanup(func() { h.Close() })
	if _, err := db.Exec(`CREATE TABLE t (k text PRIMARY KEY, x integer NOT NULL); INSERT INTO t VALUES ('a', 0)`); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		q    sqlstore.Querier
		text string
	}{{"Q", h.Q(), `UPDATE t SET x = x + 1 WHERE k = $1`}, {"DB", db, `UPDATE t SET x = x + 1 WHERE k = $1`}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.q.ExecContext(ctx, c.text, "a"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
