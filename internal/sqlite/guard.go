package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	modernc "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// guard watches every connection of one pool (Open wraps the driver's
// connections in guardConn) for two things:
//
//   - The stamp. The first write transaction of the pool also raises
//     data_dir.stamp (DataDirTable), so the WAL frames a process writes
//     carry the page that names the data dir it was written for. SQLite
//     merges any -wal file that lies beside a database when it opens it,
//     whoever wrote it (it checks the frames' checksums and salts against
//     the -wal's own header, not against the database), so a -wal copied
//     from another data dir would be merged for good; the stamp is what
//     lets Open tell such a -wal from its own (walBelongs).
//   - Corruption. A statement that meets SQLITE_CORRUPT or SQLITE_NOTADB
//     (a damaged page that the checks at open did not read) poisons the
//     pool: the file gets a quick_check, the error says what it found and
//     what to do, and every later statement, and the commit of every
//     transaction under way, fails. A damaged file is never written.
type guard struct {
	path    string
	stamped atomic.Bool  // a write transaction of this pool raised the stamp
	conns   atomic.Int64 // connections open
	mu      sync.Mutex
	corrupt error // the poison, once a statement met corruption; nil before
	damaged bool  // quick_check confirmed the damage
	id      string
	idKnown bool // id is the file's data dir identity, read by Open
}

// setDataDirID records the identity Open read ("" for a file without one).
func (g *guard) setDataDirID(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.id, g.idKnown = id, true
}

// dataDirID returns the identity Open recorded, if it did.
func (g *guard) dataDirID() (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.id, g.idKnown
}

// stampSQL raises the stamp. A file of a schema without DataDirTable (one
// being made or migrated) fails it with "no such table", which leaves the
// transaction as it was; a later transaction of the pool stamps.
const stampSQL = `UPDATE ` + DataDirTable + ` SET stamp = stamp + 1 WHERE one = 1`

// poisoned returns the poison, or nil.
func (g *guard) poisoned() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.corrupt
}

// note passes err on, poisoning the pool first when err says the file is
// corrupt. The first such error gets a quick_check of the file (on a
// connection of its own, read-only) to say what is damaged.
func (g *guard) note(err error) error {
	var se *modernc.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	if c := se.Code() & 0xff; c != sqlite3.SQLITE_CORRUPT && c != sqlite3.SQLITE_NOTADB {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.corrupt == nil {
		check := quickCheckFile(g.path)
		g.corrupt = &CorruptError{Path: g.path, Cause: err, QuickCheck: check}
		g.damaged = check != "ok"
	}
	return g.corrupt
}

// closed is told that a connection of the pool closed. When the last one
// has closed a file quick_check found damaged, the file is marked to be
// checked at its next open (markUnchecked), by any process, which then
// refuses it: the last close empties the -wal, which would otherwise make
// the damaged file look closed cleanly.
func (g *guard) closed() {
	if g.conns.Add(-1) > 0 {
		return
	}
	g.mu.Lock()
	damaged := g.damaged
	g.mu.Unlock()
	if damaged {
		markUnchecked(g.path)
	}
}

// CorruptError is a statement that met a damaged page of the file at Path
// after Open accepted it: Cause is SQLite's error, QuickCheck what PRAGMA
// quick_check then found ("ok" when it found nothing, which a damaged
// index can still cause). The pool writes nothing more. It matches
// ErrCorrupt.
type CorruptError struct {
	Path       string
	Cause      error
	QuickCheck string
}

// Error implements the error interface for *CorruptError.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: %v (quick_check: %s); nothing more is written to it", e.Path, e.Cause, e.QuickCheck)
}

// Unwrap returns ErrCorrupt and SQLite's error.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Cause} }

// quickCheckFile runs PRAGMA quick_check(3) on the file at path, on a
// read-only connection, and returns its findings joined by "; " (or how
// it failed).
func quickCheckFile(path string) string {
	db, err := sql.Open("sqlite", DSN(path, "mode=ro", "_pragma=busy_timeout(5000)"))
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	tx, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err.Error()
	}
	defer tx.Rollback()
	if err := quickCheck(context.Background(), tx); err != nil {
		return strings.TrimSuffix(strings.TrimPrefix(err.Error(), "quick_check: "), ": "+ErrCorrupt.Error())
	}
	return "ok"
}

// guardConnector makes the pool's connections: persistent-WAL mode, and
// the guardConn around each.
type guardConnector struct {
	driver.Connector
	g *guard
}

// Connect opens one connection of the pool.
func (c guardConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := persistentWAL{c.Connector}.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c.g.conns.Add(1)
	return &guardConn{Conn: conn, g: c.g}, nil
}

// guardConn is one connection of a guarded pool. database/sql uses a
// connection from one goroutine at a time, so inTx needs no lock.
type guardConn struct {
	driver.Conn
	g *guard
	// inTx is set between BeginTx and the transaction's end; stamping is
	// set when the transaction raised the stamp.
	inTx, stamping bool
}

// Close closes the connection.
func (c *guardConn) Close() error {
	err := c.Conn.Close()
	c.g.closed()
	return err
}

// Unwrap returns the driver's own connection (modernc.Backup needs it).
func (c *guardConn) Unwrap() driver.Conn { return c.Conn }

// BeginTx begins a transaction and, the first time in the pool for a
// write transaction, raises the stamp in it.
func (c *guardConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.g.poisoned(); err != nil {
		return nil, err
	}
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, c.g.note(err)
	}
	c.inTx, c.stamping = true, false
	if !opts.ReadOnly && !c.g.stamped.Load() {
		c.stamping = c.stamp(ctx)
	}
	return &guardTx{Tx: tx, c: c}, nil
}

// Begin is BeginTx with the default options.
func (c *guardConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// stamp raises the stamp in the transaction under way and reports whether
// a row changed (false for a file without DataDirTable, or its row).
func (c *guardConn) stamp(ctx context.Context) bool {
	res, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, stampSQL, nil)
	if err != nil {
		return false
	}
	n, err := res.RowsAffected()
	return err == nil && n == 1
}

// PrepareContext prepares query; its statements are guarded too.
func (c *guardConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.g.poisoned(); err != nil {
		return nil, err
	}
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, c.g.note(err)
	}
	return &guardStmt{Stmt: st, c: c, write: isWrite(query)}, nil
}

// Prepare is PrepareContext without a context.
func (c *guardConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// ExecContext runs query, stamping it first when it is the pool's first
// write (autocommit).
func (c *guardConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.g.poisoned(); err != nil {
		return nil, err
	}
	exec := func() (driver.Result, error) {
		return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	}
	return c.autocommit(ctx, isWrite(query), exec)
}

// QueryContext runs query; its rows are guarded too.
func (c *guardConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.g.poisoned(); err != nil {
		return nil, err
	}
	rows, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	if err != nil {
		return nil, c.g.note(err)
	}
	return newGuardRows(rows, c.g), nil
}

// autocommit runs exec, a statement outside any transaction; the pool's
// first write among those runs in a transaction of its own that raises the
// stamp first, so that its frames carry the data dir's identity too.
func (c *guardConn) autocommit(ctx context.Context, write bool, exec func() (driver.Result, error)) (driver.Result, error) {
	if c.inTx || !write || c.g.stamped.Load() {
		res, err := exec()
		return res, c.g.note(err)
	}
	tx, err := c.BeginTx(ctx, driver.TxOptions{})
	if err != nil {
		return nil, err
	}
	res, err := exec()
	if err != nil {
		_ = tx.Rollback()
		return nil, c.g.note(err)
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return res, nil
}

// Ping passes on to the driver's connection.
func (c *guardConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// ResetSession passes on to the driver's connection.
func (c *guardConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// IsValid passes on to the driver's connection.
func (c *guardConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// guardTx ends a transaction of a guardConn.
type guardTx struct {
	driver.Tx
	c *guardConn
}

// Commit commits, unless the pool was poisoned meanwhile (another
// statement met the damage while this transaction ran): then it rolls
// back, and nothing is written once the file is known to be damaged. A
// stamping transaction that commits marks the pool stamped.
func (t *guardTx) Commit() error {
	stamping := t.c.stamping
	t.c.inTx, t.c.stamping = false, false
	if p := t.c.g.poisoned(); p != nil {
		_ = t.Tx.Rollback()
		return p
	}
	if err := t.Tx.Commit(); err != nil {
		if p := t.c.g.poisoned(); p != nil {
			return p
		}
		return t.c.g.note(err)
	}
	if stamping {
		t.c.g.stamped.Store(true)
	}
	return nil
}

// Rollback rolls back.
func (t *guardTx) Rollback() error {
	t.c.inTx, t.c.stamping = false, false
	return t.Tx.Rollback()
}

// guardStmt is a prepared statement of a guardConn.
type guardStmt struct {
	driver.Stmt
	c     *guardConn
	write bool
}

// ExecContext runs the statement (see guardConn.ExecContext).
func (s *guardStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.g.poisoned(); err != nil {
		return nil, err
	}
	return s.c.autocommit(ctx, s.write, func() (driver.Result, error) {
		return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	})
}

// QueryContext runs the statement; its rows are guarded too.
func (s *guardStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.g.poisoned(); err != nil {
		return nil, err
	}
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, s.c.g.note(err)
	}
	return newGuardRows(rows, s.c.g), nil
}

// Exec is ExecContext without a context.
func (s *guardStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

// Query is QueryContext without a context.
func (s *guardStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// guardRows reads the rows of a guarded statement; a row that meets a
// damaged page poisons the pool.
type guardRows struct {
	driver.Rows
	g *guard
}

func newGuardRows(r driver.Rows, g *guard) driver.Rows { return &guardRows{Rows: r, g: g} }

// Next reads the next row.
func (r *guardRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err == nil || err == io.EOF {
		return err
	}
	return r.g.note(err)
}

// ColumnTypeDatabaseTypeName passes on to the driver's rows.
func (r *guardRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// ColumnTypeScanType passes on to the driver's rows.
func (r *guardRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

// isWrite reports whether query (one statement) changes rows: the
// statements the stamp must precede when they are the pool's first write.
func isWrite(query string) bool {
	q := strings.ToUpper(strings.TrimSpace(query))
	for _, w := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if strings.HasPrefix(q, w) {
			return true
		}
	}
	return false
}
