package business

import (
	"context"
	"fmt"
	"time"

	"assistant/internal/sqlite"
)

// FileCheck is what CheckFile found in a business file
// (sqlite.FileCheck).
type FileCheck = sqlite.FileCheck

// OpenReadOnly opens the business file at path for reading only, for
// `assistant verify` and `assistant backup`, which read a data dir while
// other processes use it: nothing is created, migrated or written, and
// closing the store merges nothing into the file. Only its reads may be
// used (and those of runs.New over its Handle). Errors are wrapped as
// "open business PATH: …": a missing file (fs.ErrNotExist), ErrCorrupt,
// ErrForeignFile, ErrNewerSchema, an older schema.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	db, err := sqlite.OpenReadOnly(ctx, path, sqlite.Spec{ApplicationID: ApplicationID, Migrations: migrations()})
	if err != nil {
		return nil, fmt.Errorf("open business %s: %w", path, err)
	}
	return newStore(sqlite.NewHandle(db, path, ""), time.Now), nil
}

// CheckFile checks the business file at path without changing it: its
// header, its -wal, PRAGMA integrity_check, and the data dir identity it
// carries (sqlite.CheckFile).
func CheckFile(ctx context.Context, path string) (FileCheck, error) {
	return sqlite.CheckFile(ctx, path, sqlite.Spec{ApplicationID: ApplicationID, Migrations: migrations()})
}

// ApplicationProblem is an application that breaks a rule of the desk:
// its draft is missing, or is another user's or another order's.
type ApplicationProblem struct {
	Application Application
	Problem     string
}

// CheckApplications returns every application whose draft is missing, or
// belongs to another user or order (none on a sound file: foreign keys and
// SubmitTx keep them). It reads the whole applications table.
func (s *Store) CheckApplications(ctx context.Context) ([]ApplicationProblem, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.q.checkApplications)
	if err != nil {
		return nil, fmt.Errorf("check applications: %w", err)
	}
	defer rows.Close()
	var out []ApplicationProblem
	for rows.Next() {
		var (
			p       ApplicationProblem
			created string
		)
		a := &p.Application
		if err := rows.Scan(&a.ID, &a.DraftID, &a.OrderID, &a.User, &a.ReviewStatus, &created, &p.Problem); err != nil {
			return nil, fmt.Errorf("check applications: %w", err)
		}
		if a.CreatedAt, err = parseTime(created); err != nil {
			return nil, fmt.Errorf("check applications: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check applications: %w", err)
	}
	return out, nil
}

// TakeSnapshot holds the business file at path at this moment, for a
// backup (sqlite.TakeSnapshot): a read transaction on a read-only
// connection, from which CopyTo writes a copy while other processes write
// on. Errors are wrapped as "snapshot business PATH: …".
func TakeSnapshot(ctx context.Context, path string) (*sqlite.Snapshot, error) {
	s, err := sqlite.TakeSnapshot(ctx, path, sqlite.Spec{ApplicationID: ApplicationID, Migrations: migrations()})
	if err != nil {
		return nil, fmt.Errorf("snapshot business %s: %w", path, err)
	}
	return s, nil
}

// Inspect refuses the business file at path as Open would, without
// changing anything (sqlite.Inspect): a missing or empty file passes.
// Errors are wrapped as "open business PATH: …": ErrCorrupt,
// ErrForeignFile, ErrNewerSchema, ErrReadOnly, ErrForeignWAL.
func Inspect(ctx context.Context, path string) error {
	if err := sqlite.Inspect(ctx, path, sqlite.Spec{ApplicationID: ApplicationID, Migrations: migrations()}); err != nil {
		return fmt.Errorf("open business %s: %w", path, err)
	}
	return nil
}
