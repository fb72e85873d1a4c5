package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"

	modernc "modernc.org/sqlite"
)

// OpenReadOnly opens the file at path for reading only, as the verify
// and backup operations read a data dir while other processes
// use it: nothing is created, migrated, switched to WAL or written, and
// closing the pool merges no -wal into the file (a read-only connection
// never checkpoints). The file must be spec's (its application id) and of
// its newest schema, so the stores' queries fit it, and a -wal with frames
// that nobody has open must have been written for it (walBelongs).
// Errors: fs.ErrNotExist for a missing file, ErrCorrupt, ErrForeignFile,
// ErrNewerSchema, ErrOlderSchema, ErrForeignWAL.
func OpenReadOnly(ctx context.Context, path string, spec Spec) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	hdr, err := readFileHeader(path)
	if err != nil {
		return nil, err
	}
	if hdr == nil {
		return nil, fmt.Errorf("empty file: %w", ErrCorrupt)
	}
	left := fileLeftState(path)
	if err := refusedUnread(hdr, left, spec, path); err != nil {
		return nil, err
	}
	connector, err := openConnector(path, "mode=ro", "_pragma=busy_timeout("+strconv.FormatInt(DefaultBusyTimeout.Milliseconds(), 10)+")")
	if err != nil {
		return nil, err
	}
	g := &guard{path: path}
	db := sql.OpenDB(guardConnector{connector, g})
	h, err := fileHeaderOf(ctx, db)
	if err == nil {
		err = h.check(spec)
	}
	if err == nil && left.walFrames && !left.inUse {
		err = walBelongsIn(ctx, db, path)
	}
	if err == nil && !h.current(spec) {
		err = fmt.Errorf("schema version %d, this build writes %d: %w", h.version, spec.Migrations[len(spec.Migrations)-1].Version, ErrOlderSchema)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	g.setDataDirID(h.dataDirID)
	return db, nil
}

// refusedUnread is the refusal of the file at path (hdr its first 100
// bytes, left how it was left) that the read-only openings make before
// SQLite reads it, so that nothing is made beside it and no -wal is read
// through: its header's (headerRefusal), or a backup copy put back beside
// the -wal of the file it replaced (walOfReplacedFile).
func refusedUnread(hdr []byte, left leftState, spec Spec, path string) error {
	if err := headerRefusal(hdr, left, spec); err != nil {
		return err
	}
	return walOfReplacedFile(hdr, left, spec, path)
}

// walBelongsIn is walBelongs in a read transaction of db, a read-only
// pool over the file at path.
func walBelongsIn(ctx context.Context, db *sql.DB, path string) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback()
	return walBelongs(ctx, tx, path)
}

// fileHeaderOf reads the header fields and the data dir identity in one
// read transaction of db.
func fileHeaderOf(ctx context.Context, db *sql.DB) (fileHeader, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fileHeader{}, classify(err)
	}
	defer tx.Rollback()
	return readHeaderPaired(ctx, tx)
}

// FileCheck is what CheckFile found in one file, read-only.
type FileCheck struct {
	// Exists: the file is there and not empty.
	Exists bool
	// Version is its schema version (PRAGMA user_version); 0 when unread.
	Version int64
	// DataDirID is the data dir identity it carries ("" when none).
	DataDirID string
	// Problems say why the file must not be used: not SQLite, another
	// program's, a newer schema, a -wal that does not belong to it, every
	// finding of PRAGMA integrity_check. Empty for a sound file.
	Problems []string
	// Older is set when the file is of an older schema: sound, but the
	// next command of this build migrates it, and its rows are not read
	// for the cross-file checks.
	Older bool
}

// Usable reports whether the file can be read for the cross-file checks:
// it exists, is sound and of the newest schema.
func (c FileCheck) Usable() bool { return c.Exists && len(c.Problems) == 0 && !c.Older }

// CheckFile checks the file at path, spec's, without changing it: its
// header, that a -wal with frames beside it (nobody having it open) was
// written for it, and PRAGMA integrity_check (every page, every index
// against its table: it reads the whole file). Errors are failures to
// read that say nothing about the file's soundness (an I/O error, a
// cancelled context); what is wrong with the file is in Problems.
func CheckFile(ctx context.Context, path string, spec Spec) (FileCheck, error) {
	var c FileCheck
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return c, nil
	}
	c.Exists = true
	hdr, err := readFileHeader(path)
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c, nil
	}
	left := fileLeftState(path)
	if err := refusedUnread(hdr, left, spec, path); err != nil {
		c.Version = int64(binary.BigEndian.Uint32(hdr[60:64]))
		c.Problems = append(c.Problems, err.Error())
		return c, nil
	}
	db, err := sql.Open("sqlite", DSN(path, "mode=ro", "_pragma=busy_timeout(5000)"))
	if err != nil {
		return c, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return c, err
	}
	defer tx.Rollback()
	h, err := readHeader(ctx, tx)
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c, nil
	}
	c.Version = h.version
	if err := h.check(spec); err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c, nil
	}
	c.Older = !h.current(spec)
	// left as read before this connection opened the file: its own
	// -shm lock would read as another process's.
	if left.walFrames && !left.inUse {
		if err := walBelongs(ctx, tx, path); err != nil {
			c.Problems = append(c.Problems, err.Error())
			return c, nil
		}
	}
	if c.DataDirID, err = DataDirID(ctx, tx); err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c, nil
	}
	found, err := integrityCheck(ctx, tx)
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
	}
	c.Problems = append(c.Problems, found...)
	return c, nil
}

// integrityCheck runs PRAGMA integrity_check(20) in tx and returns its
// findings (none for a sound file).
func integrityCheck(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `PRAGMA integrity_check(20)`)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return found, classify(err)
		}
		for _, p := range strings.Split(line, "\n") {
			if p = strings.TrimSpace(p); p != "ok" && p != "" && !strings.HasPrefix(p, "*** in database") {
				found = append(found, "integrity_check: "+p)
			}
		}
	}
	return found, classify(rows.Err())
}

// openConnector makes the driver's connector for the file at path with the
// given URI parameters.
func openConnector(path string, params ...string) (driver.Connector, error) {
	return modernc.NewConnector(DSN(path, params...))
}
