package business

import (
	"context"
	"embed"
	"fmt"

	"assistant/internal/sqlitedb"
)

// The PostgreSQL store: the same tables in the schema PGSchema, migrated by
// pgmigrations/ (docs/postgres.md "The business store").
const (
	// PGSchema is the PostgreSQL schema of the business store's tables,
	// beside the checkpoint store's schema checkpoints in one database.
	PGSchema = "business"

	// pgMigrationLock is the key of the advisory lock every migration of
	// PGSchema holds: "ASBD", the file's application id, then 1.
	pgMigrationLock int64 = ApplicationID<<32 | 1

	// pgWriteLock is the key of the advisory lock every write transaction
	// of the store takes first (sqlitedb.NewPostgresHandle): "ASBD", then
	// 2. Writers of one database run one at a time, as on SQLite, so a
	// method's reads cannot change before its writes commit.
	pgWriteLock int64 = ApplicationID<<32 | 2
)

// pgBusyTimeout is the sessions' lock_timeout: DefaultBusyTimeout, as for
// SQLite. A var: a test shortens it.
var pgBusyTimeout = DefaultBusyTimeout

//go:embed pgmigrations/*.sql
var pgMigrationFiles embed.FS

// pgMigrations holds the PostgreSQL steps, versions 1..len(pgMigrations).
// A var: tests swap it to make a schema of an older or newer version.
var pgMigrations = mustLoadPGMigrations()

func mustLoadPGMigrations() []migration {
	ms, err := sqlitedb.LoadMigrations(pgMigrationFiles, "pgmigrations")
	if err != nil {
		panic("business: " + err.Error())
	}
	return ms
}

// PGSchemaVersion is the newest version of the schema PGSchema this build
// knows: the number of its PostgreSQL migrations. A schema at a higher
// version is refused (ErrNewerSchema).
func PGSchemaVersion() int { return len(pgMigrations) }

// OpenPostgres opens the business store in the schema PGSchema of the
// PostgreSQL database at url (a postgres:// URL or a keyword/value string),
// creating and migrating the schema as needed and loading opts.Seed in the
// transaction that creates it. It returns the same *Store as Open, with
// every method unchanged, and its Handle serves runs.New as on SQLite.
//
// Before anything is written it refuses, leaving the database unchanged:
// a schema a newer build migrated (ErrNewerSchema), a schema business that
// another program made (ErrForeignFile), and a schema that carries another
// data dir identity than opts.DataDirID (ErrPairMismatch, a
// *sqlitedb.PairError). opts.Create and Synchronous do not apply: the
// server's database exists, and every commit is durable when it returns
// (synchronous_commit = on), so Sync does nothing. Writers of one database
// run one at a time (docs/postgres.md "Write transactions"); one that
// waits for a lock longer than DefaultBusyTimeout (the sessions'
// lock_timeout) fails with an error IsBusy reports, as on SQLite. Errors are wrapped "open business on postgres: …" and
// never repeat the password.
//
// The file helpers OpenReadOnly, CheckFile, TakeSnapshot and
// CountTasksReadOnly are for SQLite files only.
func OpenPostgres(ctx context.Context, url string, opts Options) (*Store, error) {
	s, err := openPostgres(ctx, url, opts)
	if err != nil {
		return nil, fmt.Errorf("open business on postgres: %w", err)
	}
	return s, nil
}

func openPostgres(ctx context.Context, url string, opts Options) (*Store, error) {
	now, seed, err := opts.clockAndSeed()
	if err != nil {
		return nil, err
	}
	db, err := sqlitedb.OpenPostgres(ctx, url, sqlitedb.PGSpec{
		Schema:        PGSchema,
		Migrations:    pgMigrations,
		MigrationLock: pgMigrationLock,
		DataDirID:     opts.DataDirID,
		BusyTimeout:   pgBusyTimeout,
		OnCreate: func(ctx context.Context, q sqlitedb.Querier) error {
			return loadSeed(ctx, q, postgresQueries, seed, now(), true)
		},
	})
	if err != nil {
		return nil, err
	}
	return newStore(sqlitedb.NewPostgresHandle(db, "postgres schema "+PGSchema, pgWriteLock), now), nil
}
