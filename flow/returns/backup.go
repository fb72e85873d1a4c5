package returns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"assistant/business"
)

// BackupSchemaVersion is the schema_version of the JSON of a BackupResult
// (docs/storage.md "Backup").
const BackupSchemaVersion = 1

// Snapshot is one file of the data dir held at one moment, to be copied
// (sqlite.Snapshot, from a store package's TakeSnapshot).
type Snapshot interface {
	// CopyTo writes the file as it was at the snapshot's moment into a new
	// file at path.
	CopyTo(ctx context.Context, path string) error
	// Close lets go of the snapshot.
	Close() error
}

// BackupOptions are the input of Backup.
type BackupOptions struct {
	// DataDir is the data dir to copy.
	DataDir string
	// Dir is where the copy goes: a new directory, or an empty one. It
	// becomes a data dir of its own (checkpoints.sqlite, business.sqlite).
	Dir string
	// TakeCheckpoints holds DataDir's checkpoints.sqlite at the moment it
	// is called (checkpoints.TakeSnapshot): the caller knows the store
	// package. Backup calls it before it holds business.sqlite.
	TakeCheckpoints func(ctx context.Context) (Snapshot, error)
}

// BackedUpFile is one file of a backup.
type BackedUpFile struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
}

// BackupResult is what Backup did: the files copied and the
// verification of the copy (set by the caller, which verifies it).
type BackupResult struct {
	SchemaVersion int            `json:"schema_version"`
	DataDir       string         `json:"data_dir"`
	Dir           string         `json:"dir"`
	Files         []BackedUpFile `json:"files"`
	Verify        *VerifyReport  `json:"verify"`
}

// CheckBackupDir refuses, before anything is read or made, a backup
// directory that is the data dir itself or holds anything: a backup never
// overwrites a file. Errors match ErrInvalid.
func CheckBackupDir(dataDir, dir string) error {
	a, errA := filepath.Abs(dataDir)
	b, errB := filepath.Abs(dir)
	if errA == nil && errB == nil && a == b {
		return fmt.Errorf("%w: the backup directory %s is the data dir itself; name a new directory", ErrInvalid, dir)
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%w: backup directory %s: %v", ErrInvalid, dir, err)
	case len(entries) > 0:
		return fmt.Errorf("%w: backup directory %s is not empty; name a new directory (a backup never overwrites a file)", ErrInvalid, dir)
	}
	return nil
}

// Backup copies the data dir's two files into o.Dir while other processes
// go on using them. The files are held at two moments as close together as
// two reads, checkpoints.sqlite first: a business row that a checkpoint
// names is committed before that checkpoint, so the business file held
// after it holds every row its checkpoints name, and the pair verifies
// clean. The business file may be a little ahead (a task's record, a draft
// or an application made in between), which the flow reads as it reads a
// business file after a power loss. Each copy is one self-contained file
// (rollback journal, no -wal), mode 0600, in a directory of mode 0700.
// Errors: ErrInvalid (o.Dir, CheckBackupDir), ErrNotFound (no data dir),
// reading and writing; nothing is left in o.Dir after an error.
func Backup(ctx context.Context, o BackupOptions) (*BackupResult, error) {
	if err := CheckBackupDir(o.DataDir, o.Dir); err != nil {
		return nil, err
	}
	if err := PrepareDataDir(o.DataDir, OpenExisting); err != nil {
		return nil, err
	}
	for _, f := range []string{CheckpointsFile, BusinessFile} {
		if empty, err := missingOrEmpty(filepath.Join(o.DataDir, f)); err != nil {
			return nil, err
		} else if empty {
			return nil, fmt.Errorf("%s is missing or empty: %w (nothing to back up)", filepath.Join(o.DataDir, f), ErrNotFound)
		}
	}
	cps, err := o.TakeCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	defer cps.Close()
	desk, err := business.TakeSnapshot(ctx, filepath.Join(o.DataDir, BusinessFile))
	if err != nil {
		return nil, err
	}
	defer desk.Close()
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("backup directory %s: %w", o.Dir, err)
	}
	res := &BackupResult{SchemaVersion: BackupSchemaVersion, DataDir: o.DataDir, Dir: o.Dir}
	for _, c := range []struct {
		name string
		snap Snapshot
	}{{CheckpointsFile, cps}, {BusinessFile, desk}} {
		path := filepath.Join(o.Dir, c.name)
		if err := c.snap.CopyTo(ctx, path); err != nil {
			os.Remove(filepath.Join(o.Dir, CheckpointsFile))
			return nil, err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		res.Files = append(res.Files, BackedUpFile{File: c.name, Bytes: fi.Size()})
	}
	return res, nil
}
