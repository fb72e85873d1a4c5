// Package sqlitedb opens the SQLite files of assistant (checkpoints.sqlite,
// business.sqlite) the one way both stores need: a file that is not ours is
// refused before anything is written, a new file is made private and whole,
// an older one is migrated step by step.
//
//	db, err := sqlitedb.Open(ctx, path, sqlitedb.Spec{
//		ApplicationID: 0x41534350,
//		Migrations:    migs, // from sqlitedb.LoadMigrations(embeddedFS, "migrations")
//		Create:        true,
//	})
//
// The rules it keeps (DESIGN.md "Storage"):
//
//   - A file carries its owner in PRAGMA application_id and its schema
//     version in PRAGMA user_version, both in the 100-byte file header, where
//     a person reading the file with the sqlite3 shell sees them.
//   - An existing non-empty file is inspected read-only first. A file that is
//     not SQLite, truncated or damaged (ErrCorrupt), another program's
//     (ErrForeignFile) or of a newer schema (ErrNewerSchema) is refused and
//     left byte for byte as it was. So is a file in a directory this process
//     cannot write (ErrReadOnly): SQLite needs to create its -wal and -shm
//     files beside it.
//   - A new file (0 bytes, or SQLite with no schema and no ids) gets every
//     migration, the application id and Spec.OnCreate in one transaction, so
//     no process ever sees it half made. An older file gets one transaction
//     per migration, each setting user_version; each re-reads the version
//     under the write lock, so processes opening one file at once apply a
//     step once.
//   - Every pooled connection runs in WAL mode with the busy timeout,
//     synchronous level and foreign keys set in the DSN, and every
//     transaction is BEGIN IMMEDIATE.
//
// Why not a migration library such as pressly/goose: it creates and writes
// its own version table when it opens a file, before it could tell a
// foreign or newer file from ours, and refusing such a file unchanged is the
// first rule here. See README.md "Why no migration library".
package sqlitedb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Defaults of Open.
const (
	// DefaultBusyTimeout is how long a statement waits for another
	// connection's (or process's) write lock before failing with SQLITE_BUSY.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultSynchronous is the PRAGMA synchronous level: every commit is
	// durable against power loss.
	DefaultSynchronous = "FULL"
)

// Refusals of Open. Each comes wrapped with what was found; the file is left
// byte for byte as it was. The stores re-export them (business.ErrCorrupt is
// sqlitedb.ErrCorrupt), so errors.Is matches through either name.
var (
	// ErrForeignFile: the file is a SQLite database of another program.
	ErrForeignFile = errors.New("another program's SQLite file; move it aside or choose another --data directory (the file is left unchanged)")
	// ErrNewerSchema: the file's schema version is newer than this build knows.
	ErrNewerSchema = errors.New("written by a newer version of assistant; upgrade assistant (the file is left unchanged)")
	// ErrCorrupt: the file is not a SQLite database, or a damaged or truncated one.
	ErrCorrupt = errors.New("corrupt, truncated or not a SQLite file; restore it from a backup or move it aside (the file is left unchanged)")
	// ErrReadOnly: the file or its directory cannot be written by this process.
	ErrReadOnly = errors.New("not writable; make the data directory and its files writable (chmod u+w) or choose another --data directory (the file is left unchanged)")
)

// header opens every SQLite database file (https://sqlite.org/fileformat.html).
var header = []byte("SQLite format 3\x00")

// Migration is one schema step: migrations/NNNN_name.sql of a store.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// LoadMigrations reads dir/NNNN_name.sql from fsys, ordered by version, and
// checks the versions run 1, 2, 3 … without gaps.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var migs []Migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", name)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		migs = append(migs, Migration{Version: v, Name: base, SQL: string(b)})
	}
	slices.SortFunc(migs, func(a, b Migration) int { return int(a.Version - b.Version) })
	for i, m := range migs {
		if m.Version != int64(i+1) {
			return nil, fmt.Errorf("migration %s: version %d, want %d", m.Name, m.Version, i+1)
		}
	}
	if len(migs) == 0 {
		return nil, fmt.Errorf("no migrations in %s", dir)
	}
	return migs, nil
}

// Spec says which file Open expects and how to open it.
type Spec struct {
	// ApplicationID marks the store's files (PRAGMA application_id).
	ApplicationID int64
	// Migrations are versions 1..n in order; the newest is the version this
	// build writes. Required.
	Migrations []Migration
	// Create makes the file (mode 0600) when it is missing. Without it a
	// missing file is an error wrapping fs.ErrNotExist. The directory must
	// exist either way.
	Create bool
	// Synchronous is "FULL" (the default when "") or "NORMAL".
	Synchronous string
	// BusyTimeout overrides DefaultBusyTimeout when positive. SQLite counts
	// it in whole milliseconds.
	BusyTimeout time.Duration
	// OnCreate, when set, runs in the transaction that creates a new file's
	// schema, after the migrations (e.g. to load seed rows).
	OnCreate func(ctx context.Context, tx *sql.Tx) error
}

// Open opens the file at path as spec describes, refusing (unchanged) a
// file that is not for this build, and migrates it to the newest version.
// Errors name nothing but what was found; the caller adds the path. The
// caller closes the pool.
func Open(ctx context.Context, path string, spec Spec) (*sql.DB, error) {
	if len(spec.Migrations) == 0 {
		return nil, errors.New("no migrations")
	}
	sync := strings.ToUpper(spec.Synchronous)
	switch sync {
	case "":
		sync = DefaultSynchronous
	case "FULL", "NORMAL":
	default:
		return nil, fmt.Errorf("synchronous %q: want FULL or NORMAL", spec.Synchronous)
	}
	busy := DefaultBusyTimeout
	if spec.BusyTimeout > 0 {
		busy = spec.BusyTimeout
	}
	ms := strconv.FormatInt(busy.Milliseconds(), 10)

	if err := ensureFile(path, spec.Create); err != nil {
		return nil, err
	}
	if err := writable(path); err != nil {
		return nil, err
	}
	if err := inspect(ctx, path, ms, spec); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if err := ensureWAL(ctx, path, ms, busy); err != nil {
		return nil, fmt.Errorf("switch to WAL: %w", err)
	}
	db, err := sql.Open("sqlite", DSN(path,
		// Every write transaction takes the write lock at BEGIN, so a
		// transaction reads what it compares against under that lock.
		"_txlock=immediate",
		"_pragma=busy_timeout("+ms+")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous("+sync+")",
		"_pragma=foreign_keys(ON)",
	))
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, db, spec); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// DSN makes a SQLite URI for the file at p with params ("mode=ro",
// "_pragma=…"). The path is URI-escaped so that a '?', '#' or '%' in it
// cannot be taken for parameters.
func DSN(p string, params ...string) string {
	u := url.URL{Path: p}
	return "file:" + u.EscapedPath() + "?" + strings.Join(params, "&")
}

// ensureFile checks that path is a regular file, creating it empty with mode
// 0600 when create is set (SQLite would use the umask's mode, often 0644).
func ensureFile(path string, create bool) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("not a regular file (%s): %w", fi.Mode().Type(), ErrCorrupt)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist) || !create:
		return err
	}
	if err := access(filepath.Dir(path)); err != nil {
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

// writable refuses a file, or a directory, this process cannot write. SQLite
// would open such a file read-only, or fail later with "unable to open
// database file" when it makes the -wal file; neither says what to do.
func writable(path string) error {
	if err := access(filepath.Dir(path)); err != nil {
		return err
	}
	if err := syscall.Access(path, 2 /* W_OK */); err != nil {
		return fmt.Errorf("file: %v: %w", err, ErrReadOnly)
	}
	return nil
}

// access checks that dir can be written and searched.
func access(dir string) error {
	if err := syscall.Access(dir, 2|1 /* W_OK|X_OK */); err != nil {
		return fmt.Errorf("directory %s: %v: %w", dir, err, ErrReadOnly)
	}
	return nil
}

// inspect looks at an existing non-empty file without changing it: the
// connection is read-only and sets no journal mode (switching a foreign
// rollback-journal file to WAL would rewrite its header). Reading a file
// that is already in WAL mode creates empty -wal and -shm files beside it
// when they are missing; the database file itself is untouched. (immutable=1
// would avoid them but could read a torn page while another process
// checkpoints, and call a healthy file corrupt.)
func inspect(ctx context.Context, path, busyMS string, spec Spec) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	hdr := make([]byte, 100)
	n, err := io.ReadFull(f, hdr)
	f.Close()
	switch {
	case n == 0 && err == io.EOF:
		return nil // 0 bytes: a new file
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%d bytes is shorter than a SQLite header: %w", n, ErrCorrupt)
	case err != nil:
		return err
	case !bytes.HasPrefix(hdr, header):
		return fmt.Errorf("no SQLite header: %w", ErrCorrupt)
	}

	db, err := sql.Open("sqlite", DSN(path, "mode=ro", "_pragma=busy_timeout("+busyMS+")"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	// One read transaction, so the answers describe one state of the file.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback()
	h, err := readHeader(ctx, tx)
	if err != nil {
		return err
	}
	// quick_check reads every page's structure (not index contents): it
	// finds a truncated file and a damaged page, which reading the header
	// alone would not. Only our own files get here; it runs once per open.
	if h.appID == spec.ApplicationID {
		if err := quickCheck(ctx, tx); err != nil {
			return err
		}
	}
	return h.check(spec)
}

// fileHeader is what decides whether a file is ours and how old it is.
type fileHeader struct {
	appID, version, objects int64
}

func readHeader(ctx context.Context, tx *sql.Tx) (fileHeader, error) {
	var h fileHeader
	// Counting sqlite_schema reads page 1 and the schema pages, which is
	// where SQLite notices a file that is not a database.
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&h.objects); err != nil {
		return h, classify(err)
	}
	if err := tx.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&h.appID); err != nil {
		return h, classify(err)
	}
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&h.version); err != nil {
		return h, classify(err)
	}
	return h, nil
}

// check decides from the header whether this build may use the file. A
// SQLite file with no schema and no ids (e.g. one that only had its page size
// set) counts as new.
func (h fileHeader) check(spec Spec) error {
	newest := spec.Migrations[len(spec.Migrations)-1].Version
	switch {
	case h.appID == spec.ApplicationID && h.version > newest:
		return fmt.Errorf("schema version %d, this build knows up to %d: %w", h.version, newest, ErrNewerSchema)
	case h.appID == spec.ApplicationID:
		return nil
	case h.appID != 0:
		return fmt.Errorf("application_id %#x, want %#x: %w", h.appID, spec.ApplicationID, ErrForeignFile)
	case h.objects > 0 || h.version != 0:
		return fmt.Errorf("%d schema objects, user_version %d, no application_id: %w", h.objects, h.version, ErrForeignFile)
	}
	return nil
}

// quickCheck runs PRAGMA quick_check and turns any finding into ErrCorrupt
// naming the first few problems.
func quickCheck(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `PRAGMA quick_check(3)`)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return classify(err)
		}
		if line != "ok" {
			problems = append(problems, strings.TrimSpace(line))
		}
	}
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("quick_check: %s: %w", strings.Join(problems, "; "), ErrCorrupt)
	}
	return nil
}

// ensureWAL switches the file to WAL mode, a persistent setting, before the
// pool opens. Two processes switching a new file at the same moment can get
// SQLITE_BUSY at once, without the busy timeout: the switch upgrades a read
// lock to a write lock, and SQLite never waits on an upgrade (two upgraders
// would deadlock). So this retries, with short pauses, for up to busy. Once
// the file is in WAL mode, the journal_mode pragma each pooled connection runs
// changes nothing and cannot fail this way.
func ensureWAL(ctx context.Context, path, busyMS string, busy time.Duration) error {
	db, err := sql.Open("sqlite", DSN(path, "_pragma=busy_timeout("+busyMS+")"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	deadline := time.Now().Add(busy)
	pause := time.Millisecond
	for {
		var mode string
		err := db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		switch {
		case err == nil && strings.EqualFold(mode, "wal"):
			return nil
		case err == nil:
			return fmt.Errorf("journal mode is %q, want wal", mode)
		case !IsBusy(err) || time.Now().After(deadline):
			return classify(err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// migrate brings the file to the newest version, one transaction per step
// (a new file: one transaction for all).
func migrate(ctx context.Context, db *sql.DB, spec Spec) error {
	// The pool's connections are in WAL mode, or something (a read-only
	// directory, for one) kept the rollback journal.
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("connect: %w", classify(err))
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	for {
		done, err := migrateStep(ctx, db, spec)
		if err != nil || done {
			return err
		}
	}
}

func migrateStep(ctx context.Context, db *sql.DB, spec Spec) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
	if err != nil {
		return false, classify(err)
	}
	defer tx.Rollback()

	h, err := readHeader(ctx, tx)
	if err != nil {
		return false, err
	}
	// Checked again under the write lock: the file may have changed since
	// inspect (another process, a newer build).
	if err := h.check(spec); err != nil {
		return false, err
	}
	newest := spec.Migrations[len(spec.Migrations)-1].Version
	if h.version == newest {
		return true, nil
	}
	steps := spec.Migrations[h.version:]
	if h.version > 0 {
		steps = steps[:1]
	}
	for _, m := range steps {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return false, fmt.Errorf("migrate to schema version %d (%s): %w", m.Version, m.Name, err)
		}
	}
	target := steps[len(steps)-1].Version
	if h.version == 0 {
		// PRAGMA arguments cannot be bound parameters; both numbers come
		// from the store, never from input.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", spec.ApplicationID)); err != nil {
			return false, err
		}
		if spec.OnCreate != nil {
			if err := spec.OnCreate(ctx, tx); err != nil {
				return false, err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", target)); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, classify(err)
	}
	return target == newest, nil
}

// IsBusy reports whether err is SQLITE_BUSY (any extended code).
func IsBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// classify marks SQLite's "corrupt" and "not a database" errors as
// ErrCorrupt and its "read-only" and "cannot open" errors as ErrReadOnly;
// any other error (busy, I/O, cancelled) stays as it is.
func classify(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%v: %w", err, ErrCorrupt)
		case sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%v: %w", err, ErrReadOnly)
		}
	}
	return err
}
