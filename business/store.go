package business

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
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
	ErrForeignFile = errors.New("not a business database (foreign application id)")

	// ErrNewerSchema refuses a business file whose PRAGMA user_version is newer
	// than the migrations this build knows.
	ErrNewerSchema = errors.New("business database has a newer schema than this build")

	// ErrCorrupt refuses a file that is not an SQLite database, or is truncated
	// or damaged (header check and PRAGMA quick_check).
	ErrCorrupt = errors.New("business database is corrupt or not an SQLite file")
)

// timeLayout is RFC 3339 with a fixed nine-digit fraction, always in UTC.
// Fixed width keeps text order equal to time order in SQL (ORDER BY
// created_at); time.RFC3339Nano trims zeros and would not.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// hintAside ends every refusal of a file: what a person can do next.
const hintAside = "the file is left unchanged; move it aside or choose another --data directory"

// sqliteMagic opens every SQLite database file (https://sqlite.org/fileformat.html).
const sqliteMagic = "SQLite format 3\x00"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step; version n is migrations/000n_*.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations holds the embedded steps in order, versions 1..len(migrations).
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
}

// Store is the return desk kept in business.sqlite: orders, drafts,
// applications and tasks. It is safe for concurrent use by many goroutines,
// and several processes may open the same file at once.
type Store struct {
	db   *sql.DB
	path string
	now  func() time.Time
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
	if err := ensureFile(path, opts.Create); err != nil {
		return nil, err
	}
	if err := inspect(ctx, path); err != nil {
		return nil, err
	}

	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, seed, now); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, path: path, now: now}, nil
}

// Close closes the database pool. The last connection to close checkpoints
// the WAL into the main file.
func (s *Store) Close() error {
	return s.db.Close()
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

// dsn builds the read-write DSN. The pragmas live in the DSN, not in a one-off
// Exec, because database/sql opens new pooled connections at any time and
// each of them needs the busy timeout, WAL, FULL sync and foreign keys.
func dsn(path string) string {
	return "file:" + escapePath(path) +
		"?_txlock=immediate" +
		"&_pragma=busy_timeout(" + strconv.FormatInt(DefaultBusyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(FULL)" +
		"&_pragma=foreign_keys(ON)"
}

// readOnlyDSN opens a file for inspection. mode=ro and no journal_mode pragma:
// switching a foreign file to WAL would rewrite its header.
func readOnlyDSN(path string) string {
	return "file:" + escapePath(path) +
		"?mode=ro" +
		"&_pragma=busy_timeout(" + strconv.FormatInt(DefaultBusyTimeout.Milliseconds(), 10) + ")"
}

// escapePath makes path safe inside an SQLite URI filename: '%', '?' and '#'
// would otherwise start an escape, the query or a fragment.
func escapePath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// ensureFile checks that path exists, creating it empty with mode 0600 when
// create is set. SQLite would create it with the umask's mode (often 0644).
func ensureFile(path string, create bool) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist) || !create:
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // another process created it first; inspect decides.
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// inspect refuses, without writing anything, a file this build must not
// change. A 0-byte file passes (it is new).
func inspect(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	header := make([]byte, 100)
	n, err := io.ReadFull(f, header)
	f.Close()
	switch {
	case n == 0 && err == io.EOF:
		return nil // 0 bytes: a new file.
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %d bytes is shorter than an SQLite header (%s)", ErrCorrupt, n, hintAside)
	case err != nil:
		return err
	case !bytes.HasPrefix(header, []byte(sqliteMagic)):
		return fmt.Errorf("%w: no SQLite header (%s)", ErrCorrupt, hintAside)
	}

	db, err := sql.Open("sqlite", readOnlyDSN(path))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return asCorrupt(err)
	}
	defer conn.Close()

	if err := quickCheck(ctx, conn); err != nil {
		return err
	}
	var appID, version, tables int
	if err := conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return asCorrupt(err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return asCorrupt(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return asCorrupt(err)
	}
	return classify(appID, version, tables)
}

// quickCheck runs PRAGMA quick_check (page structure, no index contents) and
// turns any finding into ErrCorrupt naming the first few problems.
func quickCheck(ctx context.Context, conn *sql.Conn) error {
	var result string
	if err := conn.QueryRowContext(ctx, "PRAGMA quick_check(3)").Scan(&result); err != nil {
		return asCorrupt(err)
	}
	if result == "ok" {
		return nil
	}
	// One row holds all findings, one a line, after a "*** in database main ***" line.
	var problems []string
	for line := range strings.Lines(result) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "***") {
			problems = append(problems, line)
		}
	}
	return fmt.Errorf("%w: quick_check: %s (%s)", ErrCorrupt, strings.Join(problems, "; "), hintAside)
}

// classify decides from a file's header fields whether this build may use it.
// An SQLite file with no schema and no ids (for example one that only had
// its page size set) counts as new.
func classify(appID, version, schemaObjects int) error {
	switch {
	case appID == ApplicationID && version > SchemaVersion:
		return fmt.Errorf("%w: file has schema version %d, this build knows up to %d (upgrade assistant; the file is left unchanged)",
			ErrNewerSchema, version, SchemaVersion)
	case appID == ApplicationID:
		return nil
	case appID != 0:
		return fmt.Errorf("%w: application_id %#x, want %#x (%s)",
			ErrForeignFile, appID, ApplicationID, hintAside)
	case schemaObjects > 0 || version != 0:
		return fmt.Errorf("%w: file has tables but no business application_id (%s)",
			ErrForeignFile, hintAside)
	}
	return nil
}

// asCorrupt maps SQLite's "not a database" and "malformed" results to
// ErrCorrupt and keeps any other error (busy, I/O, cancelled) as it is.
func asCorrupt(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%w: %v (%s)", ErrCorrupt, err, hintAside)
		}
	}
	return err
}

// migrate brings the file to SchemaVersion. A new file (user_version 0) gets
// every migration, the application id and the seed in one transaction, so it
// is never seen half-made; an older file gets one transaction per migration,
// each setting user_version. Each step re-reads the version inside its
// transaction, so processes that open the same file at once apply a step once.
func migrate(ctx context.Context, db *sql.DB, seed []seedOrder, now func() time.Time) error {
	for {
		done, err := migrateStep(ctx, db, seed, now)
		if err != nil || done {
			return err
		}
	}
}

func migrateStep(ctx context.Context, db *sql.DB, seed []seedOrder, now func() time.Time) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()

	var appID, version, objects int
	if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return false, err
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return false, err
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		return false, err
	}
	// Checked again under the write lock: the file may have changed since
	// inspect (another process, a newer build).
	if err := classify(appID, version, objects); err != nil {
		return false, err
	}
	if version == SchemaVersion {
		return true, nil
	}

	steps := migrations[version:]
	if version > 0 {
		steps = steps[:1]
	}
	for _, m := range steps {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return false, fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	target := steps[len(steps)-1].version
	if version == 0 {
		// PRAGMA arguments cannot be bound parameters; both are integers
		// from this package, never input.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			return false, err
		}
		if err := loadSeed(ctx, tx, seed, now()); err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", target)); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	return target == SchemaVersion, nil
}

// mustLoadMigrations reads migrations/NNNN_name.sql in version order and
// panics unless the versions are exactly 1..n: a gap is a build mistake.
func mustLoadMigrations(fsys fs.FS) []migration {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		panic(err)
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			panic(fmt.Sprintf("business: migration file %q is not NNNN_name.sql", e.Name()))
		}
		body, err := fs.ReadFile(fsys, path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			panic(fmt.Sprintf("business: migration %s has version %d, want %d", m.name, m.version, i+1))
		}
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
