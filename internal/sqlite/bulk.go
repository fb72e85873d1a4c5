package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	modernc "modernc.org/sqlite"

	"assistant/internal/sqlstore"
)

// BulkLoad runs fn in one transaction on the file at path, a store file
// of ours that Open made and closed and that no other connection, of
// this process or another, can reach: one in a directory that has no
// name yet, thrown away whole if this fails (the first import's data dir
// made aside; docs/orders.md "The first import"). It leaves the file as
// a clean close of Open's pool leaves it: in WAL mode, its -wal empty and
// newer than the file, the file synced to disk.
//
// The transaction runs in rollback-journal mode, not in WAL: SQLite then
// writes each page into the file once, where WAL mode writes it into the
// -wal and, at the commit's checkpoint, into the file again (for a
// million orders, 85 MB twice, and about 0.5 s of a 4 to 6 s import
// here). The file is synced once, after the commit, instead of at the
// commit (synchronous=OFF): until the directory is renamed nobody reads
// it, and a crash before the rename leaves only the unnamed directory.
// fn's statements are prepared once each, on the transaction's own
// connection (sqlstore.TxStmts).
//
// Errors: fn's (the transaction rolled back), or the file's; either way
// the caller throws the directory away.
func BulkLoad(ctx context.Context, path string, fn func(q sqlstore.Querier) error) (err error) {
	connector, err := modernc.NewConnector(DSN(path,
		"_txlock=immediate",
		"_pragma=busy_timeout(0)",
		"_pragma=foreign_keys(ON)",
		"_pragma=synchronous(OFF)",
		"_pragma=journal_size_limit(4194304)", // persistentWAL: an empty -wal at close
		"_pragma=cache_size(-128)",
	))
	if err != nil {
		return err
	}
	db := sql.OpenDB(persistentWAL{connector})
	db.SetMaxOpenConns(1) // the file has one connection: no lock waits on itself
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err == nil {
			err = syncFile(path)
		}
		if err == nil {
			// The file was last written by this transaction, which
			// leaves it whole: its -wal, empty, says so, as a clean
			// close's does (leftState.changed), so that the next open
			// does not check every page (seconds for a million orders).
			err = touchWAL(path)
		}
	}()
	if err := journalMode(ctx, db, "delete"); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	q := sqlstore.TxStmts(tx)
	if err := fn(q); err != nil {
		q.CloseStatements()
		_ = tx.Rollback()
		return err
	}
	q.CloseStatements()
	if err := tx.Commit(); err != nil {
		return err
	}
	// Back to WAL, as Open keeps every file: the header says so from
	// now on, and the pool's close leaves the -wal empty.
	return journalMode(ctx, db, "wal")
}

// journalMode sets the journal mode of db's file to mode and checks that
// SQLite took it (it refuses to leave WAL while another connection has
// the file open).
func journalMode(ctx context.Context, db *sql.DB, mode string) error {
	var got string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode = `+mode).Scan(&got); err != nil {
		return fmt.Errorf("journal mode %s: %w", mode, err)
	}
	if !strings.EqualFold(got, mode) {
		return fmt.Errorf("journal mode is %q, want %s: %w", got, mode, errBulkShared)
	}
	return nil
}

// errBulkShared: BulkLoad's file is open elsewhere after all.
var errBulkShared = errors.New("the file is open elsewhere")

// touchWAL makes the -wal beside the file at path, empty, when it is
// missing, and sets its modification time to now (markChecked).
func touchWAL(path string) error {
	f, err := os.OpenFile(path+"-wal", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	markChecked(path)
	return nil
}

// syncFile flushes the file at path to disk.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
