package returns

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames old to new unless something is at new: then
// fs.ErrExist and nothing changes (renameat2 with RENAME_NOREPLACE, one
// step of the kernel, so no other process can take new in between).
func renameNoReplace(old, new string) error {
	err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		return fs.ErrExist
	}
	return err
}
