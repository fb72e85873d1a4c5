//go:build !linux

package returns

import (
	"errors"
	"io/fs"
	"os"
)

// renameNoReplace renames old to new unless something is at new: then
// fs.ErrExist. Outside Linux it looks first and renames after, so a
// process that makes new in between loses to this one when new is an
// empty directory (os.Rename replaces one).
func renameNoReplace(old, new string) error {
	if _, err := os.Lstat(new); !errors.Is(err, fs.ErrNotExist) {
		return fs.ErrExist
	}
	return os.Rename(old, new)
}
