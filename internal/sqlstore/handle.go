package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Handle is one opened database as the stores that keep tables in it see
// it: the pool, its statement cache, its Engine and, inside InTx, one
// write transaction that every method of every store over the Handle
// joins. business.sqlite (or the PostgreSQL schema business) has two such
// stores, business (the return desk) and runs (run bookkeeping); a batch
// chunk writes both in one commit through one Handle.
//
// The Handle runs the stores' SQL as it is given: a store writes each
// statement for each database it supports and picks the texts of
// Database().
//
// A Handle is safe for concurrent use, except the Handle given to the
// function of InTx, which belongs to that function.
type Handle struct {
	db    *sql.DB
	q     Querier   // the engine's Pool, or chunk inside InTx
	stmts *Stmts    // the pool's statement cache
	chunk *CachedTx // the transaction of InTx; nil outside
	name  string
	e     Engine
}

// NewHandle wraps db, a pool on the database e serves, under name (a file
// path, or what stands for one in errors: never a password). The engine
// packages call it (sqlite.NewHandle, pgdb.NewHandle). Close closes db.
func NewHandle(db *sql.DB, name string, e Engine) *Handle {
	stmts := newStmts(db, !e.CachesStatements())
	return &Handle{db: db, q: e.Pool(db, stmts), stmts: stmts, name: name, e: e}
}

// Database reports which database the Handle runs on, for a store to pick
// the statements written for it.
func (h *Handle) Database() Database { return h.e.Database() }

// Postgres reports whether the Handle is on a PostgreSQL server rather
// than a SQLite file.
func (h *Handle) Postgres() bool { return h.e.Database() == PostgreSQL }

// Q returns what a store's read or single-statement write runs on: the
// pool's statement cache, or the transaction of InTx. Outside InTx a
// write statement waits for the write lock on both databases (the
// Engine's Pool).
func (h *Handle) Q() Querier { return h.q }

// DB returns the pool, for callers that run a …Tx method inside their own
// transaction. On SQLite every transaction begun on it is BEGIN IMMEDIATE;
// on PostgreSQL its transactions take no write lock: use Begin or Durable
// there.
func (h *Handle) DB() *sql.DB { return h.db }

// Path returns the file path the Handle was opened with (on PostgreSQL,
// the name given to pgdb.NewHandle).
func (h *Handle) Path() string { return h.name }

// InTxn reports whether h is the Handle of an InTx transaction.
func (h *Handle) InTxn() bool { return h.chunk != nil }

// IsUniqueViolation reports whether err is a PRIMARY KEY or UNIQUE
// constraint failure of the Handle's database.
func (h *Handle) IsUniqueViolation(err error) bool { return h.e.IsUniqueViolation(err) }

// DataDirID returns the data dir identity the Handle's database carries:
// its data_dir row, "" when there is none (a SQLite file of a schema
// older than the pairing). Errors: reading it.
func (h *Handle) DataDirID(ctx context.Context) (string, error) {
	return h.e.DataDirID(ctx, h.q)
}

// InTx runs fn with a Handle whose every use works inside one write
// transaction (the Engine's Durable: BEGIN IMMEDIATE on SQLite, the write
// lock first on PostgreSQL), committed durably against power loss when
// fn returns nil and rolled back when it returns an error or panics. A
// store method's own transaction (Begin) becomes a savepoint inside it, so
// a method that fails still changes nothing; each SQL text is prepared once
// for the whole transaction. Inside InTx, InTx runs fn on the same
// transaction.
//
// The transaction holds the database's write lock until fn returns: other
// writers wait up to the busy timeout, so keep fn short (milliseconds).
// The Handle given to fn must not be used after fn returns; its Close and
// Sync do nothing. Errors: fn's error, or the commit's.
func (h *Handle) InTx(ctx context.Context, fn func(tx *Handle) error) error {
	if h.chunk != nil {
		return fn(h)
	}
	return h.e.Durable(ctx, h.db, func(tx *sql.Tx) error {
		c := *h
		c.chunk = h.stmts.CachedTx(tx)
		c.q = c.chunk
		return fn(&c)
	})
}

// Sync makes every earlier commit durable against power loss (on SQLite
// one fsync of the WAL; nothing at synchronous=FULL, on PostgreSQL, or
// inside InTx, whose commit is durable). A command calls it once, after
// its last write and before it reports what it did.
func (h *Handle) Sync(ctx context.Context) error {
	if h.chunk != nil {
		return nil
	}
	if err := h.e.Sync(ctx, h.db); err != nil {
		return fmt.Errorf("sync %s: %w", h.name, err)
	}
	return nil
}

// Close closes the pool and its statements. On SQLite the last connection
// to close checkpoints the WAL into the main file. Inside InTx it does
// nothing.
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
	done  bool
}

// Begin starts a method's write transaction (BEGIN IMMEDIATE on SQLite,
// the advisory write lock first on PostgreSQL: the write lock is taken
// first, so what it reads cannot change under it); inside InTx, a
// savepoint. Defer Rollback right after it.
func (h *Handle) Begin(ctx context.Context) (*Txn, error) {
	if h.chunk != nil {
		if _, err := h.chunk.ExecContext(ctx, `SAVEPOINT store_method`); err != nil {
			return nil, err
		}
		return &Txn{Querier: h.chunk, chunk: h.chunk}, nil
	}
	tx, err := h.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if err := h.e.LockWrites(ctx, tx); err != nil {
		tx.Rollback()
		return nil, err
	}
	return &Txn{Querier: h.stmts.Tx(tx), tx: tx}, nil
}

// PrepareContext prepares query, a statement of the Handle's database, in
// the transaction.
func (t *Txn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
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

// checkpointSyncer is an Engine that can make a file's commits durable
// by checkpointing its WAL into it (sqlite's engine).
type checkpointSyncer interface {
	SyncByCheckpoint(ctx context.Context, db *sql.DB) error
}

// DurableLast is Durable for a process's last write to the database before
// it closes it: on SQLite the transaction commits at the pool's level and
// a checkpoint of the WAL into the file then makes it durable with every
// earlier commit (sqlite.SyncByCheckpoint), which the close's own
// checkpoint would have done after one more fsync of the WAL. A write
// after it is still committed but durable only at the next sync or the
// close. Elsewhere (PostgreSQL, inside InTx) it is Durable.
func (h *Handle) DurableLast(ctx context.Context, fn func(q Querier) error) error {
	cs, ok := h.e.(checkpointSyncer)
	if !ok || h.chunk != nil {
		return h.Durable(ctx, fn)
	}
	if wrote, err := h.commit(ctx, fn); err != nil || !wrote {
		return err
	}
	if err := cs.SyncByCheckpoint(ctx, h.db); err != nil {
		return fmt.Errorf("sync %s: %w", h.name, err)
	}
	return nil
}

// Durable runs fn in a write transaction committed durably against power
// loss together with every earlier commit (the Engine's Durable); inside
// InTx, in a savepoint (the commit of InTx is durable). fn returning
// ErrNothingWritten rolls back and counts as success.
func (h *Handle) Durable(ctx context.Context, fn func(q Querier) error) error {
	if h.chunk == nil {
		return h.e.Durable(ctx, h.db, func(tx *sql.Tx) error { return fn(h.stmts.Tx(tx)) })
	}
	_, err := h.commit(ctx, fn)
	return err
}

// commit runs fn in a method's transaction (Begin) and commits it; wrote
// is false when fn returned ErrNothingWritten, which rolls back and is
// success.
func (h *Handle) commit(ctx context.Context, fn func(q Querier) error) (wrote bool, err error) {
	t, err := h.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer t.Rollback()
	if err := fn(t); errors.Is(err, ErrNothingWritten) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, t.Commit()
}
