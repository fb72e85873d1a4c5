package business

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"assistant/internal/pgdb"
	"assistant/internal/sqlstore"
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
	// of the store takes first (pgdb.NewHandle): "ASBD", then 2. Writers
	// of one database run one at a time, as on SQLite, so a method's reads
	// cannot change before its writes commit.
	pgWriteLock int64 = ApplicationID<<32 | 2

	// PGIdleInTxTimeout is the idle_in_transaction_session_timeout of the
	// store's sessions: the server ends a session whose transaction waited
	// this long for its client's next statement and rolls it back, so a
	// frozen writer releases the write lock. It is the lease TTL of
	// flow/returns (docs/postgres.md "A frozen holder").
	PGIdleInTxTimeout = pgdb.IdleInTxTimeout
)

// ErrPGURL marks a PostgreSQL URL ParsePGConfig (and so OpenPostgres)
// refuses: one that does not parse, or whose sslmode the driver does not
// know. The message that wraps it never repeats the URL.
var ErrPGURL = pgdb.ErrURL

// ErrPGServerBusy marks a PostgreSQL server that refused a connection for
// the whole connect timeout because it had no free connection slot or was
// starting up (ConnectPG, OpenPostgres); IsBusy reports it too.
var ErrPGServerBusy = pgdb.ErrServerBusy

// IsPGLockBusy reports a PostgreSQL statement that waited for a lock
// another session held for longer than the lock timeout (SQLSTATE 55P03).
func IsPGLockBusy(err error) bool { return pgdb.IsBusy(err) && !errors.Is(err, ErrPGServerBusy) }

// ErrPGSchemaRefused marks every refusal of a PostgreSQL schema, of either
// store, that another program made or a newer build migrated; it matches
// beside ErrForeignFile or ErrNewerSchema (pgdb.ErrSchemaRefused).
var ErrPGSchemaRefused = pgdb.ErrSchemaRefused

// PGHeldBusyWait is the PGOpenBusyWait of a caller that holds other
// connections of the server (pgdb.HeldBusyWait).
const PGHeldBusyWait = pgdb.HeldBusyWait

// PGConnectTimeout is how long opening a connection may take, waits for a
// busy server included, unless the URL sets connect_timeout.
const PGConnectTimeout = pgdb.ConnectTimeout

// ParsePGConfig parses url (a postgres:// URL or a keyword/value string)
// as every connection of the program does: with the connect timeout and
// the sessions' lock_timeout the stores' connections have (the URL's
// connect_timeout wins when above 0). It is for a caller that connects to
// the server of the stores itself, to look at it. Errors: ErrPGURL,
// wrapped with the reason, never the URL.
func ParsePGConfig(url string) (*pgx.ConnConfig, error) { return pgdb.ParseConfig(url) }

// ConnectPG opens one connection with cfg (made by ParsePGConfig) as every
// connection of the program opens: a server with no free connection slot,
// or starting up, is waited for for wait (0 or less: cfg's connect
// timeout), then the error is busy (IsBusy, ErrPGServerBusy). Other
// errors: pgx's.
func ConnectPG(ctx context.Context, cfg *pgx.ConnConfig, wait time.Duration) (*pgx.Conn, error) {
	return pgdb.Connect(ctx, cfg, wait)
}

// pgBusyTimeout is the sessions' lock_timeout: DefaultBusyTimeout, as for
// SQLite. A var: a test shortens it.
var pgBusyTimeout = DefaultBusyTimeout

//go:embed pgmigrations/*.sql
var pgMigrationFiles embed.FS

// pgMigrations returns the PostgreSQL steps, versions 1..n, read on first
// use: a command on a data dir does not pay for them at start-up.
var pgMigrations = sync.OnceValue(mustLoadPGMigrations)

func mustLoadPGMigrations() []migration {
	ms, err := sqlstore.LoadMigrations(pgMigrationFiles, "pgmigrations")
	if err != nil {
		panic("business: " + err.Error())
	}
	return ms
}

// PGSchemaVersion is the newest version of the schema PGSchema this build
// knows: the number of its PostgreSQL migrations. A schema at a higher
// version is refused (ErrNewerSchema).
func PGSchemaVersion() int { return len(pgMigrations()) }

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
// *sqlite.PairError). opts.Create and Synchronous do not apply: the
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
	db, err := pgdb.Open(ctx, url, pgdb.Spec{
		Schema:        PGSchema,
		Migrations:    pgMigrations(),
		MigrationLock: pgMigrationLock,
		DataDirID:     opts.DataDirID,
		BusyTimeout:   pgBusyTimeout,
		OpenBusyWait:  opts.PGOpenBusyWait,
		OnCreate: func(ctx context.Context, tx *sql.Tx) error {
			return loadSeed(ctx, tx, postgresQueries, seed, now(), true)
		},
	})
	if err != nil {
		return nil, err
	}
	return newStore(pgdb.NewHandle(db, "postgres schema "+PGSchema, pgWriteLock), now), nil
}
