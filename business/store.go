package business

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"assistant/internal/pgdb"
	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

const (
	// DefaultDraftTTL is how long a prepared draft may be submitted, counted
	// from its creation (docs/design.md "Nodes": default 300 s).
	DefaultDraftTTL = 300 * time.Second

	// ReturnWindow is how long after delivery an order may be returned. An
	// order delivered exactly ReturnWindow ago is still eligible.
	ReturnWindow = 30 * 24 * time.Hour

	// DefaultBusyTimeout is how long a connection waits for another
	// connection's (or process's) write lock before failing with SQLITE_BUSY.
	DefaultBusyTimeout = 5 * time.Second

	// ApplicationID is written to PRAGMA application_id of every business
	// file ("ASBD"). A file with tables and another id is not ours.
	ApplicationID = 0x41534244
)

var (
	// ErrNotFound reports an unknown order, draft, application or task, or one
	// that belongs to another user. Both cases give the same error so that a
	// caller never learns that another user's record exists.
	ErrNotFound = errors.New("not found")

	// ErrDraftExpired reports a Submit at or after the draft's expires_at.
	// The draft is not refreshed; the task has to prepare a new one.
	ErrDraftExpired = errors.New("draft expired")

	// ErrOpenApplication: Submit found a pending application for the draft's
	// order made from another draft (one open application per order).
	ErrOpenApplication = errors.New("order already has an open application")

	// ErrIneligible: Submit found that the draft's order may no longer be
	// returned (see *IneligibleError for the reason code).
	ErrIneligible = errors.New("order may no longer be returned")

	// ErrConflict reports that a guarded update found the row in another state
	// than the caller expected (its WHERE clause matched 0 rows), or that an
	// idempotency key was reused with different input.
	ErrConflict = errors.New("state changed under the request")

	// ErrForeignFile refuses a file that holds tables but carries another
	// PRAGMA application_id than ApplicationID: it belongs to another program.
	// It is sqlite.ErrForeignFile, shared with checkpoints.
	ErrForeignFile = sqlite.ErrForeignFile

	// ErrNewerSchema refuses a business file whose PRAGMA user_version is newer
	// than the migrations this build knows.
	ErrNewerSchema = sqlite.ErrNewerSchema

	// ErrOlderSchema refuses, read-only, a business file of an older
	// schema than this build writes: opening it read-only does not
	// migrate it. It is sqlite.ErrOlderSchema.
	ErrOlderSchema = sqlite.ErrOlderSchema

	// ErrCorrupt refuses a file that is not an SQLite database, or is truncated
	// or damaged (header check and PRAGMA quick_check).
	ErrCorrupt = sqlite.ErrCorrupt

	// ErrReadOnly refuses a file, or a data directory, this process cannot
	// write.
	ErrReadOnly = sqlite.ErrReadOnly

	// ErrPairMismatch refuses a business file that carries another data
	// dir's identity than Options.DataDirID (the checkpoint file's): the
	// two files do not belong together. The error is a
	// *sqlite.PairError naming both identities.
	ErrPairMismatch = sqlite.ErrPairMismatch

	// ErrForeignWAL refuses a file whose -wal beside it holds frames not
	// written for it. It is sqlite.ErrForeignWAL, shared with checkpoints.
	ErrForeignWAL = sqlite.ErrForeignWAL
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step; version n is migrations/000n_*.sql.
type migration = sqlstore.Migration

// embeddedMigrations reads the embedded steps, versions 1..n, on first
// use: a command that never opens business.sqlite (--version, help, a
// store on PostgreSQL) does not pay for them at start-up.
var embeddedMigrations = sync.OnceValue(func() []migration { return mustLoadMigrations(migrationFiles) })

// migrationsOverride, when not nil, replaces the embedded steps: tests
// make files of older or newer versions with it.
var migrationsOverride []migration

// migrations returns the steps this build knows, in version order.
func migrations() []migration {
	if migrationsOverride != nil {
		return migrationsOverride
	}
	return embeddedMigrations()
}

// SchemaVersion returns the PRAGMA user_version this build writes: the
// number of its migrations. Files with a larger version are refused with
// ErrNewerSchema.
func SchemaVersion() int { return len(migrations()) }

// Options configures Open.
type Options struct {
	// Create creates the file (mode 0600) when it is missing. Without it a
	// missing file is an error that wraps fs.ErrNotExist.
	Create bool

	// Seed is the teaching orders CSV (format in testdata/orders.csv), loaded
	// once, in the transaction that creates the schema of a new or 0-byte
	// file. It is ignored when the file already has a schema. It is
	// validated before the file is touched.
	Seed []byte

	// Now is the clock for times the store picks itself (seed dates, task
	// timestamps). Default time.Now. Stored times are UTC.
	Now func() time.Time

	// Synchronous is "NORMAL" (the default when "") or "FULL". With NORMAL
	// a commit survives a process crash at once and power loss after Sync;
	// drafts and applications are committed durably either way (another
	// file refers to them).
	Synchronous string

	// DataDirID is the data dir identity of the checkpoint file beside
	// this one (checkpoints.SQLite.DataDirID). A business file that
	// carries another is refused with ErrPairMismatch before anything is
	// written; a new file, or one migrated to schema 4 now, gets it. ""
	// checks nothing (a file opened on its own, in tests).
	DataDirID string

	// PGOpenBusyWait is, on PostgreSQL, how long OpenPostgres waits for a
	// server with no free connection slot (or starting up) for the
	// store's first connection before it fails busy (ErrPGServerBusy); 0
	// takes the connect timeout. A caller that holds other connections
	// of the server passes PGHeldBusyWait, and on busy closes them and
	// tries again (docs/postgres.md "Busy"). SQLite ignores it.
	PGOpenBusyWait time.Duration
}

// Store is the return desk kept in business.sqlite (Open) or in a
// PostgreSQL schema (OpenPostgres): orders, drafts and applications. The
// run bookkeeping (package runs) keeps its tables in the same file or
// schema, over the same Handle. It is safe for concurrent use by many
// goroutines, and several processes may open the same file at once.
type Store struct {
	h      *sqlstore.Handle
	q      *queries   // the statements of h's database
	orders *orderMemo // orders read inside InTx; nil outside
	rows   *rowMemo   // decisions, drafts, applications read inside InTx; nil outside
	now    func() time.Time
}

// Open opens (and, with opts.Create, creates) the business database at path,
// migrates an older schema and seeds a new file.
//
// Before anything is written, an existing non-empty file is inspected
// read-only: a file that is not SQLite, or is truncated or damaged, gives
// ErrCorrupt; a file with tables and another application id gives
// ErrForeignFile; a user_version newer than SchemaVersion gives
// ErrNewerSchema. After such a refusal the file is byte-for-byte unchanged
// (docs/storage.md "Refusals"). All errors name the path:
// "open business PATH: …".
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	s, err := open(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open business %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string, opts Options) (*Store, error) {
	// Parse the seed first: a bad seed must fail before the file exists.
	now, seed, err := opts.clockAndSeed()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.Open(ctx, path, sqlite.Spec{
		ApplicationID: ApplicationID,
		Migrations:    migrations(),
		Create:        opts.Create,
		Synchronous:   opts.Synchronous,
		BusyTimeout:   DefaultBusyTimeout,
		DataDirID:     opts.DataDirID,
		OnCreate: func(ctx context.Context, tx *sql.Tx) error {
			// A file made with fewer migrations (tests make such files, as
			// older builds did) has no teaching column yet.
			var marked int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('orders') WHERE name = 'teaching'`).Scan(&marked); err != nil {
				return fmt.Errorf("seed orders: %w", err)
			}
			return loadSeed(ctx, tx, sqliteQueries, seed, now(), marked > 0)
		},
	})
	if err != nil {
		return nil, err
	}
	return newStore(sqlite.NewHandle(db, path, opts.Synchronous), now), nil
}

// newStore returns the store over h, with the statements of its
// database, reading the clock now.
func newStore(h *sqlstore.Handle, now func() time.Time) *Store {
	return &Store{h: h, q: sqlstore.Pick(h.Database(), sqliteQueries, postgresQueries), now: now}
}

// clockAndSeed returns the clock a store of opts reads (opts.Now, or
// time.Now when nil) and the orders of opts.Seed, parsed, as both Open
// and OpenPostgres begin. Errors: a seed that does not parse.
func (opts Options) clockAndSeed() (func() time.Time, []seedOrder, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	seed, err := parseSeed(opts.Seed)
	if err != nil {
		return nil, nil, err
	}
	return now, seed, nil
}

// DataDirID returns the data dir identity the business file carries (a
// UUID, sqlite.DataDirTable); "" inside a file of a schema older than 4.
// Errors: reading the file.
func (s *Store) DataDirID(ctx context.Context) (string, error) {
	id, err := s.h.DataDirID(ctx)
	if err != nil {
		return "", fmt.Errorf("business: data dir identity: %w", err)
	}
	return id, nil
}

// Sync makes every earlier commit durable against power loss (one fsync of
// the WAL; nothing at synchronous=FULL or inside InTx). A command calls it
// once, after its last write and before it reports what it did.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.h.Sync(ctx); err != nil {
		return fmt.Errorf("business: %w", err)
	}
	return nil
}

// Close closes the database pool (nothing inside InTx). The last connection
// to close checkpoints the WAL into the main file.
func (s *Store) Close() error { return s.h.Close() }

// DB returns the pool. On SQLite every transaction begun on it is BEGIN
// IMMEDIATE (DSN _txlock). On PostgreSQL its transactions take no write
// lock: write through Handle().Begin or Durable instead
// (sqlstore.Handle.DB).
func (s *Store) DB() *sql.DB { return s.h.DB() }

// Path returns the file path the store was opened with; on PostgreSQL,
// "postgres schema business".
func (s *Store) Path() string { return s.h.Path() }

// Handle returns the opened file, for the other store that keeps its tables
// in business.sqlite: runs.New(desk.Handle(), now). Inside InTx it is the
// transaction's Handle, so both stores write in the one commit.
func (s *Store) Handle() *sqlstore.Handle { return s.h }

// InTx runs fn with a Store whose every method works inside one write
// transaction, committed durably when fn returns nil and rolled back when
// it returns an error (sqlstore.Handle.InTx); orders read inside it are
// kept for the transaction (a batch chunk reads the same orders for every
// row). It is how a batch writes a chunk of rows in one commit instead of a
// dozen per row. The Store given to fn must not be used after fn returns.
// Errors: fn's error, or the commit's.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) error {
	if s.h.InTxn() {
		return fn(s)
	}
	err := s.h.InTx(ctx, func(h *sqlstore.Handle) error {
		return fn(&Store{h: h, q: s.q, now: s.now, orders: &orderMemo{m: map[[2]string]Order{}},
			rows: &rowMemo{tasks: map[string]*taskRows{}, drafts: map[string]string{}}})
	})
	if err != nil {
		return fmt.Errorf("business transaction: %w", err)
	}
	return nil
}

// mustLoadMigrations reads migrations/NNNN_name.sql in version order and
// panics unless the versions are exactly 1..n: a gap is a build mistake.
func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := sqlstore.LoadMigrations(fsys, "migrations")
	if err != nil {
		panic("business: " + err.Error())
	}
	return ms
}

// formatTime renders t for storage (sqlstore.FormatTime).
func formatTime(t time.Time) string { return sqlstore.FormatTime(t) }

// parseTime reads a stored time back (sqlstore.ParseTime).
func parseTime(s string) (time.Time, error) { return sqlstore.ParseTime(s) }

// storedTime is t as it reads back from the file: UTC, no monotonic reading.
func storedTime(t time.Time) time.Time {
	return t.UTC().Round(0)
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// IsBusy reports whether err is SQLite's SQLITE_BUSY from either file of a
// data dir, or PostgreSQL's lock_not_available from the business store on
// a server: a write lock another process held past DefaultBusyTimeout.
func IsBusy(err error) bool { return sqlite.IsBusy(err) || pgdb.IsBusy(err) }

// BusyCause returns the database's own error in err's chain that made it
// busy (SQLite's SQLITE_BUSY, PostgreSQL's lock_not_available), or nil.
func BusyCause(err error) error {
	if c := sqlite.BusyCause(err); c != nil {
		return c
	}
	return pgdb.LockBusyCause(err)
}
