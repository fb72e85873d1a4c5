package business

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"assistant/internal/sqlitedb"
)

const (
	// DefaultDraftTTL is how long a prepared draft may be submitted, counted
	// from its creation (DESIGN.md "The return-request flow": default 300 s).
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

	// ErrTaskExists reports a CreateTask whose task id is already taken.
	ErrTaskExists = errors.New("task exists")

	// ErrConflict reports that a guarded update found the row in another state
	// than the caller expected (its WHERE clause matched 0 rows), or that an
	// idempotency key was reused with different input.
	ErrConflict = errors.New("state changed under the request")

	// ErrForeignFile refuses a file that holds tables but carries another
	// PRAGMA application_id than ApplicationID: it belongs to another program.
	// It is sqlitedb.ErrForeignFile, shared with checkpoints.
	ErrForeignFile = sqlitedb.ErrForeignFile

	// ErrNewerSchema refuses a business file whose PRAGMA user_version is newer
	// than the migrations this build knows.
	ErrNewerSchema = sqlitedb.ErrNewerSchema

	// ErrCorrupt refuses a file that is not an SQLite database, or is truncated
	// or damaged (header check and PRAGMA quick_check).
	ErrCorrupt = sqlitedb.ErrCorrupt

	// ErrReadOnly refuses a file, or a data directory, this process cannot
	// write.
	ErrReadOnly = sqlitedb.ErrReadOnly
)

// timeLayout is RFC 3339 with a fixed nine-digit fraction, always in UTC.
// Fixed width keeps text order equal to time order in SQL (ORDER BY
// created_at); time.RFC3339Nano trims zeros and would not.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step; version n is migrations/000n_*.sql.
type migration = sqlitedb.Migration

// migrations holds the embedded steps in order, versions 1..len(migrations).
// A var, not a constant list: tests swap it to make files of older versions.
var migrations = mustLoadMigrations(migrationFiles)

// SchemaVersion is the PRAGMA user_version this build writes: the number of
// embedded migrations. Files with a larger version are refused with
// ErrNewerSchema.
var SchemaVersion = len(migrations)

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
}

// Store is the return desk kept in business.sqlite: orders, drafts,
// applications and tasks. It is safe for concurrent use by many goroutines,
// and several processes may open the same file at once.
type Store struct {
	db          *sql.DB
	q           sqlitedb.Querier   // stmts, or chunk inside InTx
	stmts       *sqlitedb.Stmts    // prepared statements of the pool
	chunk       *sqlitedb.CachedTx // the transaction of InTx; nil outside
	orders      *orderMemo         // orders read inside InTx; nil outside
	path        string
	now         func() time.Time
	synchronous string
}

// Open opens (and, with opts.Create, creates) the business database at path,
// migrates an older schema and seeds a new file.
//
// Before anything is written, an existing non-empty file is inspected
// read-only: a file that is not SQLite, or is truncated or damaged, gives
// ErrCorrupt; a file with tables and another application id gives
// ErrForeignFile; a user_version newer than SchemaVersion gives
// ErrNewerSchema. After such a refusal the file is byte-for-byte unchanged
// (DESIGN.md "Storage"). All errors name the path:
// "open business PATH: …".
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	s, err := open(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open business %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string, opts Options) (*Store, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	// Parse the seed first: a bad seed must fail before the file exists.
	seed, err := parseSeed(opts.Seed)
	if err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Spec{
		ApplicationID: ApplicationID,
		Migrations:    migrations[:SchemaVersion],
		Create:        opts.Create,
		Synchronous:   opts.Synchronous,
		BusyTimeout:   DefaultBusyTimeout,
		OnCreate: func(ctx context.Context, tx *sql.Tx) error {
			return loadSeed(ctx, tx, seed, now())
		},
	})
	if err != nil {
		return nil, err
	}
	synchronous := strings.ToUpper(opts.Synchronous)
	if synchronous == "" {
		synchronous = sqlitedb.DefaultSynchronous
	}
	stmts := sqlitedb.NewStmts(db)
	return &Store{db: db, q: stmts, stmts: stmts, path: path, now: now, synchronous: synchronous}, nil
}

// Sync makes every earlier commit durable against power loss (one fsync of
// the WAL; nothing at synchronous=FULL). A command calls it once, after its
// last write and before it reports what it did.
func (s *Store) Sync(ctx context.Context) error {
	if s.chunk != nil {
		return nil // InTx commits durably
	}
	if err := sqlitedb.Sync(ctx, s.db, s.synchronous); err != nil {
		return fmt.Errorf("sync business %s: %w", s.path, err)
	}
	return nil
}

// Close closes the database pool. The last connection to close checkpoints
// the WAL into the main file.
func (s *Store) Close() error {
	if s.chunk != nil {
		return nil // the Store of InTx: the pool belongs to its parent
	}
	return errors.Join(s.stmts.Close(), s.db.Close())
}

// DB returns the pool, for callers that run SubmitTx inside their own
// transaction. Every transaction begun on it is BEGIN IMMEDIATE (DSN _txlock).
func (s *Store) DB() *sql.DB {
	return s.db
}

// Path returns the file path the store was opened with.
func (s *Store) Path() string {
	return s.path
}

// mustLoadMigrations reads migrations/NNNN_name.sql in version order and
// panics unless the versions are exactly 1..n: a gap is a build mistake.
func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := sqlitedb.LoadMigrations(fsys, "migrations")
	if err != nil {
		panic("business: " + err.Error())
	}
	return ms
}

// formatTime renders t for storage: UTC, fixed-width nanoseconds.
func formatTime(t time.Time) string {
	return t.UTC().Format(timeLayout)
}

// parseTime reads a stored time back (any RFC 3339 form), in UTC.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// storedTime is t as it reads back from the file: UTC, no monotonic reading.
func storedTime(t time.Time) time.Time {
	return t.UTC().Round(0)
}

// isUniqueViolation reports a PRIMARY KEY or UNIQUE constraint failure.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}
