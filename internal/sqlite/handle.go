package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"assistant/internal/sqlstore"
)

// NewHandle wraps db, a pool Open opened at path with synchronous level
// ("" means DefaultSynchronous), for the stores that keep tables in the
// file: their write transactions are the pool's BEGIN IMMEDIATE, a
// durable commit is DurableTx and Sync is Sync, at that level. Close
// closes db.
func NewHandle(db *sql.DB, path, synchronous string) *sqlstore.Handle {
	synchronous = strings.ToUpper(synchronous)
	if synchronous == "" {
		synchronous = DefaultSynchronous
	}
	return sqlstore.NewHandle(db, path, engine{synchronous: synchronous})
}

// engine is the sqlstore.Engine of a SQLite file at one synchronous level
// (NORMAL or FULL, upper case): every transaction on the pool is BEGIN
// IMMEDIATE (the DSN's _txlock), which takes the file's write lock first.
type engine struct{ synchronous string }

var _ sqlstore.Engine = engine{}

func (engine) Database() sqlstore.Database { return sqlstore.SQLite }

// Pool is the statement cache itself: a write statement outside a
// transaction waits for the file's write lock as every statement does.
func (engine) Pool(_ *sql.DB, stmts *sqlstore.Stmts) sqlstore.Querier { return stmts }

func (engine) LockWrites(context.Context, *sql.Tx) error { return nil }

func (e engine) Durable(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	return DurableTx(ctx, db, e.synchronous, fn)
}

func (e engine) Sync(ctx context.Context, db *sql.DB) error { return Sync(ctx, db, e.synchronous) }

// SyncByCheckpoint makes every commit on db durable by a checkpoint of
// the WAL (SyncByCheckpoint): sqlstore.Handle.DurableLast.
func (e engine) SyncByCheckpoint(ctx context.Context, db *sql.DB) error {
	return SyncByCheckpoint(ctx, db, e.synchronous)
}

// CachesStatements is false: modernc.org/sqlite caches no statement, and
// compiling SQL is a fifth of the CPU of a loop of short commands.
func (engine) CachesStatements() bool { return false }

func (engine) DataDirID(ctx context.Context, q sqlstore.Querier) (string, error) {
	return DataDirID(ctx, q)
}

func (engine) IsUniqueViolation(err error) bool { return IsUniqueViolation(err) }
