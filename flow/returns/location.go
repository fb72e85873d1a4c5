package returns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"assistant/business"
)

// A Location is where a Service's business store is: a DataDir on this
// machine, or a *ServerStore on a database server.
type Location interface {
	// openDesk opens the business store there, and the check Wait makes
	// that it is still there.
	openDesk(ctx context.Context, now func() time.Time) (*business.Store, func(context.Context, string) error, error)
}

// OpenMode says whether opening a data dir, or the schemas on a database
// server, may make what is missing.
type OpenMode int

const (
	// OpenExisting opens only what exists: a missing data dir, file or
	// schema is ErrNotFound, and nothing is made (a read command).
	OpenExisting OpenMode = iota
	// CreateIfMissing makes what is missing: the data dir (0700), its
	// files, the schemas.
	CreateIfMissing
)

// Creates reports whether m makes what is missing (a store's
// Options.Create).
func (m OpenMode) Creates() bool { return m == CreateIfMissing }

// DataDir is a data dir on this machine: Open opens its business.sqlite.
type DataDir struct {
	// Dir is the data dir's path.
	Dir string
	// Mode says whether Open makes the data dir (0700) and the business
	// file when missing; under OpenExisting a missing one is ErrNotFound.
	Mode OpenMode
	// Seed is the teaching orders CSV loaded when business.sqlite is created.
	Seed []byte
	// ID is the data dir identity the checkpoint store carries: the
	// business file must carry the same (business.Options.DataDirID).
	ID string
}

// ServerStore is a business store on a database server, opened by the
// caller (who knows the store package), and what Wait needs to tell that
// it is gone. Open opens no file; the Service owns the store once Open
// succeeds (Close closes it).
type ServerStore struct {
	// Desk is the business store; runs.New(Desk.Handle(), …) keeps the
	// run bookkeeping in it.
	Desk *business.Store
	// Gone reports, with ErrNotFound, that the store the Service reads is
	// no longer there (its schema dropped): Wait ends on it. nil checks
	// nothing; a lost connection ends Wait with the read's own error.
	Gone func(ctx context.Context) error
}

// openDesk gives the store the caller opened, and the check Wait makes
// that it is still there (Gone).
func (st *ServerStore) openDesk(context.Context, func() time.Time) (*business.Store, func(context.Context, string) error, error) {
	gone := st.Gone
	if gone == nil {
		gone = func(context.Context) error { return nil }
	}
	return st.Desk, func(ctx context.Context, task string) error {
		if err := gone(ctx); err != nil {
			return fmt.Errorf("wait for %s: %w", task, err)
		}
		return nil
	}, nil
}

// openDesk opens business.sqlite in d.Dir (made under CreateIfMissing),
// and the check Wait makes that it is still the file opened.
func (d DataDir) openDesk(ctx context.Context, now func() time.Time) (*business.Store, func(context.Context, string) error, error) {
	if err := PrepareDataDir(d.Dir, d.Mode); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(d.Dir, BusinessFile)
	desk, err := business.Open(ctx, path, business.Options{Create: d.Mode.Creates(), Seed: d.Seed, Now: now, DataDirID: d.ID})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	if err != nil {
		return nil, nil, err
	}
	opened, _ := os.Stat(path) // just opened: the file the store reads (Wait)
	return desk, watchFile(path, opened), nil
}

// PrepareDataDir makes dir (mode 0700) under CreateIfMissing, and reports
// a missing dir as ErrNotFound under OpenExisting, so a read command never
// creates files. A dir that is a file is ErrInvalid.
func PrepareDataDir(dir string, mode OpenMode) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("data dir %s is not a directory: %w", dir, ErrInvalid)
	}
	if mode.Creates() {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create data dir %s: %w", dir, err)
		}
		return nil
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		// A sentence of its own: the kind's words would not read after it.
		return &marked{fmt.Errorf("data dir %s does not exist (no task has been started there)", dir), ErrNotFound}
	}
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("data dir %s is not a directory: %w", dir, ErrInvalid)
	}
	return nil
}
