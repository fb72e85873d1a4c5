package checkpoints

import (
	"context"
	"fmt"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

// OpenSQLiteReadOnly opens the checkpoint file at path for reading only,
// for `assistant verify` and `assistant backup`, which read a data dir while
// other processes use it: nothing is created, migrated or written, and
// closing the store merges nothing into the file. Only its reads (Get,
// List, Threads, DataDirID) may be used. Errors are wrapped as "open
// checkpoints PATH: …": a missing file (fs.ErrNotExist), ErrCorrupt,
// ErrForeignFile, ErrNewerSchema, an older schema.
func OpenSQLiteReadOnly(ctx context.Context, path string) (*SQLite, error) {
	migs, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.OpenReadOnly(ctx, path, sqlite.Spec{ApplicationID: ApplicationID, Migrations: migs})
	if err != nil {
		return nil, fmt.Errorf("open checkpoints %s: %w", path, err)
	}
	return &SQLite{db: db, synchronous: DefaultSynchronous, stmts: sqlstore.NewStmts(db)}, nil
}

// CheckFile checks the checkpoint file at path without changing it: its
// header, its -wal, PRAGMA integrity_check, and the data dir identity it
// carries (sqlite.CheckFile).
func CheckFile(ctx context.Context, path string) (sqlite.FileCheck, error) {
	migs, err := loadMigrations()
	if err != nil {
		return sqlite.FileCheck{}, err
	}
	return sqlite.CheckFile(ctx, path, sqlite.Spec{ApplicationID: ApplicationID, Migrations: migs})
}

// Threads returns the id of every thread the store holds, in id order.
func (s *SQLite) Threads(ctx context.Context) ([]string, error) {
	rows, err := s.stmts.QueryContext(ctx, `SELECT thread_id FROM threads ORDER BY thread_id`)
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list threads: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	return ids, nil
}

// TakeSnapshot holds the checkpoint file at path at this moment, for a
// backup (sqlite.TakeSnapshot): a read transaction on a read-only
// connection, from which CopyTo writes a copy while other processes write
// on. Errors are wrapped as "snapshot checkpoints PATH: …".
func TakeSnapshot(ctx context.Context, path string) (*sqlite.Snapshot, error) {
	migs, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	s, err := sqlite.TakeSnapshot(ctx, path, sqlite.Spec{ApplicationID: ApplicationID, Migrations: migs})
	if err != nil {
		return nil, fmt.Errorf("snapshot checkpoints %s: %w", path, err)
	}
	return s, nil
}
