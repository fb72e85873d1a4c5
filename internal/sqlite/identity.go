package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"assistant/internal/sqlstore"
)

// DataDirTable is the table that pairs the files of one data dir: every
// file carries the dir's identity (a UUID) in its one row, written when the
// file is made or migrated to the schema that adds the table. Each store's
// migration creates it, the same way:
//
//	CREATE TABLE data_dir (
//	    one   INTEGER PRIMARY KEY CHECK (one = 1),
//	    id    TEXT    NOT NULL CHECK (length(id) = 36),
//	    stamp INTEGER NOT NULL DEFAULT 0
//	) STRICT;
//
// The migration runner fills the row (Spec.DataDirID). stamp is raised by
// the first write transaction of every pool (guard.go), so that every WAL a
// process writes carries the identity of the file it was written for.
const DataDirTable = "data_dir"

// ErrPairMismatch: the file carries another data dir's identity than the
// other file of its data dir. It is refused before anything is written.
var ErrPairMismatch = errors.New("the two files of the data dir belong to different data dirs")

// PairError is a file whose data dir identity (Have) is not the one its
// data dir's other file carries (Want). It matches ErrPairMismatch.
type PairError struct {
	Have, Want string
}

// Error implements the error interface for *PairError: both ids (what to
// do is the application layer's hint).
func (e *PairError) Error() string {
	return fmt.Sprintf("this file belongs to data dir %s, the other file of the data dir to %s: %v (the file is left unchanged)",
		e.Have, e.Want, ErrPairMismatch)
}

// Unwrap returns ErrPairMismatch.
func (e *PairError) Unwrap() error { return ErrPairMismatch }

// DataDirID returns the data dir identity the file open on q carries: ""
// when the file has no DataDirTable (a schema older than the pairing) or
// no row in it yet. On a pool Open made, it returns the identity Open read
// (it never changes once written), without a query.
func DataDirID(ctx context.Context, q sqlstore.Querier) (string, error) {
	if db, ok := q.(*sql.DB); ok {
		if id, ok := openedDataDirID(ctx, db); ok {
			return id, nil
		}
	}
	id, _, err := dataDirRow(ctx, q)
	return id, err
}

// openedDataDirID returns the identity Open recorded for the pool db, if it
// is one of this package's.
func openedDataDirID(ctx context.Context, db *sql.DB) (id string, ok bool) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", false
	}
	defer conn.Close()
	_ = conn.Raw(func(dc any) error {
		if gc, is := dc.(*guardConn); is {
			id, ok = gc.g.dataDirID()
		}
		return nil
	})
	return id, ok
}

// dataDirRow returns the identity and the stamp of the file open on q
// ("" and 0 without DataDirTable or its row).
func dataDirRow(ctx context.Context, q sqlstore.Querier) (id string, stamp int64, err error) {
	var n int
	if err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '`+DataDirTable+`'`).Scan(&n); err != nil {
		return "", 0, classify(err)
	}
	if n == 0 {
		return "", 0, nil
	}
	err = q.QueryRowContext(ctx, `SELECT id, stamp FROM `+DataDirTable+` WHERE one = 1`).Scan(&id, &stamp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, classify(err)
	}
	return id, stamp, nil
}

// PeekDataDirID reads the data dir identity of the SQLite file at path on
// a read-only connection, changing nothing: "" for a missing or empty file,
// or one without an identity. Errors: reading the file.
func PeekDataDirID(ctx context.Context, path string) (string, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() == 0) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	db, err := sql.Open("sqlite", DSN(path, "mode=ro", "_pragma=busy_timeout(5000)"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return DataDirID(ctx, db)
}

// CheckPair refuses a file (or a PostgreSQL schema) whose identity
// (have) is not want ("": any) with a *PairError. One without an identity
// yet passes: it gets want when it is made or migrated.
func CheckPair(have, want string) error {
	if want != "" && have != "" && have != want {
		return &PairError{Have: have, Want: want}
	}
	return nil
}

// fillDataDirID writes the data dir identity into a file whose migration
// transaction tx has just made its DataDirTable: spec.DataDirID when set,
// else the identity another SQLite file of the same directory carries
// (the data dir's other file, made or migrated first), else a new UUID.
// A file that has no such table, or a row already, is left as it is.
func fillDataDirID(ctx context.Context, tx *sql.Tx, path string, spec Spec) error {
	var tables, rows int
	if err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '`+DataDirTable+`'`).Scan(&tables); err != nil {
		return err
	}
	if tables == 0 {
		return nil
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+DataDirTable).Scan(&rows); err != nil || rows > 0 {
		return err
	}
	id := spec.DataDirID
	if id == "" {
		id = siblingDataDirID(ctx, path)
	}
	if id == "" {
		id = uuid.NewString()
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO `+DataDirTable+` (one, id) VALUES (1, ?)`, id)
	return err
}

// siblingDataDirID returns the identity the other *.sqlite files beside
// path carry, when they agree on one; "" otherwise. It is how the file of
// a data dir made or migrated second adopts the identity of the first,
// also when two processes do it at once: each migration runs under its
// file's write lock, and the first file's identity is committed before
// the second file is opened.
func siblingDataDirID(ctx context.Context, path string) string {
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.sqlite"))
	found := ""
	for _, o := range others {
		if same, _ := sameFile(o, path); same {
			continue
		}
		id, err := PeekDataDirID(ctx, o)
		if err != nil || id == "" {
			continue
		}
		if found != "" && found != id {
			return ""
		}
		found = id
	}
	return found
}

// sameFile reports whether paths a and b name the same file.
func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

// ErrForeignWAL: the -wal file beside a database holds frames that were not
// written for it (copied from another data dir, or older than the file).
// SQLite would merge them into the file for good; Open refuses instead.
var ErrForeignWAL = errors.New("its -wal file holds frames that were not written for it (nothing was merged; the files are left unchanged)")

// walBelongs checks, before anything merges them, that the frames of the
// -wal beside the database at path were written for it. Read through the
// -wal (tx: a read-only connection, which merges nothing) the file must
// carry the identity it carries alone (read with immutable=1, which
// ignores the -wal), and a stamp no lower. The first write of every pool
// raises the stamp (guard), so the frames of a -wal a process of ours
// wrote hold the page of DataDirTable with its file's identity. A file of
// a schema without the identity is not checked, nor is a file that does
// not read alone (a checkpoint cut off part-way). Errors: ErrForeignWAL,
// reading the files.
func walBelongs(ctx context.Context, tx *sql.Tx, path string) error {
	alone, err := sql.Open("sqlite", DSN(path, "mode=ro", "immutable=1"))
	if err != nil {
		return err
	}
	defer alone.Close()
	fileID, fileStamp, err := dataDirRow(ctx, alone)
	if errors.Is(err, ErrCorrupt) {
		// The file alone is no state of the database: a checkpoint (which
		// copies the -wal's pages into the file) was cut off part-way, so
		// only the file read through its -wal is whole. There is no
		// identity of its own to compare; the full check through the
		// -wal that every file left with frames gets decides.
		return nil
	}
	if err != nil || fileID == "" {
		return err
	}
	walID, walStamp, err := dataDirRow(ctx, tx)
	if err != nil {
		return err
	}
	wal := filepath.Base(path) + "-wal"
	switch {
	case walID != fileID:
		if walID == "" {
			walID = "none"
		}
		return fmt.Errorf("%s carries data dir %s, the file data dir %s: %w", wal, walID, fileID, ErrForeignWAL)
	case walStamp < fileStamp:
		return fmt.Errorf("%s is older than the file (stamp %d, the file's %d): %w", wal, walStamp, fileStamp, ErrForeignWAL)
	}
	return nil
}
