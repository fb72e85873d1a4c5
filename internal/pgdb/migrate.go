package pgdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

// Spec says what Open opens: a store's schema in a PostgreSQL database,
// with the same runner rules as sqlite.Spec's files.
type Spec struct {
	// Schema is the PostgreSQL schema that holds the store's tables and
	// its schema_version table; it is the sessions' search_path, so the
	// store's SQL names tables without it.
	Schema string
	// Migrations are the PostgreSQL migrations, versions 1..n. Each runs
	// in a transaction of its own, with its row in Schema.schema_version,
	// and names its tables with Schema.
	Migrations []sqlstore.Migration
	// MigrationLock is the key of the transaction-level advisory lock
	// every migration holds, so two processes migrate one after the other.
	MigrationLock int64
	// OnCreate runs in the transaction that applies migration 1 (the one
	// that creates the schema), with the store's PostgreSQL statements
	// (e.g. to load seed rows).
	OnCreate func(ctx context.Context, tx *sql.Tx) error
	// DataDirID is the identity the other store of the data dir carries
	// ("" checks nothing). Migration 1 must create Schema.data_dir
	// (sqlite.DataDirTable); the runner fills its row with DataDirID, or a new
	// UUID. A schema that carries another identity is refused with a
	// *sqlite.PairError before anything is written.
	DataDirID string
	// MaxConns caps the pool's open connections when positive.
	MaxConns int
	// BusyTimeout is the sessions' lock_timeout: how long a statement
	// waits for a lock (the write lock of NewHandle, a row another
	// transaction holds) before it fails with lock_not_available, which
	// IsBusy reports, as SQLite's busy timeout does. 0 takes
	// LockTimeout (ParseConfig).
	BusyTimeout time.Duration
	// OpenBusyWait is how long Open waits for a server with no free
	// connection slot (or starting up) for the pool's first connection,
	// before it fails with ErrServerBusy; 0 takes the connect timeout. A
	// caller that holds other connections of the server passes
	// HeldBusyWait. The pool's later connections wait the connect
	// timeout.
	OpenBusyWait time.Duration
}

// IdleConns is how many idle connections a pool of Open keeps for the
// next statement: a command uses one or two, a server as many as it has
// requests in flight at once.
const IdleConns = 32

// IdleConnTime is how long a pool of Open keeps a connection that no
// statement uses before it closes it.
const IdleConnTime = time.Minute

// refusal is a refusal of Open that also matches (errors.Is) its SQLite
// twin, sqlite.ErrNewerSchema or sqlite.ErrForeignFile, so one check maps
// both stores' refusals.
type refusal struct {
	msg  string
	twin error
}

// ErrSchemaRefused marks every refusal of a schema by Open (a foreign or a
// newer one), beside the sqlite sentinel it matches too, so that the
// application layer hints what to do on a server, not in a data dir.
var ErrSchemaRefused = errors.New("PostgreSQL schema refused")

// Error implements the error interface.
func (r *refusal) Error() string { return r.msg }

// Is makes errors.Is(err, twin) and errors.Is(err, ErrSchemaRefused) true.
func (r *refusal) Is(target error) bool { return target == r.twin || target == ErrSchemaRefused }

// Open connects to the PostgreSQL database at url (a postgres://
// URL or a keyword/value string, as libpq takes them) through pgx's
// database/sql driver, migrates spec.Schema to the newest version and
// returns the pool; wrap it with NewHandle. Every session runs
// with search_path = spec.Schema, synchronous_commit = on (every
// commit durable when it returns) and idle_in_transaction_session_timeout
// = IdleInTxTimeout (a transaction whose client went silent is rolled
// back).
//
// Before anything is written it refuses, leaving the database unchanged:
// a schema a newer build migrated (matches sqlite.ErrNewerSchema), a
// schema of that name without schema_version, another program's (matches
// sqlite.ErrForeignFile), and a schema whose data dir identity is not
// spec.DataDirID (*sqlite.PairError). Migrations run one transaction each under
// the advisory lock spec.MigrationLock, reading the version again under
// it, so processes opening one database at once apply each migration
// once. Errors never repeat the password.
func Open(ctx context.Context, url string, spec Spec) (*sql.DB, error) {
	cfg, err := ParseConfig(url)
	if err != nil {
		return nil, err
	}
	params := cfg.RuntimeParams
	params["search_path"] = spec.Schema
	// Every commit durable when it returns, whatever the server's
	// default: the Handle's Sync and Durable count on it.
	params["synchronous_commit"] = "on"
	// A transaction whose client went silent is ended by the server, so a
	// frozen writer cannot hold the write lock for ever.
	params["idle_in_transaction_session_timeout"] = strconv.FormatInt(IdleInTxTimeout.Milliseconds(), 10)
	if spec.BusyTimeout > 0 {
		params["lock_timeout"] = strconv.FormatInt(spec.BusyTimeout.Milliseconds(), 10)
	}
	if params["application_name"] == "" {
		params["application_name"] = DefaultApplicationName
	}
	openWait := spec.OpenBusyWait
	if openWait <= 0 {
		openWait = cfg.ConnectTimeout
	}
	connector := newBusyConnector(*cfg, openWait)
	db := sql.OpenDB(connector)
	if spec.MaxConns > 0 {
		db.SetMaxOpenConns(spec.MaxConns)
	}
	// database/sql keeps 2 idle connections by default: a server's
	// concurrent requests would then open and close a session per request,
	// each a backend process the server forks and warms up. An idle one
	// beyond the burst is closed after IdleConnTime, so that it does not
	// hold a connection slot for ever.
	db.SetMaxIdleConns(IdleConns)
	db.SetConnMaxIdleTime(IdleConnTime)
	if err := migrate(ctx, db, spec); err != nil {
		db.Close()
		return nil, err
	}
	// The pool's later connections wait the whole connect timeout while it
	// holds none; while it holds some, a full server caps it instead
	// (busyConnector).
	connector.wait.Store(int64(cfg.ConnectTimeout))
	connector.pool.Store(db)
	return db, nil
}

// schemaVersion returns the version of spec.Schema: 0 when there is no
// such schema. It refuses a foreign or newer schema and only reads.
func schemaVersion(ctx context.Context, q sqlstore.Querier, spec Spec) (int, error) {
	var schema, table bool
	if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL`,
		spec.Schema, pgx.Identifier{spec.Schema, "schema_version"}.Sanitize()).Scan(&schema, &table); err != nil {
		return 0, err
	}
	if !schema {
		return 0, nil
	}
	foreign := &refusal{
		msg: "schema " + spec.Schema + " exists but was not made by assistant (it has no " + spec.Schema +
			".schema_version; the database is left unchanged)",
		twin: sqlite.ErrForeignFile,
	}
	if !table {
		return 0, foreign
	}
	var v, rows int
	if err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0), count(*) FROM `+pgx.Identifier{spec.Schema, "schema_version"}.Sanitize()).Scan(&v, &rows); err != nil {
		return 0, err
	}
	switch {
	case v == 0 && rows == 0:
		foreign.msg = "schema " + spec.Schema + " exists but was not made by assistant (its " + spec.Schema +
			".schema_version is empty; the database is left unchanged)"
		return 0, foreign
	case v == 0:
		return 0, foreign
	case v > len(spec.Migrations):
		return v, &refusal{
			msg: fmt.Sprintf("schema %s is at version %d, this build knows %d: written by a newer version of assistant "+
				"(the database is left unchanged)", spec.Schema, v, len(spec.Migrations)),
			twin: sqlite.ErrNewerSchema,
		}
	}
	return v, nil
}

// dataDirCheck refuses a schema at version v whose identity is not
// spec.DataDirID.
func dataDirCheck(ctx context.Context, q sqlstore.Querier, spec Spec, v int) error {
	if v == 0 || spec.DataDirID == "" {
		return nil
	}
	var have string
	err := q.QueryRowContext(ctx, `SELECT id FROM `+pgx.Identifier{spec.Schema, sqlite.DataDirTable}.Sanitize()+` WHERE one = 1`).Scan(&have)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data dir identity: %w", err)
	}
	return sqlite.CheckPair(have, spec.DataDirID)
}

// migrate brings spec.Schema to the newest version, each migration in a
// transaction of its own under spec.MigrationLock. A schema already at the
// newest version costs two reads and takes no lock.
func migrate(ctx context.Context, db *sql.DB, spec Spec) error {
	v, err := schemaVersion(ctx, db, spec)
	if err != nil {
		return err
	}
	if err := dataDirCheck(ctx, db, spec, v); err != nil {
		return err
	}
	for v < len(spec.Migrations) {
		if v, err = migrateStep(ctx, db, spec); err != nil {
			return err
		}
	}
	return nil
}

// migrateStep applies the migration after the version read under the
// lock and returns the version it left.
func migrateStep(ctx context.Context, db *sql.DB, spec Spec) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	// Another process may hold it and be migrating: wait, then read the
	// version it left.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, spec.MigrationLock); err != nil {
		return 0, err
	}
	v, err := schemaVersion(ctx, tx, spec)
	if err != nil {
		return 0, err
	}
	if err := dataDirCheck(ctx, tx, spec, v); err != nil {
		return 0, err
	}
	if v == len(spec.Migrations) {
		return v, tx.Commit()
	}
	m := spec.Migrations[v]
	// No arguments: the driver sends it as one simple query, so a file may
	// hold many statements.
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return 0, fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+pgx.Identifier{spec.Schema, "schema_version"}.Sanitize()+` (version, name) VALUES ($1, $2)`,
		m.Version, m.Name); err != nil {
		return 0, fmt.Errorf("migration %d (%s): record the version: %w", m.Version, m.Name, err)
	}
	if m.Version == 1 {
		id := spec.DataDirID
		if id == "" {
			id = uuid.NewString()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+pgx.Identifier{spec.Schema, sqlite.DataDirTable}.Sanitize()+` (one, id) VALUES (1, $1)`, id); err != nil {
			return 0, fmt.Errorf("migration 1: data dir identity: %w", err)
		}
		if spec.OnCreate != nil {
			if err := spec.OnCreate(ctx, tx); err != nil {
				return 0, err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
	}
	return int(m.Version), nil
}
