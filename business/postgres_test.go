package business

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	cppostgres "assistant/checkpoints/postgres"
	"assistant/internal/pgtest"
	"assistant/internal/sqlite"
	"assistant/internal/testkit"
)

// The tests of this file are about the PostgreSQL store itself: its
// schema's refusals and migrations, and the write lock that makes its
// read-then-write methods behave as on SQLite. The behavioural tests run
// on it through forStores.

// twoProcesses opens two seeded stores, their clock at t0, on the
// database at url, each on its own pool (two processes, as the server
// sees them), and closes them when t ends.
func twoProcesses(t *testing.T, url string) [2]*Store {
	t.Helper()
	var stores [2]*Store
	for i := range stores {
		s, err := OpenPostgres(context.Background(), url, Options{Seed: seedCSV(t), Now: fixedClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	return stores
}

// TestOpenPostgresRefusesNewerSchema: a schema a newer build migrated is
// refused with ErrNewerSchema, on a database that would fail any write,
// and left as it was.
func TestOpenPostgresRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	s, err := OpenPostgres(ctx, url, Options{Seed: seedCSV(t), Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn := pgtest.Connect(t, url)
	newer := len(pgMigrations()) + 1
	pgtest.Exec(t, conn, `INSERT INTO business.schema_version (version, name) VALUES ($1, 'from_the_future')`, newer)
	pgtest.Exec(t, conn, `ALTER TABLE business.tasks ADD COLUMN future text`)
	pgtest.ReadOnly(t, conn)
	err = pgtest.Unchanged(t, conn, "business", func() error {
		_, err := OpenPostgres(ctx, url, Options{Seed: seedCSV(t)})
		return err
	})
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("OpenPostgres = %v, want ErrNewerSchema", err)
	}
	if want := fmt.Sprintf("version %d, this build knows %d", newer, len(pgMigrations())); !strings.Contains(err.Error(), want) {
		t.Errorf("OpenPostgres = %q, want it to say %q", err, want)
	}
}

// TestOpenPostgresRefusesForeignSchema: a schema business that another
// program made is refused with ErrForeignFile and left as it was.
func TestOpenPostgresRefusesForeignSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stmts []string
	}{
		{"NoVersionTable", []string{`CREATE SCHEMA business`, `CREATE TABLE business.orders (name text)`, `INSERT INTO business.orders VALUES ('theirs')`}},
		{"EmptyVersionTable", []string{`CREATE SCHEMA business`, `CREATE TABLE business.schema_version (version integer, name text)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := pgtest.Database(t)
			conn := pgtest.Connect(t, url)
			for _, q := range tc.stmts {
				pgtest.Exec(t, conn, q)
			}
			err := pgtest.Unchanged(t, conn, "business", func() error {
				_, err := OpenPostgres(context.Background(), url, Options{Seed: seedCSV(t)})
				return err
			})
			if !errors.Is(err, ErrForeignFile) {
				t.Fatalf("OpenPostgres = %v, want ErrForeignFile", err)
			}
		})
	}
}

// TestOpenPostgresConcurrentOpensMigrateOnce: processes that open a new
// database at the same moment (pools of their own) all succeed; each
// migration is applied once and the seed loaded once.
func TestOpenPostgresConcurrentOpensMigrateOnce(t *testing.T) {
	const openers = 8
	ctx := context.Background()
	url := pgtest.Database(t)
	seed := seedCSV(t)
	errs := testkit.Race(openers, func(int) error {
		s, err := OpenPostgres(ctx, url, Options{Seed: seed})
		if err == nil {
			err = s.Close()
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("OpenPostgres %d: %v", i, err)
		}
	}
	conn := pgtest.Connect(t, url)
	var rows, distinct, orders, ids int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM business.schema_version`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != len(pgMigrations()) || distinct != rows {
		t.Errorf("schema_version has %d rows, %d versions; want each of %d once", rows, distinct, len(pgMigrations()))
	}
	parsed, err := parseSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM business.orders), (SELECT count(*) FROM business.data_dir)`).Scan(&orders, &ids); err != nil {
		t.Fatal(err)
	}
	if orders != len(parsed) || ids != 1 {
		t.Errorf("%d orders and %d identities after %d opens, want %d and 1", orders, ids, openers, len(parsed))
	}
}

// TestOpenPostgresDataDirIdentity: a new schema takes Options.DataDirID;
// an open that expects another identity is refused with ErrPairMismatch
// before anything is written; without one, any identity will do.
func TestOpenPostgresDataDirIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	const mine, theirs = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	s, err := OpenPostgres(ctx, url, Options{DataDirID: mine})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := s.DataDirID(ctx); err != nil || id != mine {
		t.Errorf("DataDirID = %q, %v; want %q", id, err, mine)
	}
	s.Close()
	conn := pgtest.Connect(t, url)
	pgtest.ReadOnly(t, conn)
	err = pgtest.Unchanged(t, conn, "business", func() error {
		_, err := OpenPostgres(ctx, url, Options{DataDirID: theirs})
		return err
	})
	var pe *sqlite.PairError
	if !errors.Is(err, ErrPairMismatch) || !errors.As(err, &pe) || pe.Have != mine || pe.Want != theirs {
		t.Fatalf("OpenPostgres with another identity = %v, want a *PairError (have %s, want %s)", err, mine, theirs)
	}
	for _, id := range []string{mine, ""} {
		s, err := OpenPostgres(ctx, url, Options{DataDirID: id})
		if err != nil {
			t.Fatalf("OpenPostgres with identity %q: %v", id, err)
		}
		s.Close()
	}
}

// TestPostgresUniqueViolation: PostgreSQL's unique_violation is what the
// Handle's IsUniqueViolation reports, through the store's wrapping.
func TestPostgresUniqueViolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newSeededOn(t, pgStore)
	const insert = `INSERT INTO approver_grants (owner, grantee, granted_by, granted_at) VALUES ($1, $2, $3, $4)`
	mustExec(t, s, insert, "a", "b", "a", formatTime(t0))
	_, err := s.h.Q().ExecContext(ctx, insert, "a", "b", "a", formatTime(t0))
	if err == nil || !s.h.IsUniqueViolation(fmt.Errorf("grant: %w", err)) {
		t.Fatalf("second insert = %v, want a unique violation", err)
	}
	if _, err := s.h.Q().ExecContext(ctx, `SELECT no_such_column FROM orders`); err == nil || s.h.IsUniqueViolation(err) {
		t.Errorf("another error = %v, reported as a unique violation", err)
	}
}

// TestPostgresWritersOfTwoProcessesMakeOneRow races the read-then-write
// methods from two pools on one database (two processes, as the server
// sees them), many goroutines each: one draft per task, one application
// per draft with every other submit reusing it, one decision per id. The
// write lock every write transaction takes first is what makes this true:
// without it two submits both read "no application", and the second
// insert fails on the UNIQUE key instead of reusing the first.
func TestPostgresWritersOfTwoProcessesMakeOneRow(t *testing.T) {
	ctx := context.Background()
	stores := twoProcesses(t, pgtest.Database(t))
	const perStore = 8
	race := func(t *testing.T, fn func(s *Store) (id string, fresh bool, err error)) {
		t.Helper()
		raceForOneRow(t, 2*perStore, func(i int) (string, bool, error) { return fn(stores[i%2]) })
	}

	var draft Draft
	t.Run("PrepareDraft", func(t *testing.T) {
		race(t, func(s *Store) (string, bool, error) {
			d, reused, err := s.PrepareDraft(ctx, "return-25", "A3003", "demo-user", "size", time.Hour, t0)
			return d.ID, !reused, err
		})
		var err error
		if draft, err = stores[0].DraftByTask(ctx, "return-25"); err != nil {
			t.Fatal(err)
		}
		if n := count(t, stores[0], `SELECT count(*) FROM drafts WHERE task_id = 'return-25'`); n != 1 {
			t.Errorf("drafts = %d, want 1", n)
		}
	})
	t.Run("Submit", func(t *testing.T) {
		race(t, func(s *Store) (string, bool, error) {
			a, reused, err := s.Submit(ctx, draft.ID, "demo-user", t0)
			return a.ID, !reused, err
		})
		if n := count(t, stores[0], `SELECT count(*) FROM applications WHERE draft_id = $1`, draft.ID); n != 1 {
			t.Errorf("applications = %d, want 1", n)
		}
	})
	t.Run("SubmitDecided", func(t *testing.T) {
		d2, _, err := stores[0].PrepareDraft(ctx, "return-26", "A3001", "demo-user", "size", time.Hour, t0)
		if err != nil {
			t.Fatal(err)
		}
		dec := Decision{ID: "dec-26", TaskID: "return-26", By: "demo-user", Action: "approve", DraftID: d2.ID, Version: 1, At: t0}
		race(t, func(s *Store) (string, bool, error) {
			a, reused, err := s.SubmitDecided(ctx, dec, d2.ID, "demo-user", t0)
			return a.ID, !reused, err
		})
		if n := count(t, stores[0], `SELECT count(*) FROM decisions WHERE decision_id = 'dec-26'`); n != 1 {
			t.Errorf("decisions = %d, want 1", n)
		}
	})
}

// TestOpenPostgresPairsWithTheCheckpointSchema: the business schema made
// with the checkpoint schema's identity (as the CLI opens the pair) carries
// it, and a business schema paired with another database's checkpoint
// schema is refused.
func TestOpenPostgresPairsWithTheCheckpointSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	urls := []string{pgtest.Database(t), pgtest.Database(t)}
	var ids []string
	for _, url := range urls {
		cp, err := cppostgres.Open(ctx, url, cppostgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		id, err := cp.DataDirID(ctx)
		cp.Close()
		if err != nil || len(id) != 36 {
			t.Fatalf("checkpoint DataDirID = %q, %v; want a UUID", id, err)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] {
		t.Fatalf("two databases' checkpoint schemas share identity %s", ids[0])
	}
	s, err := OpenPostgres(ctx, urls[0], Options{DataDirID: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.DataDirID(ctx); err != nil || got != ids[0] {
		t.Errorf("business DataDirID = %q, %v; want the checkpoint schema's %s", got, err, ids[0])
	}
	s.Close()
	if _, err := OpenPostgres(ctx, urls[0], Options{DataDirID: ids[1]}); !errors.Is(err, ErrPairMismatch) {
		t.Errorf("OpenPostgres with another database's identity = %v, want ErrPairMismatch", err)
	}
}

// TestOpenPostgresCheckpointSchemaAdoptsTheBusinessIdentity: a checkpoint
// schema given its identity after the business schema was made (migrated
// to checkpoint schema 2 later) adopts the business schema's, as
// checkpoints.sqlite adopts business.sqlite's, so the pair still opens.
func TestOpenPostgresCheckpointSchemaAdoptsTheBusinessIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	s, err := OpenPostgres(ctx, url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.DataDirID(ctx)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	cp, err := cppostgres.Open(ctx, url, cppostgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cp.DataDirID(ctx)
	cp.Close()
	if err != nil || got != want {
		t.Fatalf("checkpoint DataDirID = %q, %v; want the business schema's %s", got, err, want)
	}
	if s, err := OpenPostgres(ctx, url, Options{DataDirID: got}); err != nil {
		t.Fatalf("OpenPostgres of the pair: %v", err)
	} else {
		s.Close()
	}
}

// TestPostgresWriterPastTheBusyTimeoutIsBusy: a writer that waits for the
// write lock longer than the busy timeout (another process holds a write
// transaction open) fails with an error IsBusy reports and writes nothing,
// as on SQLite; once the lock is free, the same write succeeds.
func TestPostgresWriterPastTheBusyTimeoutIsBusy(t *testing.T) {
	ctx := context.Background()
	defer func(d time.Duration) { pgBusyTimeout = d }(pgBusyTimeout)
	pgBusyTimeout = 50 * time.Millisecond
	stores := twoProcesses(t, pgtest.Database(t))
	holder, err := stores[0].h.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = stores[1].PrepareDraft(ctx, "return-25", "A3003", "demo-user", "size", time.Hour, t0)
	if !IsBusy(err) {
		t.Fatalf("PrepareDraft while another process holds the write lock = %v, want busy", err)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := count(t, stores[1], `SELECT count(*) FROM drafts WHERE task_id = 'return-25'`); n != 0 {
		t.Errorf("drafts after a busy write = %d, want 0", n)
	}
	if _, _, err := stores[1].PrepareDraft(ctx, "return-25", "A3003", "demo-user", "size", time.Hour, t0); err != nil {
		t.Errorf("PrepareDraft once the lock is free: %v", err)
	}
}

// TestOpenPostgresSeed: the teaching orders are loaded with the schema
// and never again; without a seed the schema has no orders; a bad seed is
// refused before the database is touched.
func TestOpenPostgresSeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("LoadedOnce", func(t *testing.T) {
		url := pgtest.Database(t)
		s, err := OpenPostgres(ctx, url, Options{Seed: seedCSV(t), Now: fixedClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, s, "DELETE FROM orders WHERE order_id = 'A3001'")
		s.Close()
		s, err = OpenPostgres(ctx, url, Options{Seed: seedCSV(t), Now: fixedClock(t0.Add(time.Hour))})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if n := count(t, s, "SELECT count(*) FROM orders"); n != 11 {
			t.Errorf("orders after reopen = %d, want 11", n)
		}
		o, err := s.Order(ctx, "A3003", "demo-user")
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(-5 * 24 * time.Hour); !o.DeliveredAt.Equal(want) || !o.Teaching {
			t.Errorf("A3003 = %+v, want a teaching order delivered at %v (dates of the first open)", o, want)
		}
	})
	t.Run("NoSeed", func(t *testing.T) {
		s, _ := openStore(t, pgStore, Options{})
		if n := count(t, s, "SELECT count(*) FROM orders"); n != 0 {
			t.Errorf("orders = %d, want 0", n)
		}
	})
	t.Run("BadSeedTouchesNothing", func(t *testing.T) {
		url := pgtest.Database(t)
		conn := pgtest.Connect(t, url)
		err := pgtest.Unchanged(t, conn, "business", func() error {
			_, err := OpenPostgres(ctx, url, Options{Seed: []byte("order_id,user,item,delivered_days_ago,final_sale,open_application\nA1,u,x,soon,false,false\n")})
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("err = %v, want an error naming line 2", err)
		}
	})
}

// TestImportOnPostgresRefreshesStatistics: an import that adds at least
// analyzeAfter orders leaves the table analyzed (pg_class.reltuples set),
// so that the next batch's lookups by id go by the primary key; a small
// one leaves the statistics to autovacuum.
func TestImportOnPostgresRefreshesStatistics(t *testing.T) {
	tests := []struct {
		name     string
		orders   int
		analyzed bool
		dryRun   bool
	}{
		{"Large", analyzeAfter, true, false},
		{"Small", analyzeAfter - 1, false, false},
		{"DryRun", analyzeAfter, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := pgtest.Database(t)
			s, err := OpenPostgres(context.Background(), url, Options{Seed: seedCSV(t), Now: fixedClock(t0)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			var csv strings.Builder
			csv.WriteString("order_id,user,item,delivered_at,final_sale\n")
			for i := range tt.orders {
				fmt.Fprintf(&csv, "S%05d,demo-user,item %d,2026-11-20,false\n", i, i)
			}
			f, err := ParseOrders(context.Background(), strings.NewReader(csv.String()), ParseOptions{User: "demo-user", Location: time.UTC})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := s.ImportOrdersFile(context.Background(), f, ImportOptions{DryRun: tt.dryRun})
			if err != nil {
				t.Fatal(err)
			}
			if res.Added != tt.orders {
				t.Fatalf("added %d, want %d", res.Added, tt.orders)
			}
			conn := pgtest.Connect(t, url)
			var tuples float64
			if err := conn.QueryRow(context.Background(), `SELECT reltuples FROM pg_class WHERE oid = 'business.orders'::regclass`).Scan(&tuples); err != nil {
				t.Fatal(err)
			}
			// reltuples is -1 until the table is first vacuumed or
			// analyzed (a dry run's ANALYZE would count the teaching
			// orders alone).
			if tt.analyzed && tuples < float64(tt.orders) || !tt.analyzed && tuples != -1 {
				t.Fatalf("reltuples %v after importing %d orders (dry run %v): want analyzed %v", tuples, tt.orders, tt.dryRun, tt.analyzed)
			}
		})
	}
}
