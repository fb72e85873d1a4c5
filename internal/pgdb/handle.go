package pgdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"assistant/internal/sqlstore"
)

// NewHandle wraps db, a pool Open opened, for the stores that keep tables
// in its schema; name stands for the path in errors (the database and
// schema, never a password). Every write first takes the
// transaction-level advisory lock writeLock, so writers run one at a
// time, as on SQLite: a write transaction (Begin, InTx, Durable) takes it
// first, and a write statement through Q outside a transaction runs in a
// short transaction of its own that takes it first (an INSERT … RETURNING
// there is refused with ErrWriteOutsideTx). Sync does nothing: Open sets
// synchronous_commit = on, so every commit is durable when it returns.
// Close closes db.
func NewHandle(db *sql.DB, name string, writeLock int64) *sqlstore.Handle {
	return sqlstore.NewHandle(db, name, engine{writeLock: writeLock})
}

// engine is the sqlstore.Engine of a PostgreSQL schema whose writers take
// the advisory lock writeLock.
type engine struct{ writeLock int64 }

var _ sqlstore.Engine = engine{}

func (engine) Database() sqlstore.Database { return sqlstore.PostgreSQL }

// Pool runs a write statement under the write lock (pool).
func (e engine) Pool(db *sql.DB, stmts *sqlstore.Stmts) sqlstore.Querier {
	return pool{stmts: stmts, db: db, e: e}
}

// LockWrites takes the write lock, held until the transaction ends. Under
// READ COMMITTED each later statement of the transaction sees every
// commit before it, and no other writer commits until it ends.
func (e engine) LockWrites(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, e.writeLock)
	return err
}

// Durable is a write transaction under the write lock: its commit is
// durable when it returns (synchronous_commit = on).
func (e engine) Durable(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := e.LockWrites(ctx, tx); err != nil {
		return err
	}
	return sqlstore.CommitDurable(tx, fn)
}

// Sync does nothing: with synchronous_commit = on every commit was flushed
// to the server's write-ahead log before it returned.
func (engine) Sync(context.Context, *sql.DB) error { return nil }

// CachesStatements is true: pgx's database/sql driver runs a query in its
// default exec mode, cache_statement, which prepares each SQL text once per
// connection and keeps it (an LRU of 512 texts); a database/sql prepare
// would cost a parse and a deallocate round trip more per text.
func (engine) CachesStatements() bool { return true }

// DataDirID reads the schema's data_dir row ("" without one).
func (engine) DataDirID(ctx context.Context, q sqlstore.Querier) (string, error) {
	var id string
	err := q.QueryRowContext(ctx, `SELECT id FROM data_dir WHERE one = 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

func (engine) IsUniqueViolation(err error) bool { return IsUniqueViolation(err) }

// IsBusy reports PostgreSQL's lock_not_available (SQLSTATE 55P03):
// lock_timeout passed while a statement waited for a lock another
// session held (Spec.BusyTimeout, LockTimeout); and ErrServerBusy, a
// server that had no free connection slot for the connect timeout.
func IsBusy(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03" || errors.Is(err, ErrServerBusy)
}

// LockBusyCause returns PostgreSQL's lock_not_available error (SQLSTATE
// 55P03: a lock waited for past lock_timeout) in err's chain, or nil: the
// server's words, which a message in the words of the domain leaves out.
func LockBusyCause(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" {
		return pe
	}
	return nil
}

// IsUniqueViolation reports PostgreSQL's unique_violation (SQLSTATE
// 23505), of a PRIMARY KEY or UNIQUE constraint or index.
func IsUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// ErrWriteOutsideTx is returned, on PostgreSQL, for a write statement run
// through the pool's QueryContext or QueryRowContext (an INSERT … RETURNING
// outside a transaction): its rows would come back before the short
// transaction that takes the write lock could commit, so it is refused;
// run it in Begin or Durable.
var ErrWriteOutsideTx = errors.New("write statement that returns rows outside a write transaction on PostgreSQL: run it in Begin or Durable")

// pool is the Querier of a PostgreSQL Handle outside a transaction
// (Handle.Q outside InTx). A read runs on the pool's statement cache as
// it is. A write runs in a short transaction of its own that first takes
// the write lock, as every write transaction does (BEGIN; SELECT
// pg_advisory_xact_lock; the statement; COMMIT): on SQLite a statement
// outside a transaction waits for the file's write lock too, so a write
// never commits in the middle of another process's read-then-write
// transaction, on either database. The cost is three round trips more
// per such write (four instead of one).
type pool struct {
	stmts *sqlstore.Stmts
	db    *sql.DB
	e     engine
}

// ExecContext runs query with args; a write under the write lock, in a
// transaction of its own.
func (p pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if !IsWrite(query) {
		return p.stmts.ExecContext(ctx, query, args...)
	}
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := p.e.LockWrites(ctx, tx); err != nil {
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

// QueryContext runs query (a read) with args. A write is refused with
// ErrWriteOutsideTx.
func (p pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if IsWrite(query) {
		return nil, ErrWriteOutsideTx
	}
	return p.stmts.QueryContext(ctx, query, args...)
}

// QueryRowContext runs query (a read) with args. A write is refused: the
// row's Scan returns ErrWriteOutsideTx.
func (p pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
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

// isIdentPart reports whether c may be part of an SQL keyword or
// identifier.
func isIdentPart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80 || (c >= '0' && c <= '9') || c == '$'
}
