package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"assistant/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ name, base, want string }{
		{"URL", "postgres://u:p@localhost:5432/postgres?sslmode=disable", "postgres://u:p@localhost:5432/db1?sslmode=disable"},
		{"URLWithoutDatabase", "postgresql://localhost", "postgresql://localhost/db1"},
		{"SocketURL", "postgres:///postgres?host=%2Ftmp%2Fx&user=postgres", "postgres:///db1?host=%2Ftmp%2Fx&user=postgres"},
		{"KeywordValue", "host=/tmp/x user=postgres dbname=postgres", "host=/tmp/x user=postgres dbname=postgres dbname=db1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pgtest.WithDatabase(tc.base, "db1")
			if err != nil || got != tc.want {
				t.Errorf("WithDatabase(%q) = %q, %v; want %q", tc.base, got, err, tc.want)
			}
			cfg, err := pgx.ParseConfig(got)
			if err != nil || cfg.Database != "db1" {
				t.Errorf("pgx reads %q as database %q, %v; want db1", got, cfg.Database, err)
			}
		})
	}
}

// TestDatabaseIsFreshAndOwn checks that each test gets an empty database of
// its own, in UTF8, where it may create tables.
func TestDatabaseIsFreshAndOwn(t *testing.T) {
	ctx := context.Background()
	names := map[string]bool{}
	for range 2 {
		conn, err := pgx.Connect(ctx, pgtest.Database(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var name, encoding string
		var tables int
		if err := conn.QueryRow(ctx, `SELECT current_database(), pg_encoding_to_char(encoding),
			(SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema'))
			FROM pg_database WHERE datname = current_database()`).Scan(&name, &encoding, &tables); err != nil {
			t.Fatal(err)
		}
		if names[name] || tables != 0 || encoding != "UTF8" {
			t.Errorf("database %s (seen before: %v) has %d tables, encoding %s; want a new empty UTF8 one", name, names[name], tables, encoding)
		}
		names[name] = true
		if _, err := conn.Exec(ctx, `CREATE TABLE t (x int)`); err != nil {
			t.Errorf("create a table: %v", err)
		}
	}
}

// TestRequired: CI (which sets CI=true) and ASSISTANT_REQUIRE_PG turn a
// missing server into a failure; nothing, "0" or "false" leave a skip.
func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, require string
		want        bool
	}{
		{"", "", false},
		{"true", "", true},
		{"1", "", true},
		{"", "1", true},
		{"false", "0", false},
		{"FALSE", "yes", true},
	} {
		t.Setenv(pgtest.EnvCI, tc.ci)
		t.Setenv(pgtest.EnvRequire, tc.require)
		if got := pgtest.Required(); got != tc.want {
			t.Errorf("Required() with CI=%q ASSISTANT_REQUIRE_PG=%q = %v, want %v", tc.ci, tc.require, got, tc.want)
		}
	}
}
