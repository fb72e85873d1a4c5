package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	modernc "modernc.org/sqlite"
)

// Snapshot is one file held at one moment: a read transaction open on a
// read-only connection. CopyTo writes a copy of exactly that moment with
// SQLite's online backup, while other processes go on writing the file;
// they never wait for it (WAL readers block no writer). A data dir's files
// are snapshot one after the other, in the order that makes the copies
// agree, and only then copied, so the moments lie as close together as two
// reads.
type Snapshot struct {
	db   *sql.DB
	conn *sql.Conn
	path string
}

// TakeSnapshot opens the file at path read-only (OpenReadOnly: spec's,
// current) and begins the read transaction that fixes the moment CopyTo
// copies. The caller closes the Snapshot. Errors: OpenReadOnly's, reading.
func TakeSnapshot(ctx context.Context, path string, spec Spec) (*Snapshot, error) {
	db, err := OpenReadOnly(ctx, path, spec)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{db: db, path: path}
	if s.conn, err = db.Conn(ctx); err != nil {
		db.Close()
		return nil, err
	}
	// A deferred BEGIN takes no lock; the first read of the transaction
	// fixes the snapshot the backup then reads from (sqlite3_backup_step
	// uses the source connection's open read transaction).
	var n int
	if _, err = s.conn.ExecContext(ctx, `BEGIN`); err == nil {
		err = s.conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("snapshot %s: %w", path, classify(err))
	}
	return s, nil
}

// backuper is the driver connection's online backup (modernc.org/sqlite).
type backuper interface {
	NewBackup(dstURI string) (*modernc.Backup, error)
}

// CopyTo writes the snapshot into a new file at dst (mode 0600; an existing
// file is an error wrapping fs.ErrExist), page by page with SQLite's online
// backup, then switches the copy to the rollback journal, so it is one
// self-contained file: copying it anywhere copies all of it. The copy keeps
// the file's owner, schema version and data dir identity. A copy that
// fails is removed.
func (s *Snapshot) CopyTo(ctx context.Context, dst string) (err error) {
	f, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(dst)
			os.Remove(dst + "-journal")
		}
	}()
	err = s.conn.Raw(func(dc any) error {
		gc, ok := dc.(*guardConn)
		if !ok {
			return errors.New("snapshot: not a connection of this package")
		}
		b, ok := gc.Conn.(backuper)
		if !ok {
			return errors.New("snapshot: the driver has no online backup")
		}
		bk, err := b.NewBackup(DSN(dst))
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(-1)
			if err != nil {
				bk.Finish()
				return err
			}
			if !more {
				return bk.Finish()
			}
		}
	})
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", s.path, dst, classify(err))
	}
	return rollbackJournal(ctx, dst)
}

// rollbackJournal switches the file at path from WAL to the rollback
// journal (a header byte), leaving no -wal or -shm beside it. Open switches
// it back to WAL when the file is restored into a data dir.
func rollbackJournal(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", DSN(path, "_pragma=busy_timeout(5000)"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode); err != nil {
		return fmt.Errorf("copy %s: rollback journal: %w", path, err)
	}
	if mode != "delete" {
		return fmt.Errorf("copy %s: journal mode is %q, want delete", path, mode)
	}
	return db.Close()
}

// Close ends the read transaction and closes the file.
func (s *Snapshot) Close() error {
	if s.conn != nil {
		_, _ = s.conn.ExecContext(context.Background(), `ROLLBACK`)
		s.conn.Close()
	}
	return s.db.Close()
}
