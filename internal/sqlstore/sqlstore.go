// Package sqlstore is what the stores that keep tables in one SQL database
// share, whichever database it is: the Handle (the pool, its statement
// cache, write transactions and savepoints, durable commits), the Querier
// their methods run on, schema migrations as files, stored times, and the
// parameter markers of statements built at run time.
//
// What differs between the databases is an Engine, one per database, as
// River's riverdriver packages are: internal/sqlite for a SQLite file
// (sqlite.NewHandle) and internal/pgdb for a schema of a PostgreSQL
// database (pgdb.NewHandle). The SQL itself is the stores' own: a store
// writes each statement for each database it supports and takes the set
// of its Handle's Database when it is opened (business/queries_sqlite.go,
// business/queries_postgres.go); the Handle runs what it is given.
//
//	h := sqlite.NewHandle(db, path, "NORMAL") // or pgdb.NewHandle(db, name, lock)
//	err := h.Durable(ctx, func(q sqlstore.Querier) error {
//		_, err := q.ExecContext(ctx, insertText, args...) // the text of h.Database()
//		return err
//	})
//
// The rules it keeps on both databases:
//
//   - every write transaction takes the database's write lock first
//     (Engine.LockWrites, or BEGIN IMMEDIATE), so writers run one at a
//     time and what a method read cannot change before it commits; a
//     write statement outside a transaction waits for it too;
//   - a durable commit (Durable, InTx) survives power loss together with
//     every commit before it, and Sync makes every earlier commit durable;
//   - each statement text is prepared once per connection (Stmts), by
//     database/sql on SQLite and by pgx itself on PostgreSQL, so a store
//     method costs no round trip more than its statements.
package sqlstore

import (
	"context"
	"database/sql"
)

// Database names the database a Handle runs on.
type Database int

// The databases of the stores.
const (
	// SQLite is a SQLite file (internal/sqlite).
	SQLite Database = iota + 1
	// PostgreSQL is a schema of a PostgreSQL database (internal/pgdb).
	PostgreSQL
)

// Pick returns the one of sqlite and postgres that is for db: how a store
// takes the statements written for its Handle's database.
func Pick[T any](db Database, sqlite, postgres T) T {
	if db == PostgreSQL {
		return postgres
	}
	return sqlite
}

// Engine is what a Handle needs of its database beyond running SQL: how a
// write transaction takes the write lock, how a commit is made durable,
// and how the database reports a unique violation and the data dir
// identity. internal/sqlite and internal/pgdb implement it.
type Engine interface {
	// Database names the database.
	Database() Database
	// Pool returns what the Handle's Q runs on outside a transaction:
	// stmts, the statement cache of the pool db, or a Querier over it
	// that runs a write statement under the write lock.
	Pool(db *sql.DB, stmts *Stmts) Querier
	// LockWrites runs first in every write transaction Begin begins, so
	// that what the transaction reads cannot change under it (nothing on
	// SQLite, whose pool begins every transaction IMMEDIATE).
	LockWrites(ctx context.Context, tx *sql.Tx) error
	// Durable runs fn in a write transaction on db, committed durably
	// against power loss together with every commit before it (fn
	// returning ErrNothingWritten commits nothing and is success;
	// CommitDurable).
	Durable(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error
	// Sync makes every earlier commit on db durable.
	Sync(ctx context.Context, db *sql.DB) error
	// CachesStatements reports that the driver prepares each SQL text
	// once per connection by itself, so the statement caches (Stmts,
	// CachedTx) run every text directly instead of preparing it.
	CachesStatements() bool
	// DataDirID reads the data dir identity the database carries on q
	// ("" when it has none).
	DataDirID(ctx context.Context, q Querier) (string, error)
	// IsUniqueViolation reports a PRIMARY KEY or UNIQUE constraint
	// failure of the database.
	IsUniqueViolation(err error) bool
}
