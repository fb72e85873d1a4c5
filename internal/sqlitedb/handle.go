package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Handle is one opened SQLite file as the stores that keep tables in it see
// it: the pool, its statement cache and, inside InTx, one write transaction
// that every method of every store over the Handle joins. business.sqlite
// has two such stores, business (the return desk) and runs (run
// bookkeeping); a batch chunk writes both in one commit through one Handle.
//
// A Handle is safe for concurrent use, except the Handle given to the
// function of InTx, which belongs to that function.
type Handle struct {
	db          *sql.DB
	q           Querier   // stmts, or chunk inside InTx
	stmts       *Stmts    // prepared statements of the pool
	chunk       *CachedTx // the transaction of InTx; nil outside
	path        string
	synchronous string  // NORMAL or FULL, upper case
	d           dialect // the database's: sqliteDialect or *pgDialect
}

// NewHandle wraps db, opened by Open at path with synchronous level
// ("" means DefaultSynchronous). Close closes db.
func NewHandle(db *sql.DB, path, synchronous string) *Handle {
	synchronous = strings.ToUpper(synchronous)
	if synchronous == "" {
		synchronous = DefaultSynchronous
	}
	stmts := NewStmts(db)
	return &Handle{db: db, q: stmts, stmts: stmts, path: path, synchronous: synchronous, d: sqliteDialect{}}
}

// NewPostgresHandle wraps db, a pool of pgx's database/sql driver
// (OpenPostgres) on a PostgreSQL database, for stores that write SQLite's
// SQL: each text is rewritten once (Rewrite), a bool argument is bound as
// 0 or 1, and every write first takes the transaction-level advisory lock
// writeLock, so writers run one at a time, as on SQLite: a write
// transaction (Begin, InTx, Durable) takes it first, and a write statement
// through Q outside a transaction runs in a short transaction of its own
// that takes it first (an INSERT … RETURNING there is refused with
// ErrWriteOutsideTx). name stands for the path in errors (the database and
// schema, never a password). Sync does nothing: OpenPostgres sets
// synchronous_commit = on, so every commit is durable when it returns.
// Close closes db.
func NewPostgresHandle(db *sql.DB, name string, writeLock int64) *Handle {
	d := newPGDialect(writeLock)
	stmts := newStmts(db, d)
	return &Handle{db: db, q: pgPool{stmts: stmts, db: db, d: d}, stmts: stmts, path: name, synchronous: "FULL", d: d}
}

// Postgres reports whether the Handle is on a PostgreSQL server
// (NewPostgresHandle) rather than a SQLite file.
func (h *Handle) Postgres() bool {
	_, ok := h.d.(*pgDialect)
	return ok
}

// Q returns what a store's read or single-statement write runs on: the
// pool's prepared statements, or the transaction of InTx. Outside InTx a
// write statement waits for the write lock on both databases (on
// PostgreSQL in a short transaction of its own, see NewPostgresHandle).
func (h *Handle) Q() Querier { return h.q }

// DB returns the pool, for callers that run a …Tx method inside their own
// transaction. On SQLite every transaction begun on it is BEGIN IMMEDIATE;
// on PostgreSQL it runs SQL as given ($n parameters) and takes no write
// lock: use Begin or Durable there.
func (h *Handle) DB() *sql.DB { return h.db }

// Path returns the file path the Handle was opened with (on PostgreSQL,
// the name given to NewPostgresHandle).
func (h *Handle) Path() string { return h.path }

// InTxn reports whether h is the Handle of an InTx transaction.
func (h *Handle) InTxn() bool { return h.chunk != nil }

// InTx runs fn with a Handle whose every use works inside one write
// transaction (BEGIN IMMEDIATE), committed durably against power loss when
// fn returns nil and rolled back when it returns an error or panics. A
// store method's own transaction (Begin) becomes a savepoint inside it, so
// a method that fails still changes nothing; each SQL text is prepared once
// for the whole transaction. Inside InTx, InTx runs fn on the same
// transaction.
//
// The transaction holds the file's write lock until fn returns: other
// writers wait up to the busy timeout, so keep fn short (milliseconds).
// The Handle given to fn must not be used after fn returns; its Close and
// Sync do nothing. Errors: fn's error, or the commit's.
func (h *Handle) InTx(ctx context.Context, fn func(tx *Handle) error) error {
	if h.chunk != nil {
		return fn(h)
	}
	return h.d.durable(ctx, h.db, h.synchronous, func(tx *sql.Tx) error {
		c := *h
		c.chunk = h.stmts.CachedTx(tx)
		c.q = c.chunk
		return fn(&c)
	})
}

// Sync makes every earlier commit durable against power loss (one fsync of
// the WAL; nothing at synchronous=FULL, nothing inside InTx, whose commit is
// durable). A command calls it once, after its last write and before it
// reports what it did.
func (h *Handle) Sync(ctx context.Context) error {
	if h.chunk != nil {
		return nil
	}
	if err := h.d.sync(ctx, h.db, h.synchronous); err != nil {
		return fmt.Errorf("sync %s: %w", h.path, err)
	}
	return nil
}

// Close closes the pool and its statements. The last connection to close
// checkpoints the WAL into the main file. Inside InTx it does nothing.
func (h *Handle) Close() error {
	if h.chunk != nil {
		return nil
	}
	return errors.Join(h.stmts.Close(), h.db.Close())
}

// Txn is the write transaction of one store method: its own transaction on
// the pool, or a savepoint inside the transaction of InTx. Commit or
// Rollback ends it; Rollback after Commit does nothing.
type Txn struct {
	Querier
	tx    *sql.Tx   // own transaction; nil for a savepoint
	chunk *CachedTx // the transaction of InTx, for a savepoint
	d     dialect
	done  bool
}

// Begin starts a method's write transaction (BEGIN IMMEDIATE on SQLite,
// the write lock of NewPostgresHandle on PostgreSQL: the write lock is
// taken first, so what it reads cannot change under it); inside InTx, a
// savepoint. Defer Rollback right after it.
func (h *Handle) Begin(ctx context.Context) (*Txn, error) {
	if h.chunk != nil {
		if _, err := h.chunk.ExecContext(ctx, `SAVEPOINT store_method`); err != nil {
			return nil, err
		}
		return &Txn{Querier: h.chunk, chunk: h.chunk, d: h.d}, nil
	}
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if err := h.d.lockWrites(ctx, tx); err != nil {
		tx.Rollback()
		return nil, err
	}
	return &Txn{Querier: h.stmts.Tx(tx), tx: tx, d: h.d}, nil
}

// PrepareContext prepares query (store SQL, rewritten for the database) in
// the transaction. The statement binds its arguments as given: no bool
// arguments on PostgreSQL.
func (t *Txn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	query = t.d.query(query)
	if t.tx != nil {
		return t.tx.PrepareContext(ctx, query)
	}
	return t.chunk.Tx().PrepareContext(ctx, query)
}

// Commit commits the method's transaction, or releases its savepoint.
func (t *Txn) Commit() error {
	t.done = true
	if t.tx != nil {
		return t.tx.Commit()
	}
	_, err := t.chunk.ExecContext(context.Background(), `RELEASE store_method`)
	return err
}

// Rollback undoes what the method wrote, unless it committed.
func (t *Txn) Rollback() error {
	if t.done {
		return nil
	}
	t.done = true
	if t.tx != nil {
		return t.tx.Rollback()
	}
	ctx := context.Background()
	if _, err := t.chunk.ExecContext(ctx, `ROLLBACK TO store_method`); err != nil {
		return err
	}
	_, err := t.chunk.ExecContext(ctx, `RELEASE store_method`)
	return err
}

// Durable runs fn in a write transaction committed durably against power
// loss together with every earlier commit (DurableTx); inside InTx, in a
// savepoint (the commit of InTx is durable). fn returning ErrNothingWritten
// rolls back and counts as success.
func (h *Handle) Durable(ctx context.Context, fn func(q Querier) error) error {
	if h.chunk == nil {
		return h.d.durable(ctx, h.db, h.synchronous, func(tx *sql.Tx) error { return fn(h.stmts.Tx(tx)) })
	}
	t, err := h.Begin(ctx)
	if err != nil {
		return err
	}
	defer t.Rollback()
	if err := fn(t); errors.Is(err, ErrNothingWritten) {
		return nil
	} else if err != nil {
		return err
	}
	return t.Commit()
}

// TimeLayout is how the stores write times: RFC 3339 with a fixed
// nine-digit fraction, always in UTC. Fixed width keeps text order equal to
// time order in SQL (ORDER BY created_at); time.RFC3339Nano trims zeros and
// would not.
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// FormatTime renders t for storage: UTC, TimeLayout.
func FormatTime(t time.Time) string {
	return t.UTC().Format(TimeLayout)
}

// ParseTime reads a stored time back (any RFC 3339 form), in UTC.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// IsUniqueViolation reports a PRIMARY KEY or UNIQUE constraint failure, of
// SQLite or of PostgreSQL (SQLSTATE 23505).
func IsUniqueViolation(err error) bool {
	if isPGUniqueViolation(err) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// RowsChanged turns an Exec result into errNone when no row matched the
// guard: a guarded update that changed nothing is never ignored. errNone is
// the caller's conflict sentinel.
func RowsChanged(res sql.Result, err, errNone error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return errNone
	}
	return nil
}
