package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// dialect is what differs between the two databases a Handle runs on: a
// SQLite file (sqliteDialect) or a PostgreSQL server (*pgDialect). The
// stores above the Handle write one set of SQL, SQLite's: `?` and `?N`
// parameters, INTEGER 0/1 booleans, TEXT times. A dialect turns that into
// what its database runs, and gives write transactions the same guarantee
// on both: what a write transaction reads cannot change under it.
type dialect interface {
	// query returns the text to run for the store's SQL text q.
	query(q string) string
	// args returns the arguments to bind for the store's args.
	args(args []any) []any
	// lockWrites runs first in every write transaction the Handle begins.
	lockWrites(ctx context.Context, tx *sql.Tx) error
	// durable runs fn in a write transaction committed durably against
	// power loss together with every commit before it (DurableTx).
	durable(ctx context.Context, db *sql.DB, level string, fn func(tx *sql.Tx) error) error
	// sync makes every earlier commit durable (Sync).
	sync(ctx context.Context, db *sql.DB, level string) error
	// cachesStatements reports that the driver prepares each SQL text
	// once per connection by itself, so the statement caches (Stmts,
	// CachedTx) run every text directly instead of preparing it.
	cachesStatements() bool
}

// sqliteDialect runs the store SQL as it is written: every transaction on
// the pool is BEGIN IMMEDIATE (the DSN's _txlock), which takes the file's
// write lock first.
type sqliteDialect struct{}

func (sqliteDialect) query(q string) string                     { return q }
func (sqliteDialect) args(args []any) []any                     { return args }
func (sqliteDialect) lockWrites(context.Context, *sql.Tx) error { return nil }
func (sqliteDialect) cachesStatements() bool                    { return false }
func (sqliteDialect) sync(ctx context.Context, db *sql.DB, level string) error {
	return Sync(ctx, db, level)
}
func (sqliteDialect) durable(ctx context.Context, db *sql.DB, level string, fn func(tx *sql.Tx) error) error {
	return DurableTx(ctx, db, level, fn)
}

// pgDialect runs the store SQL on PostgreSQL (pgx's database/sql driver):
//
//   - parameters `?` and `?N` become `$n` (Rewrite), once per SQL text;
//   - the column name user, a reserved word there, is quoted;
//   - a Go bool argument is bound as 0 or 1 (the columns are INTEGER);
//   - every write transaction first takes the transaction-level advisory
//     lock writeLock, so writers of one database run one at a time, as
//     on SQLite, and under READ COMMITTED each statement sees every
//     commit before it: what a read-then-write method read cannot change
//     under it;
//   - every session commits with synchronous_commit = on (set by the
//     opener), so every commit is durable when it returns: Sync and
//     Durable add nothing.
type pgDialect struct {
	writeLock int64
	mu        sync.Mutex
	texts     map[string]string // store SQL → PostgreSQL SQL
}

func newPGDialect(writeLock int64) *pgDialect {
	return &pgDialect{writeLock: writeLock, texts: map[string]string{}}
}

func (d *pgDialect) query(q string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.texts[q]; ok {
		return t
	}
	t := Rewrite(q)
	d.texts[q] = t
	return t
}

func (d *pgDialect) args(args []any) []any {
	var out []any // copied on the first bool only: most calls have none
	for i, a := range args {
		b, ok := a.(bool)
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = int64(0)
		if b {
			out[i] = int64(1)
		}
	}
	if out == nil {
		return args
	}
	return out
}

func (d *pgDialect) lockWrites(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, d.writeLock)
	return err
}

func (d *pgDialect) durable(ctx context.Context, db *sql.DB, _ string, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := d.lockWrites(ctx, tx); err != nil {
		return err
	}
	return commitDurable(tx, fn)
}

// cachesStatements is true: pgx's database/sql driver runs a query in its
// default exec mode, cache_statement, which prepares each SQL text once per
// connection and keeps it (an LRU of 512 texts).
func (d *pgDialect) cachesStatements() bool { return true }

// sync does nothing: with synchronous_commit = on every commit was flushed
// to the server's write-ahead log before it returned.
func (d *pgDialect) sync(context.Context, *sql.DB, string) error { return nil }

// Rewrite turns store SQL, written for SQLite, into PostgreSQL's: a `?`
// parameter becomes `$n` (n one above the highest number so far, as
// SQLite numbers them), `?N` becomes `$N`, and the identifier user (a
// reserved word in PostgreSQL, which would read it as current_user)
// becomes "user", and SQLite's conflict clause INSERT OR FAIL becomes a
// plain INSERT (which fails the same way: PostgreSQL keeps no statement
// journal to spare, see business's insertOrders). String literals ('…'),
// quoted identifiers ("…") and comments (-- and /* */) are copied
// unchanged.
func Rewrite(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	top := 0 // the highest parameter number so far
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := quotedEnd(q, i, c)
			b.WriteString(q[i:j])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			end := len(q)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(q[i:end])
			i = end
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n := top + 1
			if j > i+1 {
				n, _ = strconv.Atoi(q[i+1 : j])
			}
			top = max(top, n)
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(q) && isIdentPart(q[j]) {
				j++
			}
			switch {
			case strings.EqualFold(q[i:j], "user"):
				b.WriteString(`"user"`)
			case strings.EqualFold(q[i:j], "insert"):
				b.WriteString(q[i:j])
				j += orFail(q[j:])
			default:
				b.WriteString(q[i:j])
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// orFail returns the length of the conflict clause " OR FAIL" (any
// case, any blanks before each word) at the start of q, or 0.
func orFail(q string) int {
	n := 0
	for _, word := range []string{"or", "fail"} {
		k := n
		for k < len(q) && (q[k] == ' ' || q[k] == '\t' || q[k] == '\n' || q[k] == '\r') {
			k++
		}
		if k == n || len(q) < k+len(word) || !strings.EqualFold(q[k:k+len(word)], word) ||
			(len(q) > k+len(word) && isIdentPart(q[k+len(word)])) {
			return 0
		}
		n = k + len(word)
	}
	return n
}

// quotedEnd returns the index after the literal or quoted identifier that
// starts at q[i] with quote (a doubled quote inside it is part of it), or
// len(q) when it does not end.
func quotedEnd(q string, i int, quote byte) int {
	for j := i + 1; j < len(q); j++ {
		if q[j] != quote {
			continue
		}
		if j+1 < len(q) && q[j+1] == quote {
			j++
			continue
		}
		return j + 1
	}
	return len(q)
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '$'
}

// isPGLockTimeout reports PostgreSQL's lock_not_available (SQLSTATE
// 55P03): lock_timeout passed while a statement waited for a lock.
func isPGLockTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// isPGUniqueViolation reports PostgreSQL's unique_violation (SQLSTATE
// 23505), of a PRIMARY KEY or UNIQUE constraint or index.
func isPGUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// dialectQuerier runs store SQL on q, a Querier of d's database.
type dialectQuerier struct {
	q Querier
	d dialect
}

func (w dialectQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return w.q.ExecContext(ctx, w.d.query(query), w.d.args(args)...)
}

func (w dialectQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return w.q.QueryContext(ctx, w.d.query(query), w.d.args(args)...)
}

func (w dialectQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return w.q.QueryRowContext(ctx, w.d.query(query), w.d.args(args)...)
}
