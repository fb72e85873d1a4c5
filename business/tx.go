package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"assistant/internal/sqlitedb"
)

// InTx runs fn with a Store whose every method works inside one write
// transaction (BEGIN IMMEDIATE), committed durably against power loss when
// fn returns nil and rolled back when it returns an error or panics. A
// method's own transaction becomes a savepoint inside it, so a method that
// fails still changes nothing; each SQL text is prepared once for the whole
// transaction. It is how a batch writes a chunk of rows in one commit
// instead of a dozen per row.
//
// The transaction holds the file's write lock until fn returns: other
// writers (processes, or this store's own methods on other goroutines) wait
// up to DefaultBusyTimeout, so keep fn short (a chunk of rows, milliseconds).
// The Store given to fn must not be used after fn returns; its Close and
// Sync do nothing. Errors: fn's error, or the commit's.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) error {
	if s.chunk != nil {
		return fn(s)
	}
	err := sqlitedb.DurableTx(ctx, s.db, s.synchronous, func(tx *sql.Tx) error {
		c := *s
		c.chunk = s.stmts.CachedTx(tx)
		c.orders = &orderMemo{m: map[[2]string]Order{}}
		c.q = c.chunk
		return fn(&c)
	})
	if err != nil {
		return fmt.Errorf("business transaction: %w", err)
	}
	return nil
}

// txn is the write transaction of one store method: its own transaction on
// the pool, or a savepoint inside the transaction of InTx. Commit or
// Rollback ends it; Rollback after Commit does nothing.
type txn struct {
	sqlitedb.Querier
	tx    *sql.Tx            // own transaction; nil for a savepoint
	chunk *sqlitedb.CachedTx // the transaction of InTx, for a savepoint
	done  bool
}

// begin starts a method's write transaction (BEGIN IMMEDIATE: the write
// lock is taken first, so what it reads cannot change under it).
func (s *Store) begin(ctx context.Context) (*txn, error) {
	if s.chunk != nil {
		if _, err := s.chunk.ExecContext(ctx, `SAVEPOINT store_method`); err != nil {
			return nil, err
		}
		return &txn{Querier: s.chunk, chunk: s.chunk}, nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &txn{Querier: s.stmts.Tx(tx), tx: tx}, nil
}

// PrepareContext prepares query in the transaction.
func (t *txn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if t.tx != nil {
		return t.tx.PrepareContext(ctx, query)
	}
	return t.chunk.Tx().PrepareContext(ctx, query)
}

// Commit commits the method's transaction, or releases its savepoint.
func (t *txn) Commit() error {
	t.done = true
	if t.tx != nil {
		return t.tx.Commit()
	}
	_, err := t.chunk.ExecContext(context.Background(), `RELEASE store_method`)
	return err
}

// Rollback undoes what the method wrote, unless it committed.
func (t *txn) Rollback() error {
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

// durable runs fn in a write transaction committed durably against power
// loss together with every earlier commit (sqlitedb.DurableTx); inside
// InTx, in a savepoint (the commit of InTx is durable). fn returning
// sqlitedb.ErrNothingWritten rolls back and counts as success.
func (s *Store) durable(ctx context.Context, fn func(q sqlitedb.Querier) error) error {
	if s.chunk == nil {
		return sqlitedb.DurableTx(ctx, s.db, s.synchronous, func(tx *sql.Tx) error { return fn(s.stmts.Tx(tx)) })
	}
	t, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer t.Rollback()
	if err := fn(t); errors.Is(err, sqlitedb.ErrNothingWritten) {
		return nil
	} else if err != nil {
		return err
	}
	return t.Commit()
}
