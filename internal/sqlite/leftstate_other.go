//go:build !linux

package sqlite

import "io/fs"

// shmInUse cannot ask for the -shm's locks on this system: it reports the
// file in use, so Open trusts the -wal as SQLite does.
func shmInUse(string) bool { return true }

// changedAfter compares modification times on this system.
func changedAfter(db, wal fs.FileInfo) bool { return db.ModTime().After(wal.ModTime()) }

// markUnchecked does nothing on this system.
func markUnchecked(string) {}
