package runs

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"assistant/business"
	"assistant/internal/pgtest"
	"assistant/internal/testkit"
)

// t0 is the fixed clock of the tests: the moment the seeded file is created.
var t0 = time.Date(2025, time.March, 10, 9, 0, 0, 0, time.UTC)

// storeKind names the database a test's store runs on: a SQLite file,
// or a PostgreSQL database (pgtest: skipped without a server, a failure
// in CI).
type storeKind = pgtest.Kind

// The stores the behavioural tests run against.
const (
	sqliteStore = pgtest.SQLite
	pgStore     = pgtest.Postgres
)

// forStores runs fn as one subtest per store kind, named after it.
var forStores = pgtest.ForKinds

// newSeeded creates a seeded business.sqlite in a fresh directory, its clock
// fixed at t0, and returns the run bookkeeping over it and the desk that
// opened the file (closed when the test ends).
func newSeeded(tb testing.TB) (*Store, *business.Store) {
	tb.Helper()
	return newSeededOn(tb, sqliteStore)
}

// newSeededOn is newSeeded on a store of kind: a SQLite file in a fresh
// directory, or a fresh PostgreSQL database.
func newSeededOn(tb testing.TB, kind storeKind) (*Store, *business.Store) {
	tb.Helper()
	clock := func() time.Time { return t0 }
	opts := business.Options{Create: true, Seed: testkit.SeedOrders(tb), Now: clock}
	var desk *business.Store
	var err error
	if kind == pgStore {
		desk, err = business.OpenPostgres(context.Background(), pgtest.SharedDatabase(tb), opts)
	} else {
		path := filepath.Join(tb.TempDir(), "business.sqlite")
		seededFile.CopyTo(tb, path)
		desk, err = business.Open(context.Background(), path, business.Options{Now: clock})
	}
	if err != nil {
		tb.Fatalf("open business: %v", err)
	}
	tb.Cleanup(func() { desk.Close() })
	return New(desk.Handle(), clock), desk
}

// seededFile is a seeded business.sqlite created at t0, made once for the
// test binary: each SQLite test opens a copy of it.
var seededFile = testkit.NewFileTemplate(func(path string) error {
	seed, err := testkit.ReadSeedOrders()
	if err != nil {
		return err
	}
	desk, err := business.Open(context.Background(), path, business.Options{Create: true, Seed: seed, Now: func() time.Time { return t0 }})
	if err != nil {
		return err
	}
	return desk.Close()
})

// fixed returns a clock that always reads at.
func fixed(at time.Time) func() time.Time { return func() time.Time { return at } }

// unknown and dead are two answers a caller gives about a lease holder:
// nothing tells (the lease's expiry decides), and the process is gone.
func unknown(Lease) Liveness { return HolderUnknown }
func dead(Lease) Liveness    { return HolderGone }

// holder is the lease the tests create tasks with: owner o1, live until a
// minute after t0.
var holder = Lease{Owner: "o1", PID: 101, Host: "host-a", Until: t0.Add(time.Minute)}

// mustCreateLeased records a return task id of demo-user held by l, failing
// the test when it cannot.
func mustCreateLeased(tb testing.TB, s *Store, id string, l Lease) {
	tb.Helper()
	t := TaskRecord{ID: id, User: "demo-user", OrderID: "A3003", Reason: "size", Fingerprint: "fp-" + id}
	if err := s.CreateLeasedTask(context.Background(), t, KindReturn, 5*time.Minute, l); err != nil {
		tb.Fatalf("create leased task %s: %v", id, err)
	}
}

// mustTask reads the record of task id, failing the test when it cannot.
func mustTask(tb testing.TB, s *Store, id string) TaskRecord {
	tb.Helper()
	t, err := s.Task(context.Background(), id)
	if err != nil {
		tb.Fatalf("task %s: %v", id, err)
	}
	return t
}
