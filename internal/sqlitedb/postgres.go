package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Session settings of the pools OpenPostgres opens.
const (
	// DefaultPGApplicationName is the application_name of the sessions
	// OpenPostgres opens (pg_stat_activity shows it), unless the URL sets
	// one.
	DefaultPGApplicationName = "assistant"
	// PGIdleInTxTimeout is every session's
	// idle_in_transaction_session_timeout: the server ends a session whose
	// transaction waited this long for the client's next statement, rolls
	// the transaction back and so releases the write lock it held. Without
	// it a writer frozen inside a transaction (SIGSTOP, a frozen VM, a lost
	// network whose TCP keepalive takes hours) blocks every writer of the
	// database on every machine for as long as its session lives. It is the
	// lease TTL of flow/returns (DefaultLeaseTTL, 5 s; the cmd tests check
	// the two agree): a client silent that long has lost any lease it held
	// anyway. A normal gap between two statements of one transaction is
	// under a few milliseconds, and a batch chunk's whole transaction ends
	// after 0.5 s of work (MaxChunkTime); the widest gap is a takeover's
	// Fence on the checkpoint store, which waits at most that store's own
	// idle timeout (half this). docs/postgres.md "A frozen holder".
	PGIdleInTxTimeout = 5 * time.Second
)

// Limits every connection the program opens on a PostgreSQL server has
// (ParsePGConfig), so no command waits for a server for ever.
const (
	// PGConnectTimeout is the default connect timeout: how long opening
	// a connection (TCP, TLS, the startup handshake and authentication)
	// may take before it fails. A URL's own connect_timeout (seconds,
	// above 0) wins; libpq's default is to wait for ever.
	PGConnectTimeout = 10 * time.Second
	// PGLockTimeout is every session's default lock_timeout: a statement
	// that waits longer for a lock (a table another session locked, the
	// write or migration advisory lock, a row) fails with
	// lock_not_available, which IsBusy reports. It is the busy timeout
	// of the SQLite files (DefaultBusyTimeout), whatever the URL says.
	PGLockTimeout = DefaultBusyTimeout
)

// ErrPGURL marks a PostgreSQL URL ParsePGConfig refuses: one that does
// not parse, or whose sslmode the driver does not know.
var ErrPGURL = errors.New("bad PostgreSQL URL")

// pgSSLModes are the sslmode values libpq and pgx know.
var pgSSLModes = map[string]bool{"disable": true, "allow": true, "prefer": true, "require": true, "verify-ca": true, "verify-full": true}

// ParsePGConfig parses url (a postgres:// URL or a keyword/value string)
// as pgx.ParseConfig does and sets the limits of PGConnectTimeout (unless
// the URL sets a connect_timeout above 0) and PGLockTimeout. Errors match ErrPGURL and
// never repeat the URL (so never its password): a URL that does not
// parse, and an sslmode (in the URL or PGSSLMODE) outside disable,
// allow, prefer, require, verify-ca and verify-full, which pgx checks
// only for a TCP address and lets pass on a Unix socket.
func ParsePGConfig(url string) (*pgx.ConnConfig, error) {
	if err := checkSSLMode(url); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrPGURL, pgParseCause(err))
	}
	SetPGLimits(cfg)
	return cfg, nil
}

// SetPGLimits sets cfg's connect timeout to PGConnectTimeout when it has
// none and its sessions' lock_timeout to PGLockTimeout. For a config parsed some other way (pgxpool's);
// ParsePGConfig calls it.
func SetPGLimits(cfg *pgx.ConnConfig) {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = PGConnectTimeout
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(PGLockTimeout.Milliseconds(), 10)
}

// CheckPGURL refuses what ParsePGConfig refuses, without keeping the
// config: for a caller that parses url another way (pgxpool.ParseConfig).
func CheckPGURL(url string) error {
	_, err := ParsePGConfig(url)
	return err
}

// checkSSLMode refuses an sslmode the driver does not know, from the URL
// (?sslmode=, or sslmode= of a keyword/value string) or else PGSSLMODE.
func checkSSLMode(raw string) error {
	var modes []string
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		if u, err := neturl.Parse(raw); err == nil {
			modes = u.Query()["sslmode"]
		}
	} else {
		for _, f := range strings.Fields(raw) {
			if k, v, ok := strings.Cut(f, "="); ok && strings.TrimSpace(k) == "sslmode" {
				modes = append(modes, strings.Trim(v, "'"))
			}
		}
	}
	if len(modes) == 0 {
		if env, ok := os.LookupEnv("PGSSLMODE"); ok && env != "" {
			modes = []string{env}
		}
	}
	for _, m := range modes {
		if !pgSSLModes[m] {
			return fmt.Errorf("%w: sslmode %q is not one of disable, allow, prefer, require, verify-ca, verify-full", ErrPGURL, m)
		}
	}
	return nil
}

// pgParseCause is why pgx could not parse a URL, without the URL, which
// pgx's message repeats (with the password only masked).
func pgParseCause(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return "it does not parse"
	}
	text := pe.Error()
	inner := pe.Unwrap()
	if inner != nil {
		text = strings.TrimSuffix(text, " ("+inner.Error()+")")
	}
	if i := strings.LastIndex(text, "`: "); i >= 0 {
		text = text[i+3:]
	} else {
		text = "it does not parse"
	}
	var ue *neturl.Error
	if errors.As(inner, &ue) {
		inner = ue.Err // url.Error repeats the URL
	}
	if inner != nil && !strings.Contains(inner.Error(), "://") {
		text += " (" + inner.Error() + ")"
	}
	return text
}

// PGSpec says what OpenPostgres opens: a store's schema in a PostgreSQL
// database, with the same runner rules as Spec's SQLite files.
type PGSpec struct {
	// Schema is the PostgreSQL schema that holds the store's tables and
	// its schema_version table; it is the sessions' search_path, so the
	// store's SQL names tables without it.
	Schema string
	// Migrations are the PostgreSQL migrations, versions 1..n. Each runs
	// in a transaction of its own, with its row in Schema.schema_version,
	// and names its tables with Schema.
	Migrations []Migration
	// MigrationLock is the key of the transaction-level advisory lock
	// every migration holds, so two processes migrate one after the other.
	MigrationLock int64
	// OnCreate runs in the transaction that applies migration 1 (the one
	// that creates the schema), on store SQL (the Handle's dialect).
	OnCreate func(ctx context.Context, q Querier) error
	// DataDirID is the identity the other store of the data dir carries
	// ("" checks nothing). Migration 1 must create Schema.data_dir
	// (DataDirTable); the runner fills its row with DataDirID, or a new
	// UUID. A schema that carries another identity is refused with a
	// *PairError before anything is written.
	DataDirID string
	// MaxConns caps the pool's open connections when positive.
	MaxConns int
	// BusyTimeout is the sessions' lock_timeout: how long a statement
	// waits for a lock (the write lock of NewPostgresHandle, a row another
	// transaction holds) before it fails with lock_not_available, which
	// IsBusy reports, as SQLite's busy timeout does. 0 takes
	// PGLockTimeout (ParsePGConfig).
	BusyTimeout time.Duration
}

// pgRefusal is a refusal of OpenPostgres that also matches (errors.Is) its
// SQLite twin, ErrNewerSchema or ErrForeignFile, so one check maps both
// stores' refusals.
type pgRefusal struct {
	msg  string
	twin error
}

// Error implements the error interface.
func (r *pgRefusal) Error() string { return r.msg }

// Is makes errors.Is(err, twin) true.
func (r *pgRefusal) Is(target error) bool { return target == r.twin }

// OpenPostgres connects to the PostgreSQL database at url (a postgres://
// URL or a keyword/value string, as libpq takes them) through pgx's
// database/sql driver, migrates spec.Schema to the newest version and
// returns the pool; wrap it with NewPostgresHandle. Every session runs
// with search_path = spec.Schema, synchronous_commit = on (every
// commit durable when it returns) and idle_in_transaction_session_timeout
// = PGIdleInTxTimeout (a transaction whose client went silent is rolled
// back).
//
// Before anything is written it refuses, leaving the database unchanged:
// a schema a newer build migrated (matches ErrNewerSchema), a schema of
// that name without schema_version, another program's (matches
// ErrForeignFile), and a schema whose data dir identity is not
// spec.DataDirID (*PairError). Migrations run one transaction each under
// the advisory lock spec.MigrationLock, reading the version again under
// it, so processes opening one database at once apply each migration
// once. Errors never repeat the password.
func OpenPostgres(ctx context.Context, url string, spec PGSpec) (*sql.DB, error) {
	cfg, err := ParsePGConfig(url)
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
	params["idle_in_transaction_session_timeout"] = strconv.FormatInt(PGIdleInTxTimeout.Milliseconds(), 10)
	if spec.BusyTimeout > 0 {
		params["lock_timeout"] = strconv.FormatInt(spec.BusyTimeout.Milliseconds(), 10)
	}
	if params["application_name"] == "" {
		params["application_name"] = DefaultPGApplicationName
	}
	db := stdlib.OpenDB(*cfg)
	if spec.MaxConns > 0 {
		db.SetMaxOpenConns(spec.MaxConns)
	}
	if err := migratePG(ctx, db, spec); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// pgSchemaVersion returns the version of spec.Schema: 0 when there is no
// such schema. It refuses a foreign or newer schema and only reads.
func pgSchemaVersion(ctx context.Context, q Querier, spec PGSpec) (int, error) {
	var schema, table bool
	if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL`,
		spec.Schema, pgx.Identifier{spec.Schema, "schema_version"}.Sanitize()).Scan(&schema, &table); err != nil {
		return 0, err
	}
	if !schema {
		return 0, nil
	}
	foreign := &pgRefusal{
		msg: "schema " + spec.Schema + " exists but was not made by assistant (it has no " + spec.Schema +
			".schema_version); use another database (the database is left unchanged)",
		twin: ErrForeignFile,
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
			".schema_version is empty); use another database (the database is left unchanged)"
		return 0, foreign
	case v == 0:
		return 0, foreign
	case v > len(spec.Migrations):
		return v, &pgRefusal{
			msg: fmt.Sprintf("schema %s is at version %d, this build knows %d: written by a newer version of assistant; "+
				"upgrade assistant (the database is left unchanged)", spec.Schema, v, len(spec.Migrations)),
			twin: ErrNewerSchema,
		}
	}
	return v, nil
}

// pgDataDirCheck refuses a schema at version v whose identity is not
// spec.DataDirID.
func pgDataDirCheck(ctx context.Context, q Querier, spec PGSpec, v int) error {
	if v == 0 || spec.DataDirID == "" {
		return nil
	}
	var have string
	err := q.QueryRowContext(ctx, `SELECT id FROM `+pgx.Identifier{spec.Schema, DataDirTable}.Sanitize()+` WHERE one = 1`).Scan(&have)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data dir identity: %w", err)
	}
	return checkPair(have, spec.DataDirID)
}

// migratePG brings spec.Schema to the newest version, each migration in a
// transaction of its own under spec.MigrationLock. A schema already at the
// newest version costs two reads and takes no lock.
func migratePG(ctx context.Context, db *sql.DB, spec PGSpec) error {
	v, err := pgSchemaVersion(ctx, db, spec)
	if err != nil {
		return err
	}
	if err := pgDataDirCheck(ctx, db, spec, v); err != nil {
		return err
	}
	for v < len(spec.Migrations) {
		if v, err = migratePGStep(ctx, db, spec); err != nil {
			return err
		}
	}
	return nil
}

// migratePGStep applies the migration after the version read under the
// lock and returns the version it left.
func migratePGStep(ctx context.Context, db *sql.DB, spec PGSpec) (int, error) {
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
	v, err := pgSchemaVersion(ctx, tx, spec)
	if err != nil {
		return 0, err
	}
	if err := pgDataDirCheck(ctx, tx, spec, v); err != nil {
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
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+pgx.Identifier{spec.Schema, DataDirTable}.Sanitize()+` (one, id) VALUES (1, $1)`, id); err != nil {
			return 0, fmt.Errorf("migration 1: data dir identity: %w", err)
		}
		if spec.OnCreate != nil {
			q := dialectQuerier{q: tx, d: newPGDialect(0)}
			if err := spec.OnCreate(ctx, q); err != nil {
				return 0, err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
	}
	return int(m.Version), nil
}

// DataDirID returns the data dir identity the Handle's database carries:
// DataDirTable's row, "" when there is none (a SQLite file of a schema
// older than the pairing). Errors: reading it.
func (h *Handle) DataDirID(ctx context.Context) (string, error) {
	if !h.Postgres() {
		return DataDirID(ctx, h.q)
	}
	var id string
	err := h.q.QueryRowContext(ctx, `SELECT id FROM `+DataDirTable+` WHERE one = 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// ErrWriteOutsideTx is returned, on PostgreSQL, for a write statement run
// through the pool's QueryContext or QueryRowContext (an INSERT … RETURNING
// outside a transaction): its rows would come back before the short
// transaction that takes the write lock could commit, so it is refused;
// run it in Begin or Durable.
var ErrWriteOutsideTx = errors.New("write statement that returns rows outside a write transaction on PostgreSQL: run it in Begin or Durable")

// pgPool is the Querier of a PostgreSQL Handle outside a transaction
// (Handle.Q outside InTx). A read runs on the pool's statement cache as
// it is. A write runs in a short transaction of its own that first takes
// the write lock, as every write transaction does (BEGIN; SELECT
// pg_advisory_xact_lock; the statement; COMMIT): on SQLite a statement
// outside a transaction waits for the file's write lock too, so a write
// never commits in the middle of another process's read-then-write
// transaction, on either database. The cost is three round trips more
// per such write (four instead of one).
type pgPool struct {
	stmts *Stmts
	db    *sql.DB
	d     *pgDialect
}

// ExecContext runs query (store SQL) with args; a write under the write
// lock, in a transaction of its own.
func (p pgPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if !IsWrite(query) {
		return p.stmts.ExecContext(ctx, query, args...)
	}
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := p.d.lockWrites(ctx, tx); err != nil {
		return nil, err
	}
	res, err := p.stmts.Tx(tx).ExecContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	// RowsAffected is read from the command tag already received: the
	// result stays good after the commit.
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return res, nil
}

// QueryContext runs query (store SQL, a read) with args. A write is
// refused with ErrWriteOutsideTx.
func (p pgPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if IsWrite(query) {
		return nil, ErrWriteOutsideTx
	}
	return p.stmts.QueryContext(ctx, query, args...)
}

// QueryRowContext runs query (store SQL, a read) with args. A write is
// refused: the row's Scan returns ErrWriteOutsideTx.
func (p pgPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if IsWrite(query) {
		return refusedDB.QueryRowContext(ctx, query)
	}
	return p.stmts.QueryRowContext(ctx, query, args...)
}

// refusedDB is a pool that never connects: every query on it fails with
// ErrWriteOutsideTx. It is how QueryRowContext returns a *sql.Row that
// carries that error.
var refusedDB = sql.OpenDB(refusingConnector{})

type refusingConnector struct{}

func (refusingConnector) Connect(context.Context) (driver.Conn, error) { return nil, ErrWriteOutsideTx }
func (refusingConnector) Driver() driver.Driver                        { return refusingDriver{} }

type refusingDriver struct{}

func (refusingDriver) Open(string) (driver.Conn, error) { return nil, ErrWriteOutsideTx }

// IsWrite reports whether the SQL text q may write: every statement but
// one whose first keyword (after blanks, comments and opening
// parentheses) is SELECT, VALUES, TABLE or SHOW. WITH (a data-modifying
// CTE) and EXPLAIN (ANALYZE runs the statement) count as writes: the
// answer errs towards the lock.
func IsWrite(q string) bool {
	i := 0
	for i < len(q) {
		switch c := q[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(':
			i++
		case strings.HasPrefix(q[i:], "--"):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				return true
			}
			i += j
		case strings.HasPrefix(q[i:], "/*"):
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				return true
			}
			i += 2 + j + 2
		default:
			j := i
			for j < len(q) && isIdentPart(q[j]) {
				j++
			}
			switch strings.ToUpper(q[i:j]) {
			case "SELECT", "VALUES", "TABLE", "SHOW":
				return false
			}
			return true
		}
	}
	return true
}
