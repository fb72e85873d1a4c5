package pgtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Connect opens one session on the database at url, closed when tb ends:
// a test's own hand on the database, beside the store under test. A
// failure to connect fails tb.
func Connect(tb testing.TB, url string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Execer is what runs a statement: a *pgx.Conn or a pgx.Tx.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Exec runs sql with args ($1, … parameters) on conn (a session or a
// transaction) and fails tb on error.
func Exec(tb testing.TB, conn Execer, sql string, args ...any) {
	tb.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// Begin starts a transaction on conn, rolled back when tb ends unless the
// test committed it first. A failure to begin fails tb.
func Begin(tb testing.TB, conn *pgx.Conn) pgx.Tx {
	tb.Helper()
	tx, err := conn.Begin(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	// Registered after Connect's Close, so it runs before it; after a
	// commit it is a no-op.
	tb.Cleanup(func() { tx.Rollback(context.Background()) })
	return tx
}

// Fingerprint returns, as one text, every table of conn's database
// outside the system's schemas with its row count and, when the table
// schema.schema_version exists, the versions it records: what a refused
// open must leave as it was. Any error fails tb.
func Fingerprint(tb testing.TB, conn *pgx.Conn, schema string) string {
	tb.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, `SELECT table_schema || '.' || table_name FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`)
	if err != nil {
		tb.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	for _, table := range tables {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier(strings.Split(table, ".")).Sanitize()).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%d ", table, n)
	}
	if slices.Contains(tables, schema+".schema_version") {
		var versions string
		// Identifiers cannot be parameters; schema is quoted.
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(version || ' ' || name, ', ' ORDER BY version), '') FROM `+
			pgx.Identifier{schema, "schema_version"}.Sanitize()).Scan(&versions); err != nil {
			tb.Fatal(err)
		}
		b.WriteString("versions: " + versions)
	}
	return b.String()
}

// ReadOnly makes every later session of conn's database read-only, so
// that an open that wrote anything would fail. Any error fails tb.
func ReadOnly(tb testing.TB, conn *pgx.Conn) {
	tb.Helper()
	var db string
	if err := conn.QueryRow(context.Background(), `SELECT current_database()`).Scan(&db); err != nil {
		tb.Fatal(err)
	}
	Exec(tb, conn, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET default_transaction_read_only = on`)
}

// UntilWaitingOrDone returns once a session of the database at url waits
// for a lock (a writer blocked behind another's transaction) or done has
// a value (the writer did not wait: then the value is put back for the
// caller). It polls the server, with no time limit but the test's; a
// failed poll fails tb.
func UntilWaitingOrDone(tb testing.TB, url string, done chan error) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	for {
		select {
		case err := <-done:
			done <- err
			return
		default:
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(2 * time.Millisecond) // a poll interval, not an assertion
	}
}

// Unchanged calls fn (an open that must be refused) and returns its
// error, after failing tb (Errorf) when fn changed conn's database: its
// Fingerprint, with the versions of schema, differs after fn from before.
func Unchanged(tb testing.TB, conn *pgx.Conn, schema string, fn func() error) error {
	tb.Helper()
	before := Fingerprint(tb, conn, schema)
	err := fn()
	if after := Fingerprint(tb, conn, schema); after != before {
		tb.Errorf("a refused open changed the database:\n before %s\n after  %s", before, after)
	}
	return err
}
