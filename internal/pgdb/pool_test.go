package pgdb_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"assistant/internal/pgdb"
	"assistant/internal/pgtest"
	"assistant/internal/sqlstore"
)

// burstSchema is the smallest schema Open accepts: its version and the
// data dir identity.
const burstSchema = `
CREATE SCHEMA burst;
CREATE TABLE burst.schema_version (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE burst.data_dir (one bigint PRIMARY KEY CHECK (one = 1), id text NOT NULL, stamp bigint NOT NULL DEFAULT 0);`

// openBurst opens a pool of Open on url with burstSchema, closed when t
// ends.
func openBurst(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := pgdb.Open(context.Background(), url, pgdb.Spec{
		Schema:        "burst",
		Migrations:    []sqlstore.Migration{{Version: 1, Name: "init", SQL: burstSchema}},
		MigrationLock: 7,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPoolKeepsTheSessionsOfABurst checks that a pool of Open keeps the
// sessions a burst of concurrent statements opened (up to IdleConns)
// for the next burst: a server whose requests each opened and closed a
// session would have PostgreSQL fork and warm up a backend per request.
func TestPoolKeepsTheSessionsOfABurst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := pgtest.Database(t)
	admin := pgtest.Connect(t, base)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	const app = "pool-burst-test"
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db := openBurst(t, u.String())

	const burst = 12 // more than database/sql's default of 2 idle
	if burst > pgdb.IdleConns {
		t.Fatalf("burst %d is over IdleConns %d", burst, pgdb.IdleConns)
	}
	for round := range 3 {
		var conns []*sql.Conn
		for range burst {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
		var sessions int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&sessions); err != nil {
			t.Fatal(err)
		}
		if sessions != burst {
			t.Errorf("round %d: after a burst of %d sessions the pool keeps %d open; want all %d", round+1, burst, sessions, burst)
		}
		if opened := db.Stats().OpenConnections; opened != burst {
			t.Errorf("round %d: the pool holds %d connections, want %d", round+1, opened, burst)
		}
	}
}

// TestPoolOnAFullServerWaitsForItsOwnSessions checks that a pool whose
// server has no free slot for one more session (a database's CONNECTION
// LIMIT) runs its statements on the sessions it holds, handed back, and
// does not wait for a slot its own idle sessions keep taken: a burst of
// more statements at once than the limit all succeed, at once.
func TestPoolOnAFullServerWaitsForItsOwnSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := pgtest.Database(t)
	admin := pgtest.Connect(t, base)
	var db0 string
	if err := admin.QueryRow(ctx, `SELECT current_database()`).Scan(&db0); err != nil {
		t.Fatal(err)
	}
	// A role of its own: a superuser is exempt from the limit.
	role := db0 + "_r"
	const limit = 4
	pgtest.Exec(t, admin, `CREATE ROLE `+role+` LOGIN`)
	t.Cleanup(func() {
		c := pgtest.Connect(t, strings.Replace(base, "/"+db0, "/postgres", 1))
		_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+db0+` WITH (FORCE)`)
		_, _ = c.Exec(context.Background(), `DROP ROLE IF EXISTS `+role)
	})
	pgtest.Exec(t, admin, `ALTER DATABASE `+db0+` OWNER TO `+role)
	pgtest.Exec(t, admin, fmt.Sprintf(`ALTER DATABASE %s CONNECTION LIMIT %d`, db0, limit))
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("user", role)
	q.Set("connect_timeout", "3")
	u.RawQuery = q.Encode()
	db := openBurst(t, u.String())

	const burst = 3 * limit
	began := time.Now()
	errs := make(chan error, burst)
	for range burst {
		go func() {
			_, err := db.ExecContext(ctx, `SELECT pg_sleep(0.05)`)
			errs <- err
		}()
	}
	for range burst {
		if err := <-errs; err != nil {
			t.Errorf("a statement of the burst: %v", err)
		}
	}
	// The connect timeout is 3 s: a statement that waited for a slot
	// would have taken it all.
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("a burst of %d statements of 50 ms on %d slots took %v; want them run on the pool's own sessions", burst, limit, took)
	}
	if open := db.Stats().OpenConnections; open > limit {
		t.Errorf("the pool holds %d sessions on a database of %d slots", open, limit)
	}
}
