package sqlite

import (
	"io/fs"
	"os"
	"syscall"
	"time"
)

// fOFDGetLK is F_OFD_GETLK (Linux 3.15): it reports a lock that conflicts
// with one this open file description would take, whoever holds it, this
// process's own POSIX locks included.
const fOFDGetLK = 36

// shmDMS is the offset of the -shm file's dead-man-switch byte: SQLite's
// unix VFS keeps a shared lock on it for as long as a connection has the
// -shm mapped ((22 + SQLITE_SHM_NLOCK) * 4 + SQLITE_SHM_NLOCK).
const shmDMS = (22+8)*4 + 8

// shmInUse reports whether any connection has the database of the -shm at
// shm open: some lock conflicts with an exclusive lock on its
// dead-man-switch byte. A missing or unreadable -shm is not in use.
func shmInUse(shm string) bool {
	f, err := os.Open(shm)
	if err != nil {
		return false
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: shmDMS, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), fOFDGetLK, &lk); err != nil {
		// An older kernel: the POSIX query misses this process's own
		// locks only.
		lk = syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: shmDMS, Len: 1}
		if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
			return false
		}
	}
	return lk.Type != syscall.F_UNLCK
}

// changedAfter reports whether the database (db) changed after its -wal
// (wal) was last written or emptied: the database's status change time
// (ctime: no copy tool can set it back) is later than the -wal's
// modification time. The -wal's mtime, not its ctime: SQLite, run as root,
// gives a -wal it opens its database's owner (fchown), which moves the
// -wal's ctime on every open, a refused one included.
func changedAfter(db, wal fs.FileInfo) bool {
	return ctime(db).After(wal.ModTime())
}

// ctime returns the status change time of fi.
func ctime(fi fs.FileInfo) time.Time {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.ModTime()
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
}

// markUnchecked makes the -wal beside the database at path older than the
// database (its mtime a second before the database's ctime), so the next
// open checks the file again: a refused file stays refused, even after
// the refused open created an empty -wal.
func markUnchecked(path string) {
	db, err := os.Stat(path)
	if err != nil {
		return
	}
	old := ctime(db).Add(-time.Second)
	_ = os.Chtimes(path+"-wal", old, old)
}
