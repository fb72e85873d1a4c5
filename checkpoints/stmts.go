package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCache holds the prepared statements of a store by their SQL text. A
// *sql.Stmt is compiled once per pooled connection and then reused, where
// db.ExecContext would compile its SQL on every call (compiling was about a
// fifth of the CPU of Put in the in-process benchmark). Safe for concurrent
// use.
type stmtCache struct {
	db *sql.DB

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	uses  map[string]int // runs in transactions of a query not cached yet
}

// get returns the statement of query, preparing it on first use.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st := c.stmts[query]
	c.mu.Unlock()
	if st != nil {
		return st, nil
	}
	// Prepared without the lock: preparing waits for a connection, and other
	// statements need not wait for that.
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.stmts[query]; old != nil {
		st.Close() // another goroutine was first
		return old, nil
	}
	if c.stmts == nil {
		c.stmts = make(map[string]*sql.Stmt)
	}
	c.stmts[query] = st
	return st, nil
}

// in returns the statement of query bound to tx; tx closes the binding
// when it ends. A query not cached yet is compiled on tx's connection only:
// preparing it on the pool would take a second connection while tx holds
// one (open, read the schema) — most of a one-shot command's statements
// run once or twice. A query run in transactions promoteAfter times is
// prepared on the pool and reused from then on (a loop in one process).
func (c *stmtCache) in(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st := c.stmts[query]
	promote := false
	if st == nil {
		if c.uses == nil {
			c.uses = make(map[string]int)
		}
		c.uses[query]++
		promote = c.uses[query] >= promoteAfter
	}
	c.mu.Unlock()
	if st == nil && !promote {
		return tx.PrepareContext(ctx, query)
	}
	st, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
}

// promoteAfter is how many runs in transactions make a query worth a
// prepared statement on the pool (see stmtCache.in).
const promoteAfter = 16

// close closes every statement; a later get prepares again (and fails once
// the pool is closed).
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	c.stmts = nil
	return errors.Join(errs...)
}
