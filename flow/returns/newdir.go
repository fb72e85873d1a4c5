package returns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A data dir made aside: the first `orders import` into a data dir that
// does not exist builds the whole data dir under a temporary name beside
// it and gives it its name only once the import has committed
// (docs/orders.md "The first import"). A file refused half way, a signal
// or a write error leave no data dir and no file behind; a process killed
// meanwhile leaves only the temporary directory, whose name says what it
// is. Nobody else can open a store that has no name yet, so the import
// may check the file and write its orders at once (ImportOrdersStream).

// asidePrefix and asideSuffix frame the temporary name of a data dir made
// aside: ".NAME.import-RANDOM" in the data dir's parent.
const (
	asidePrefix = "."
	asideSuffix = ".import-"
)

// NewDataDirAside makes, for the data dir dir that does not exist, an
// empty directory (0700) under a temporary name in dir's parent, making
// the parent (0700) and its missing ancestors first. It returns the
// directory's path and discard, which removes it and whatever it holds
// and the ancestors it made (those still empty): call discard unless
// PlaceDataDir has given the directory dir's name. Errors: dir exists
// (fs.ErrExist), dir has a ".." element, the parent cannot be made or
// written.
func NewDataDirAside(dir string) (tmp string, discard func(), err error) {
	if slices.Contains(strings.Split(filepath.ToSlash(dir), "/"), "..") {
		// The kernel resolves "a/../b" through a, which must exist;
		// the path as text says b. Made aside and renamed, the data
		// dir would not be where the path leads.
		return "", nil, fmt.Errorf("data dir %s: %w", dir, errDotDot)
	}
	dir = filepath.Clean(dir)
	if _, err := os.Lstat(dir); err == nil {
		return "", nil, fmt.Errorf("data dir %s: %w", dir, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	parent := filepath.Dir(dir)
	// The ancestors that do not exist, the deepest first.
	var made []string
	for p := parent; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		made = append(made, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	removeMade := func() {
		for _, p := range made {
			_ = os.Remove(p) // only while empty: another's files stay
		}
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		removeMade()
		return "", nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	tmp, err = os.MkdirTemp(parent, asidePrefix+filepath.Base(dir)+asideSuffix)
	if err != nil {
		removeMade()
		return "", nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	return tmp, func() {
		_ = os.RemoveAll(tmp)
		removeMade()
	}, nil
}

// PlaceDataDir gives the data dir made aside at tmp (NewDataDirAside, its
// stores closed) the name dir: it flushes tmp's entries to disk, renames
// tmp to dir unless something is at dir by now (the rename never replaces
// it), and flushes dir's parent, so that a crash afterwards finds the data
// dir whole under its name. Errors: something took dir's name meanwhile
// (ErrDataDirTaken; tmp is left as it was), tmp could not be renamed
// (ErrNotPlaced; tmp left as it was), or the file system's once renamed.
func PlaceDataDir(tmp, dir string) error {
	dir = filepath.Clean(dir)
	if err := syncDir(tmp); err != nil {
		return fmt.Errorf("data dir %s: %w", tmp, err)
	}
	if err := renameNoReplace(tmp, dir); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("data dir %s: %w", dir, ErrDataDirTaken)
		}
		return fmt.Errorf("data dir %s: rename %s: %w (%v)", dir, tmp, ErrNotPlaced, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	return nil
}

// errDotDot: a data dir path with a ".." element is not made aside.
var errDotDot = errors.New(`a path with ".." is made where it leads, not aside`)

// ErrDataDirTaken: another process made the data dir while this one was
// making it aside (PlaceDataDir). The caller uses the one that is there.
var ErrDataDirTaken = errors.New("made by another process meanwhile")

// ErrNotPlaced: the data dir made aside could not be renamed, and nothing
// is at the data dir's name because of it (PlaceDataDir): a file system
// without RENAME_NOREPLACE (EINVAL on some network file systems), a
// parent that was made read-only meanwhile. The caller makes the data
// dir at its name instead.
var ErrNotPlaced = errors.New("could not be renamed into place")

// syncDir flushes directory dir's entries to disk (fsync of the
// directory), where new names live until then.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
