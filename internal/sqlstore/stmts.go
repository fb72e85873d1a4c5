package sqlstore

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// statements counts the SQL statements the statement caches ran (Stmts,
// its Tx, CachedTx): every statement of the stores over a Handle.
var statements atomic.Int64

// Statements returns how many SQL statements the stores over every Handle
// of this process ran so far (reads and writes; not BEGIN and COMMIT, nor
// the statements of a *sql.Stmt from Txn.PrepareContext). On PostgreSQL
// each is a round trip to the server; tests and benchmarks compare two
// readings.
func Statements() int64 { return statements.Load() }

// Querier runs SQL: *sql.DB, *sql.Tx and *sql.Conn are Queriers, and so are
// the statement caches below. Store code written against it runs unchanged
// on a pool or inside a caller's transaction.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var (
	_ Querier = (*sql.DB)(nil)
	_ Querier = (*sql.Tx)(nil)
	_ Querier = (*Stmts)(nil)
	_ Querier = (*CachedTx)(nil)
)

// stmtCache prepares each distinct SQL text once with prepare and runs it
// prepared; a text that does not prepare runs on direct, so its error comes
// back as it would without the cache. A nil prepare runs every text on
// direct: on PostgreSQL pgx's driver prepares each text once per
// connection itself (its default query exec mode, cache_statement), and a
// database/sql prepare would cost two more round trips a text (parse, and
// deallocate when the statement closes) in every transaction.
type stmtCache struct {
	prepare func(ctx context.Context, query string) (*sql.Stmt, error)
	direct  Querier
	mu      sync.Mutex
	stmts   map[string]*sql.Stmt
}

func (c *stmtCache) stmt(ctx context.Context, query string) *sql.Stmt {
	if c.prepare == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st
	}
	st, err := c.prepare(ctx, query)
	if err != nil {
		return nil
	}
	c.stmts[query] = st
	return st
}

// ExecContext runs query with args, prepared once.
func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	statements.Add(1)
	if st := c.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.direct.ExecContext(ctx, query, args...)
}

// QueryContext runs query with args, prepared once.
func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	statements.Add(1)
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.direct.QueryContext(ctx, query, args...)
}

// QueryRowContext runs query with args, prepared once.
func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	statements.Add(1)
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.direct.QueryRowContext(ctx, query, args...)
}

// Stmts is a Querier over a pool that prepares each distinct SQL text once
// and reuses the prepared statement (database/sql prepares it again, once,
// on each pooled connection that runs it). Compiling SQL is a fifth of the
// CPU of a loop of short commands with modernc.org/sqlite, which caches no
// statement itself. Only single statements may go through it. Safe for
// concurrent use. Close it before the pool.
type Stmts struct {
	stmtCache
	uses map[string]int // runs in transactions of a query not cached yet
}

// NewStmts returns an empty statement cache over db, which prepares each
// text it runs (a SQLite pool).
func NewStmts(db *sql.DB) *Stmts { return newStmts(db, true) }

// newStmts returns an empty statement cache over db; with prepare false
// it runs every text directly, for a driver that prepares each text once
// per connection itself (Engine.CachesStatements).
func newStmts(db *sql.DB, prepare bool) *Stmts {
	c := &Stmts{stmtCache: stmtCache{prepare: db.PrepareContext, direct: db, stmts: map[string]*sql.Stmt{}}, uses: map[string]int{}}
	if !prepare {
		c.prepare = nil
	}
	return c
}

// Tx returns a Querier over tx, a transaction on the cache's pool. A query
// the cache holds runs prepared (compiled once per connection); another is
// compiled on tx alone: preparing it on the pool would take a second
// connection while tx holds one (open it, read the schema), and most of a
// one-shot command's queries run once or twice. After PromoteAfter runs in
// transactions a query is prepared on the pool too, for loops in one
// process.
func (c *Stmts) Tx(tx *sql.Tx) Querier { return txStmts{c: c, tx: tx} }

// PromoteAfter is how many runs in transactions make a query worth a
// prepared statement on the pool (see Stmts.Tx).
const PromoteAfter = 16

// inTx returns the cached statement of query, preparing it on the pool
// once it has run PromoteAfter times in transactions; nil means run it
// unprepared on the transaction.
func (c *Stmts) inTx(ctx context.Context, query string) *sql.Stmt {
	if c.prepare == nil {
		return nil
	}
	c.mu.Lock()
	st := c.stmts[query]
	if st == nil {
		c.uses[query]++
	}
	promote := st == nil && c.uses[query] >= PromoteAfter
	c.mu.Unlock()
	if promote {
		return c.stmt(ctx, query)
	}
	return st
}

type txStmts struct {
	c  *Stmts
	tx *sql.Tx
}

func (t txStmts) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	statements.Add(1)
	if st := t.c.inTx(ctx, query); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t txStmts) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	statements.Add(1)
	if st := t.c.inTx(ctx, query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t txStmts) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	statements.Add(1)
	if st := t.c.inTx(ctx, query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

// Close closes every cached statement and empties the cache (it stays
// usable and prepares again). It returns the first error.
func (c *Stmts) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for q, st := range c.stmts {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.stmts, q)
	}
	return first
}

// CachedTx is a Querier over one transaction that prepares each distinct
// SQL text once per transaction, for transactions that run the same few
// statements many times (a batch chunk). Its statements close with the
// transaction.
type CachedTx struct {
	stmtCache
	tx *sql.Tx
}

// Tx returns the wrapped transaction.
func (c *CachedTx) Tx() *sql.Tx { return c.tx }

// CachedTx returns a CachedTx over tx, a transaction on the cache's pool,
// that takes a query's statement from the pool's cache when it is there
// (prepared once per connection, so many transactions in a row compile
// nothing) and counts the query towards promotion as Tx does.
func (c *Stmts) CachedTx(tx *sql.Tx) *CachedTx {
	if c.prepare == nil { // the driver caches the statements (stmtCache)
		return &CachedTx{stmtCache: stmtCache{direct: tx, stmts: map[string]*sql.Stmt{}}, tx: tx}
	}
	prepare := func(ctx context.Context, query string) (*sql.Stmt, error) {
		if st := c.inTx(ctx, query); st != nil {
			return tx.StmtContext(ctx, st), nil
		}
		return tx.PrepareContext(ctx, query)
	}
	return &CachedTx{stmtCache: stmtCache{prepare: prepare, direct: tx, stmts: map[string]*sql.Stmt{}}, tx: tx}
}

// TxStmts returns a Querier over tx that prepares each distinct SQL text
// once, on tx's own connection (never on another of the pool, as a
// Stmts' CachedTx may), for a transaction on a pool of one connection.
// Its statements close with the transaction, or with CloseStatements.
func TxStmts(tx *sql.Tx) *CachedTx {
	return &CachedTx{stmtCache: stmtCache{prepare: tx.PrepareContext, direct: tx, stmts: map[string]*sql.Stmt{}}, tx: tx}
}

// CloseStatements closes the statements prepared so far.
func (c *CachedTx) CloseStatements() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.stmts {
		_ = st.Close()
		delete(c.stmts, q)
	}
}
