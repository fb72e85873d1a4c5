// Package sqlite opens the SQLite files of assistant (checkpoints.sqlite,
// business.sqlite) the one way both stores need: a file that is not ours is
// refused before anything is written, a new file is made private and whole,
// an older one is migrated step by step. It also reads them without
// changing them (OpenReadOnly, CheckFile, CountRowsReadOnly), copies them
// (TakeSnapshot), loads a new one in bulk (BulkLoad), and gives the
// stores over a file their sqlstore.Handle (NewHandle, the SQLite
// sqlstore.Engine).
//
//	db, err := sqlite.Open(ctx, path, sqlite.Spec{
//		ApplicationID: 0x41534350,
//		Migrations:    migs, // from sqlstore.LoadMigrations(embeddedFS, "migrations")
//		Create:        true,
//	})
//	h := sqlite.NewHandle(db, path, sqlite.DefaultSynchronous)
//
// The rules it keeps (docs/storage.md "Refusals" and "Migrations"):
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
//   - A file nobody has open whose -wal holds frames (a crash, or a -wal
//     from elsewhere), and a file changed since this program last closed it
//     cleanly (a restore, a copy, a disk editor), get a PRAGMA quick_check
//     before the pool opens; the -wal's frames must carry the file's data
//     dir identity (ErrForeignWAL): SQLite itself merges any -wal beside a
//     file. A damaged file is refused with ErrCorrupt and checked again at
//     every open until it passes.
//   - The files of a data dir carry one identity (DataDirTable,
//     Spec.DataDirID); a file whose identity is not its partner's is
//     refused with a *PairError before anything is written.
//   - Every pooled connection runs in WAL mode with the busy timeout,
//     synchronous level and foreign keys set in the DSN, and every
//     transaction is BEGIN IMMEDIATE. The pool's first write raises the
//     file's stamp, so its -wal frames name the file's data dir; a
//     statement that meets a damaged page poisons the pool, which then
//     writes nothing more (guard.go).
//   - The default synchronous level is NORMAL: in WAL mode a commit then
//     survives the death of the process at once, and power loss once Sync
//     (or a DurableTx) has committed after it.
//     One synced commit makes every earlier commit in the WAL durable too,
//     so a command syncs each file it wrote once, before it reports.
//
// Why not a migration library such as pressly/goose: it creates and writes
// its own version table when it opens a file, before it could tell a
// foreign or newer file from ours, and refusing such a file unchanged is the
// first rule here. See docs/storage.md "Why no migration library".
package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	modernc "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"assistant/internal/sqlstore"
)

// Defaults of Open.
const (
	// DefaultBusyTimeout is how long a statement waits for another
	// connection's (or process's) write lock before failing with SQLITE_BUSY.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultSynchronous is the PRAGMA synchronous level. In WAL mode a
	// NORMAL commit survives a process crash; Sync and DurableTx make
	// commits durable against power loss as well.
	DefaultSynchronous = "NORMAL"
)

// Refusals of Open. Each comes wrapped with what was found; the file is left
// byte for byte as it was. Each says what happened only: what to do next is
// a hint the application layer gives each (flow/returns), so every front
// end words it its own way. The stores re-export them (business.ErrCorrupt
// is sqlite.ErrCorrupt), so errors.Is matches through either name. The
// refusals of a PostgreSQL schema match the first two too (internal/pgdb).
var (
	// ErrForeignFile: the file is a SQLite database of another program.
	ErrForeignFile = errors.New("another program's SQLite file (the file is left unchanged)")
	// ErrNewerSchema: the file's schema version is newer than this build knows.
	ErrNewerSchema = errors.New("written by a newer version of assistant (the file is left unchanged)")
	// ErrOlderSchema: the file's schema version is older than this build
	// writes, and the file is opened read-only, so it is not migrated.
	ErrOlderSchema = errors.New("of an older schema than this build reads without migrating it (the file is left unchanged)")
	// ErrCorrupt: the file is not a SQLite database, or a damaged or truncated one.
	ErrCorrupt = errors.New("corrupt, truncated or not a SQLite file (the file is left unchanged)")
	// ErrReadOnly: the file or its directory cannot be written by this process.
	ErrReadOnly = errors.New("not writable (the file is left unchanged)")
)

// header opens every SQLite database file (https://sqlite.org/fileformat.html).
var header = []byte("SQLite format 3\x00")

// Spec says which file Open expects and how to open it.
type Spec struct {
	// ApplicationID marks the store's files (PRAGMA application_id).
	ApplicationID int64
	// Migrations are versions 1..n in order; the newest is the version this
	// build writes. Required.
	Migrations []sqlstore.Migration
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
	// DataDirID, when set, is the data dir identity the file must carry
	// (DataDirTable): the identity of the data dir's other file, opened
	// first. A file that carries another is refused with a *PairError
	// (ErrPairMismatch) before anything is written; one that has none yet
	// gets it in the migration transaction that makes the table. When
	// unset, such a file adopts the identity another SQLite file beside it
	// carries, or gets a new one.
	DataDirID string
}

// Open opens the file at path as spec describes, refusing (unchanged) a
// file that is not for this build, and migrates it to the newest version.
// Errors name nothing but what was found; the caller adds the path. The
// caller closes the pool.
func Open(ctx context.Context, path string, spec Spec) (*sql.DB, error) {
	o, err := newOpening(path, spec)
	if err != nil {
		return nil, err
	}
	if err := o.inspectFirst(ctx); err != nil {
		return nil, err
	}
	db, g, err := o.pool()
	if err != nil {
		return nil, err
	}
	if err := o.finish(ctx, db, g); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// opening is one Open under way: the file, how it was found, and what the
// inspection read.
type opening struct {
	path, sync, busyMS string
	busy               time.Duration
	spec               Spec
	hdr                []byte // the first 100 bytes; nil for an empty file
	inWAL              bool   // the header says WAL
	checks             inspection
	viaPool            bool       // inspected through the pool itself
	h                  fileHeader // what the inspection read
	current            bool       // ours, of the newest schema: nothing to migrate
}

// newOpening checks spec, makes or finds the file and reads its header and
// how it was left.
//
// A file whose header says WAL (read and write version 2) and whose -wal
// file is empty, as every clean close leaves ours, can be inspected through
// the pool itself: its connections' journal_mode pragma then changes
// nothing, and they write nothing until told to. That saves two
// connections (each parses the schema) per open. Any other file is
// inspected on a read-only connection of its own first. A WAL with frames
// in it (another process writing the file now, a crash, another program)
// must not meet the pool before the file is known to be ours: closing the
// pool's last connection checkpoints those frames into the file, and a
// refused file is left byte for byte as it was.
//
// A file nobody has open whose -wal holds frames was not closed cleanly
// (or the -wal came from elsewhere): the -wal must be shown to belong to
// the file (walBelongs) and the file to be whole (quick_check) before the
// pool meets it. So must a file that changed since its -wal was last
// emptied, or that has no -wal: something other than this program wrote it
// (a restore, a copy, a disk editor). A file another process has open now
// is that process's to keep whole.
func newOpening(path string, spec Spec) (*opening, error) {
	o, err := optionsOf(path, spec)
	if err != nil {
		return nil, err
	}
	if err := ensureFile(path, spec.Create); err != nil {
		return nil, err
	}
	if err := writable(path); err != nil {
		return nil, err
	}
	if o.hdr, err = readFileHeader(path); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	o.inWAL = o.hdr != nil && o.hdr[18] == 2 && o.hdr[19] == 2
	left := fileLeftState(path)
	if err := o.refuseByHeader(left); err != nil {
		return nil, err
	}
	if err := o.planChecks(left); err != nil {
		return nil, err
	}
	return o, nil
}

// soundHeader reports whether hdr, a file's first 100 bytes, holds what
// every SQLite database header holds (sqlite.org/fileformat.html "The
// Database Header"): a page size that is a power of two from 512 to
// 65536 (1 standing for 65536), file format versions 1 or 2, and the
// payload fractions 64, 32 and 32. A header that fails is no database's
// word on its application or schema.
func soundHeader(hdr []byte) bool {
	size := int(binary.BigEndian.Uint16(hdr[16:18]))
	if size == 1 {
		size = 65536
	}
	return size >= 512 && size <= 65536 && size&(size-1) == 0 &&
		hdr[18] >= 1 && hdr[18] <= 2 && hdr[19] >= 1 && hdr[19] <= 2 &&
		hdr[21] == 64 && hdr[22] == 32 && hdr[23] == 32
}

// refuseByHeader refuses, from the file's first 100 bytes alone, a file
// of another application or of a newer schema, before SQLite opens it
// (headerRefusal), with the words inspect gives. Errors: ErrForeignFile,
// ErrNewerSchema.
func (o *opening) refuseByHeader(left leftState) error {
	if err := headerRefusal(o.hdr, left, o.spec); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	return nil
}

// headerRefusal is the refusal of a file of another application or of a
// newer schema that its header alone (hdr, the first 100 bytes; nil for
// an empty file) tells, without SQLite: an open, even a read-only one,
// would make the -wal and -shm files beside a WAL-mode file that has
// none (docs/storage.md "Refusals": a refused file is left as it was).
// The header is the file's own word only while no -wal holds frames (a
// newer page 1 may be among them) and when it is sound (soundHeader);
// otherwise, and for a file with no application id, nil: SQLite decides.
// Errors: ErrForeignFile, ErrNewerSchema, in fileHeader.check's words.
func headerRefusal(hdr []byte, left leftState, spec Spec) error {
	if hdr == nil || left.walFrames || !soundHeader(hdr) {
		return nil
	}
	h := fileHeader{
		appID:   int64(binary.BigEndian.Uint32(hdr[68:72])),
		version: int64(binary.BigEndian.Uint32(hdr[60:64])),
	}
	newest := spec.Migrations[len(spec.Migrations)-1].Version
	if (h.appID == spec.ApplicationID && h.version > newest) || (h.appID != 0 && h.appID != spec.ApplicationID) {
		return h.check(spec)
	}
	return nil
}

// walOfReplacedFile refuses a file of spec's in rollback-journal mode (a
// copy made by `assistant backup`, put back) with frames in a -wal beside
// it that no process has open: they were written for the file it
// replaced, and SQLite would take the file for a WAL file and read them,
// or merge them. hdr is the file's first 100 bytes (nil: no file). Every
// opening checks it before SQLite reads the file: the pool's and the
// read-only ones of verify and backup. Errors: ErrForeignWAL.
func walOfReplacedFile(hdr []byte, left leftState, spec Spec, path string) error {
	if hdr == nil || (hdr[18] == 2 && hdr[19] == 2) || !left.walFrames || left.inUse ||
		int64(binary.BigEndian.Uint32(hdr[68:72])) != spec.ApplicationID {
		return nil
	}
	return fmt.Errorf("the file is in rollback-journal mode (a copy put back?), %s-wal holds frames of the file it replaced: %w", filepath.Base(path), ErrForeignWAL)
}

// optionsOf checks spec and fills in its defaults.
func optionsOf(path string, spec Spec) (*opening, error) {
	if len(spec.Migrations) == 0 {
		return nil, errors.New("no migrations")
	}
	o := &opening{path: path, spec: spec, busy: DefaultBusyTimeout}
	switch o.sync = strings.ToUpper(spec.Synchronous); o.sync {
	case "":
		o.sync = DefaultSynchronous
	case "FULL", "NORMAL":
	default:
		return nil, fmt.Errorf("synchronous %q: want FULL or NORMAL", spec.Synchronous)
	}
	if spec.BusyTimeout > 0 {
		o.busy = spec.BusyTimeout
	}
	o.busyMS = strconv.FormatInt(o.busy.Milliseconds(), 10)
	return o, nil
}

// planChecks decides from how the file was left what the inspection
// checks, and whether the pool may inspect it.
func (o *opening) planChecks(left leftState) error {
	unclean := left.walFrames && !left.inUse
	if err := walOfReplacedFile(o.hdr, left, o.spec, o.path); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	o.checks = inspection{
		full: o.hdr != nil && (unclean || (left.changed && !left.inUse)),
		wal:  o.inWAL && unclean,
	}
	o.viaPool = o.inWAL && !left.walFrames && !o.checks.full
	return nil
}

// inspectFirst inspects, before any pool opens, a file that may not meet
// one yet (all but a clean file in WAL mode), and switches a file of ours
// in rollback-journal mode to WAL.
func (o *opening) inspectFirst(ctx context.Context) error {
	if o.viaPool {
		return nil
	}
	h, err := inspect(ctx, o.path, o.busyMS, o.hdr, o.spec, o.checks)
	if err != nil {
		if o.checks.full && errors.Is(err, ErrCorrupt) {
			markUnchecked(o.path)
		}
		return fmt.Errorf("inspect: %w", err)
	}
	o.h, o.current = h, o.inWAL && h.current(o.spec)
	if !o.inWAL {
		if err := ensureWAL(ctx, o.path, o.busyMS, o.busy); err != nil {
			return fmt.Errorf("switch to WAL: %w", err)
		}
	}
	if o.checks.full {
		markChecked(o.path)
	}
	return nil
}

// pool opens the pool: every connection with the DSN's pragmas, in
// persistent-WAL mode, guarded (guard.go).
func (o *opening) pool() (*sql.DB, *guard, error) {
	connector, err := modernc.NewConnector(DSN(o.path,
		// Every write transaction takes the write lock at BEGIN, so a
		// transaction reads what it compares against under that lock.
		"_txlock=immediate",
		"_pragma=busy_timeout("+o.busyMS+")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous("+o.sync+")",
		"_pragma=foreign_keys(ON)",
		// With persistentWAL, the last connection to close empties the -wal
		// file instead of deleting it (any limit ≥ 0 does). While the file
		// is open, a WAL that restarts after a checkpoint keeps up to 4 MiB
		// (SQLite's 1,000-page auto-checkpoint) instead of shrinking to
		// 0 bytes: later commits then overwrite allocated blocks, and a
		// durable commit's fsync, with no new blocks or file size to
		// journal, costs about half (115 vs 250 µs here; 28 % more
		// start+approve cycles per second in one process).
		"_pragma=journal_size_limit(4194304)",
		// 128 KiB (32 pages) of page cache per connection instead of
		// SQLite's 2 MiB: a batch keeps two connections per file, and their
		// caches were most of its peak memory (it stays within 20 MiB RSS
		// with this; each cached page takes about 8 KiB of the driver's
		// allocator). A lookup touches a few pages per B-tree; the OS caches the rest,
		// and a 10,000-row batch runs as fast as with 512 KiB (measured).
		"_pragma=cache_size(-128)",
	))
	if err != nil {
		return nil, nil, err
	}
	g := &guard{path: o.path}
	db := sql.OpenDB(guardConnector{connector, g})
	// database/sql keeps 2 idle connections by default: a server's
	// concurrent requests (each a short read on a connection of its own)
	// would then open and close a connection per request, each paying its
	// pragmas, its statements' compilation and a cold page cache.
	db.SetMaxIdleConns(idleConns)
	return db, g, nil
}

// idleConns is how many idle connections a pool keeps open for the next
// request: a command uses one or two, a server as many as it has requests
// in flight at once.
const idleConns = 32

// finish inspects a clean file in WAL mode through the pool, migrates a
// file that is not current, and records the file's data dir identity with
// the pool (DataDirID).
func (o *opening) finish(ctx context.Context, db *sql.DB, g *guard) error {
	if o.viaPool {
		h, err := inspectTx(ctx, db, o.path, o.hdr, o.spec, inspection{})
		if err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		o.h, o.current = h, h.current(o.spec)
	}
	if o.current {
		// A file in WAL mode, ours and current: migrate would only take
		// the write lock to read the version again (and wait for any
		// writer, a batch's chunk, say).
		g.setDataDirID(o.h.dataDirID)
		return nil
	}
	if err := migrate(ctx, db, o.path, o.spec); err != nil {
		return err
	}
	id, _, err := dataDirRow(ctx, db) // written by the migration, or by another process's
	if err != nil {
		return err
	}
	g.setDataDirID(id)
	return nil
}

// persistentWAL opens pool connections in persistent-WAL mode
// (SQLITE_FCNTL_PERSIST_WAL): the last connection to close a file still
// checkpoints the WAL into it, but then truncates the -wal file (see
// journal_size_limit) instead of deleting it, so the data dir keeps the
// same files between commands. It does not save the directory fsync it was
// meant to: SQLite syncs the directory on the first sync of every WAL it
// opens, existing or not (strace: 11 fsync calls per `start`
// either way, and no difference in time in paired runs).
type persistentWAL struct{ driver.Connector }

func (c persistentWAL) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if fc, ok := conn.(modernc.FileControl); ok {
		if _, err := fc.FileControlPersistWAL("main", 1); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
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

// inspect looks at an existing non-empty file without changing it, and
// returns what its header holds (zero for a new, empty file): the
// connection is read-only and sets no journal mode (switching a foreign
// rollback-journal file to WAL would rewrite its header), and a read-only
// connection never checkpoints a WAL into the file. Open uses it for every
// file but one in WAL mode with an empty -wal, which it inspects through
// the pool. Reading creates empty -wal and -shm files beside the file when
// they are missing; the database file itself is untouched. (immutable=1
// would avoid them but could read a torn page while another process
// checkpoints, and call a healthy file corrupt.)
func inspect(ctx context.Context, path, busyMS string, hdr []byte, spec Spec, checks inspection) (fileHeader, error) {
	if hdr == nil {
		return fileHeader{}, nil // 0 bytes: a new file
	}
	db, err := sql.Open("sqlite", DSN(path, "mode=ro", "_pragma=busy_timeout("+busyMS+")"))
	if err != nil {
		return fileHeader{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return inspectTx(ctx, db, path, hdr, spec, checks)
}

// inspection says what inspectTx checks beyond the header and the
// structure whose cost does not grow with the file.
type inspection struct {
	// full runs PRAGMA quick_check: the file was not closed cleanly, or
	// was changed by something else since.
	full bool
	// wal checks that the -wal's frames were written for this file
	// (walBelongs) before anything merges them.
	wal bool
}

// markChecked records that the file at path passed a full check: it
// touches the -wal beside it (its modification time, not its bytes), so
// the next open does not take the file for one changed since its -wal was
// last emptied. A missing -wal is made by the pool's first connection,
// after the file's last change.
func markChecked(path string) {
	now := time.Now()
	_ = os.Chtimes(path+"-wal", now, now)
}

// readFileHeader returns the first 100 bytes of the file at path, nil for an
// empty file, and ErrCorrupt for a file that is not SQLite.
func readFileHeader(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hdr := make([]byte, 100)
	n, err := io.ReadFull(f, hdr)
	switch {
	case n == 0 && err == io.EOF:
		return nil, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%d bytes is shorter than a SQLite header: %w", n, ErrCorrupt)
	case err != nil:
		return nil, err
	case !bytes.HasPrefix(hdr, header):
		return nil, fmt.Errorf("no SQLite header: %w", ErrCorrupt)
	}
	return hdr, nil
}

// inspectTx decides, in one read transaction on db, whether the file (whose
// first bytes are hdr) is for this build, and checks the structure of one of
// ours (cheapCheck).
func inspectTx(ctx context.Context, db *sql.DB, path string, hdr []byte, spec Spec, checks inspection) (fileHeader, error) {
	// One read transaction, so the answers describe one state of the file.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fileHeader{}, classify(err)
	}
	defer tx.Rollback()
	h, err := readHeader(ctx, tx)
	if err != nil {
		return h, err
	}
	if h.appID == spec.ApplicationID && checks.wal {
		if err := walBelongs(ctx, tx, path); err != nil {
			return h, err
		}
	}
	// Our own files get a structural check whose cost does not grow with the
	// file (PRAGMA quick_check reads every page: seconds at 100,000 tasks).
	// cheapCheck finds a truncated file and a damaged root page; when the
	// WAL holds pages the file does not have yet, it cannot tell a short
	// file from a growing one and quick_check decides.
	if h.appID == spec.ApplicationID {
		full, err := cheapCheck(ctx, tx, path, hdr, &h)
		if err != nil {
			return h, err
		}
		if full || checks.full {
			if err := quickCheck(ctx, tx); err != nil {
				return h, err
			}
		}
		if h.paired && !h.idRead {
			if err := readDataDirID(ctx, tx, &h); err != nil {
				return h, err
			}
		}
	}
	return h, h.check(spec)
}

// cheapCheck checks an existing file of ours in time independent of its
// size: the page count the header records (when valid) must fit in the
// file, and the root page of every table must read (with cell_size_check
// on, SQLite validates a page's cell pointers when it loads it). full is
// true when the file is shorter than its header says while the WAL is not
// empty: the missing pages may be in the WAL (a checkpoint killed half way
// writes page 1 first), so only a full check can decide.
func cheapCheck(ctx context.Context, tx *sql.Tx, path string, hdr []byte, h *fileHeader) (full bool, err error) {
	pageSize := int64(binary.BigEndian.Uint16(hdr[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	changes, validFor := binary.BigEndian.Uint32(hdr[24:28]), binary.BigEndian.Uint32(hdr[92:96])
	pages := int64(binary.BigEndian.Uint32(hdr[28:32]))
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return false, fmt.Errorf("page size %d in the header: %w", pageSize, ErrCorrupt)
	}
	if changes == validFor && pages > 0 && fi.Size() < pages*pageSize {
		if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
			return true, nil
		}
		return false, fmt.Errorf("%d bytes, the header records %d pages of %d bytes: %w", fi.Size(), pages, pageSize, ErrCorrupt)
	}
	if _, err := tx.ExecContext(ctx, `PRAGMA cell_size_check = ON`); err != nil {
		return false, classify(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, wr FROM pragma_table_list WHERE schema = 'main' AND type = 'table'`)
	if err != nil {
		return false, classify(err)
	}
	// One statement reads, for every table, the first row and (of a rowid
	// table) the last: the root page and both edges of the tree, a few
	// pages whatever the table's size. NOT INDEXED keeps SQLite from
	// answering from a smaller index instead of the table.
	// The data dir identity, first, when the file has DataDirTable: the
	// one row of that table is its whole tree.
	reads := []string{`NULL`}
	for rows.Next() {
		var name string
		var withoutRowid bool
		if err := rows.Scan(&name, &withoutRowid); err != nil {
			rows.Close()
			return false, classify(err)
		}
		if name == DataDirTable {
			reads[0] = `(SELECT id FROM ` + DataDirTable + ` WHERE one = 1)`
			continue
		}
		from := `FROM "` + strings.ReplaceAll(name, `"`, `""`) + `" NOT INDEXED`
		reads = append(reads, `(SELECT 1 `+from+` LIMIT 1)`)
		if !withoutRowid {
			reads = append(reads, `(SELECT 1 `+from+` ORDER BY rowid DESC LIMIT 1)`)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, classify(err)
	}
	return false, readEdges(ctx, tx, reads, h)
}

// readEdges runs cheapCheck's one statement of reads and keeps the data dir
// identity it reads first in h.
func readEdges(ctx context.Context, tx *sql.Tx, reads []string, h *fileHeader) error {
	r, err := tx.QueryContext(ctx, `SELECT `+strings.Join(reads, ", "))
	if err != nil {
		return classify(err)
	}
	defer r.Close()
	dest := make([]any, len(reads))
	var id sql.NullString
	dest[0] = &id
	for i := 1; i < len(dest); i++ {
		dest[i] = new(any)
	}
	for r.Next() {
		if err := r.Scan(dest...); err != nil {
			return classify(err)
		}
	}
	if err := r.Err(); err != nil {
		return classify(err)
	}
	if h.paired {
		h.dataDirID, h.idRead = id.String, true
	}
	return nil
}

// fileHeader is what decides whether a file is ours and how old it is, and
// the data dir identity it carries.
type fileHeader struct {
	appID, version, objects int64
	paired                  bool   // it has DataDirTable
	dataDirID               string // read by readDataDirID or cheapCheck
	idRead                  bool   // dataDirID was read
}

// current reports whether h is a file of spec's application at its newest
// schema version.
func (h fileHeader) current(spec Spec) bool {
	return h.appID == spec.ApplicationID && h.version == spec.Migrations[len(spec.Migrations)-1].Version
}

func readHeader(ctx context.Context, tx *sql.Tx) (fileHeader, error) {
	var h fileHeader
	// Counting sqlite_schema reads page 1 and the schema pages, which is
	// where SQLite notices a file that is not a database. One statement:
	// every command opens two files, and each statement is compiled anew.
	err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM sqlite_schema),
		(SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version),
		(SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '`+DataDirTable+`')`).
		Scan(&h.objects, &h.appID, &h.version, &h.paired)
	if err != nil {
		return h, classify(err)
	}
	return h, nil
}

// readHeaderPaired is readHeader with the data dir identity, in one
// statement, for a file that has DataDirTable (every current file of
// ours, so the one every open meets); a file without the table fails to
// compile it, and readHeader and readDataDirID read it instead.
func readHeaderPaired(ctx context.Context, tx *sql.Tx) (fileHeader, error) {
	var (
		h  fileHeader
		id sql.NullString
	)
	err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM sqlite_schema),
		(SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version),
		(SELECT id FROM `+DataDirTable+` WHERE one = 1)`).Scan(&h.objects, &h.appID, &h.version, &id)
	if err != nil {
		h, err := readHeader(ctx, tx)
		if err != nil {
			return h, err
		}
		return h, readDataDirID(ctx, tx, &h)
	}
	h.paired, h.dataDirID, h.idRead = true, id.String, true
	return h, nil
}

// readDataDirID reads the file's data dir identity into h when it has the
// table ("" when it has no row yet).
func readDataDirID(ctx context.Context, tx *sql.Tx, h *fileHeader) error {
	if !h.paired {
		return nil
	}
	err := tx.QueryRowContext(ctx, `SELECT id FROM `+DataDirTable+` WHERE one = 1`).Scan(&h.dataDirID)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	h.idRead = err == nil
	return classify(err)
}

// check decides from the header whether this build may use the file, and
// whether it is the partner spec.DataDirID names (CheckPair). A SQLite file
// with no schema and no ids (e.g. one that only had its page size set)
// counts as new.
func (h fileHeader) check(spec Spec) error {
	newest := spec.Migrations[len(spec.Migrations)-1].Version
	switch {
	case h.appID == spec.ApplicationID && h.version > newest:
		return fmt.Errorf("schema version %d, this build knows up to %d: %w", h.version, newest, ErrNewerSchema)
	case h.appID == spec.ApplicationID:
		return CheckPair(h.dataDirID, spec.DataDirID)
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
		// One row may hold several findings, one a line, after a
		// "*** in database main ***" heading.
		for _, p := range strings.Split(line, "\n") {
			if p = strings.TrimSpace(p); p != "ok" && p != "" && !strings.HasPrefix(p, "*** in database") {
				problems = append(problems, p)
			}
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
func migrate(ctx context.Context, db *sql.DB, path string, spec Spec) error {
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
		done, err := migrateStep(ctx, db, path, spec)
		if err != nil || done {
			return err
		}
	}
}

func migrateStep(ctx context.Context, db *sql.DB, path string, spec Spec) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
	if err != nil {
		return false, classify(err)
	}
	defer tx.Rollback()

	h, err := readHeaderPaired(ctx, tx)
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
	if err := fillDataDirID(ctx, tx, path, spec); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: data dir identity: %w", target, err)
	}
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

// Sync makes every earlier commit on db durable against power loss. At
// synchronous=FULL (level) each commit already is, and Sync does nothing.
// At NORMAL it commits one small write transaction at FULL on one
// connection: that fsyncs the WAL file, which holds every earlier commit's
// frames too (or they were checkpointed into the database file, which
// NORMAL fsyncs when it checkpoints).
func Sync(ctx context.Context, db *sql.DB, level string) error {
	if strings.EqualFold(level, "FULL") {
		return nil
	}
	return DurableTx(ctx, db, level, func(tx *sql.Tx) error {
		// Rewriting user_version with its own value dirties page 1, so the
		// commit appends a WAL frame and, at FULL, fsyncs the WAL; a commit
		// that changed nothing would write nothing and sync nothing.
		var version int64
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version))
		return err
	})
}

// SyncByCheckpoint makes every earlier commit on db durable against power
// loss the way the close of a file's last connection would, for a process
// that writes the file no more before it closes it: a passive checkpoint
// fsyncs the WAL before it copies the WAL's frames into the database file
// and fsyncs that file after, so once it copied every frame the close
// finds nothing left to sync. A checkpoint that could not copy every frame
// (another process reads an older snapshot; the file is not in WAL mode)
// is followed by Sync. At synchronous=FULL every commit already is
// durable. The commit it makes durable is counted in sqlstore.Syncs.
func SyncByCheckpoint(ctx context.Context, db *sql.DB, level string) error {
	if strings.EqualFold(level, "FULL") {
		return nil
	}
	var busy, frames, copied int
	if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		return classify(err)
	}
	if busy != 0 || frames < 0 || copied != frames {
		return Sync(ctx, db, level)
	}
	sqlstore.CountSync()
	return nil
}

// DurableTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it
// durably against power loss, together with every commit before it: at
// level NORMAL on a connection switched to synchronous=FULL for it. An error
// from fn rolls back; sqlstore.ErrNothingWritten rolls back and is
// success (sqlstore.CommitDurable, which counts the commit). Use it for a commit another file will refer to (a
// draft, an application that a checkpoint records), so that no power loss
// can keep the reference and lose what it names.
func DurableTx(ctx context.Context, db *sql.DB, level string, fn func(tx *sql.Tx) error) error {
	var (
		tx  *sql.Tx
		err error
	)
	if strings.EqualFold(level, "FULL") {
		tx, err = db.BeginTx(ctx, nil)
	} else {
		conn, cerr := db.Conn(ctx)
		if cerr != nil {
			return cerr
		}
		defer func() {
			// The connection goes back to the pool: it must not stay at
			// FULL silently, nor at an unknown level. If the reset fails,
			// drop it.
			if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = `+strings.ToUpper(level)); rerr != nil {
				conn.Raw(func(any) error { return driver.ErrBadConn })
			}
			conn.Close()
		}()
		if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = FULL`); err != nil {
			return err
		}
		tx, err = conn.BeginTx(ctx, nil)
	}
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return sqlstore.CommitDurable(tx, fn)
}

// IsBusy reports whether err is SQLITE_BUSY (any extended code): a write
// lock another connection held past the busy timeout.
func IsBusy(err error) bool {
	var se *modernc.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// BusyCause returns SQLite's own busy error in err's chain (IsBusy), or
// nil: the driver's words, which a message in the words of the domain
// leaves out.
func BusyCause(err error) error {
	var se *modernc.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY {
		return se
	}
	return nil
}

// IsUniqueViolation reports a PRIMARY KEY or UNIQUE constraint failure.
func IsUniqueViolation(err error) bool {
	var se *modernc.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// classify marks SQLite's "corrupt" and "not a database" errors as
// ErrCorrupt and its "read-only" and "cannot open" errors as ErrReadOnly;
// any other error (busy, I/O, cancelled) stays as it is.
func classify(err error) error {
	var se *modernc.Error
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

// Inspect refuses the file at path as Open would refuse it, without
// making, migrating or writing anything: a caller that is about to make
// another file beside it (the other file of a data dir) calls it first,
// so that a refusal comes before any write. A missing or empty file
// passes (Open makes or fills it). Errors: ErrCorrupt, ErrForeignFile,
// ErrNewerSchema, ErrReadOnly, ErrForeignWAL, wrapped with what was found
// as Open wraps them; file errors.
func Inspect(ctx context.Context, path string, spec Spec) error {
	o, err := optionsOf(path, spec)
	if err != nil {
		return err
	}
	if st, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() == 0) {
		return nil
	}
	if err := writable(path); err != nil {
		return err
	}
	if o.hdr, err = readFileHeader(path); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	o.inWAL = o.hdr != nil && o.hdr[18] == 2 && o.hdr[19] == 2
	left := fileLeftState(path)
	if err := o.refuseByHeader(left); err != nil {
		return err
	}
	if err := o.planChecks(left); err != nil {
		return err
	}
	if o.viaPool {
		return nil // a clean file in WAL mode: Open inspects it through its pool
	}
	if _, err := inspect(ctx, o.path, o.busyMS, o.hdr, o.spec, o.checks); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	return nil
}
