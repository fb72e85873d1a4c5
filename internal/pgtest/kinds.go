package pgtest

import "testing"

// Kind names the database a behavioural test's store runs on.
type Kind string

// The stores the behavioural tests of a package run against.
const (
	// SQLite is a file in a fresh directory.
	SQLite Kind = "sqlite"
	// Postgres is a PostgreSQL database (SharedDatabase): skipped without
	// a server, a failure in CI.
	Postgres Kind = "postgres"
)

// ForKinds runs fn as one subtest per Kind (SQLite, then Postgres), named
// after it. The Postgres subtest calls Share first, so the stores that fn
// and its subtests open one after the other through SharedDatabase reuse
// one database.
func ForKinds(t *testing.T, fn func(t *testing.T, kind Kind)) {
	t.Helper()
	for _, kind := range []Kind{SQLite, Postgres} {
		t.Run(string(kind), func(t *testing.T) {
			if kind == Postgres {
				Share(t)
			}
			fn(t, kind)
		})
	}
}
