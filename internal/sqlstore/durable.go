package sqlstore

import (
	"database/sql"
	"errors"
	"sync/atomic"
)

// ErrNothingWritten, returned by the function given to a durable commit
// (Handle.Durable, Engine.Durable, sqlite.DurableTx), rolls the
// transaction back and makes the commit return nil: a transaction that
// only read has nothing to make durable.
var ErrNothingWritten = errors.New("nothing written")

// syncs counts the durable commits of this process (CommitDurable).
var syncs atomic.Int64

// Syncs returns how many durable commits this process made (for
// benchmarks: on SQLite at synchronous=NORMAL they are the fsyncs of the
// WAL, apart from SQLite's own checkpoints).
func Syncs() int64 { return syncs.Load() }

// CountSync counts in Syncs a commit made durable by other means than a
// durable commit (sqlite.SyncByCheckpoint).
func CountSync() { syncs.Add(1) }

// CommitDurable runs fn in tx, a write transaction the caller began in a
// way that makes its commit durable, and commits it, counting the commit
// in Syncs; fn returning ErrNothingWritten (or any error) commits
// nothing, the caller's deferred Rollback ends tx, and only the other
// errors are returned. Errors: fn's, the commit's.
func CommitDurable(tx *sql.Tx, fn func(tx *sql.Tx) error) error {
	if err := fn(tx); errors.Is(err, ErrNothingWritten) {
		return nil
	} else if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	syncs.Add(1)
	return nil
}
