package sqlite

import (
	"errors"
	"io/fs"
	"os"
)

// leftState is how a database file was left, read from the files beside it
// before any connection opens it.
type leftState struct {
	// walFrames: the -wal file is not empty. Every connection of ours that
	// closes last empties it (persistentWAL), so frames mean another
	// process has the file open now, or the last one to use it did not
	// close it (a crash, a kill, a power loss), or the -wal came from
	// elsewhere.
	walFrames bool
	// inUse: a connection, of any process, has the file open: it holds
	// its shared lock on the -shm file's dead-man-switch byte. Asked only
	// when walFrames or changed is set.
	inUse bool
	// changed: the file may have been written since a connection of ours
	// last closed it cleanly: it changed (ctime) after its -wal was last
	// written or emptied (mtime), or it has no -wal (copied or restored on
	// its own). A clean close checkpoints into the file, then empties the
	// -wal, so the -wal is never older than the file after one.
	changed bool
}

// fileLeftState inspects the -wal and -shm beside the database at path.
// Whatever cannot be read counts as the safe answer: frames, not in use,
// changed.
func fileLeftState(path string) leftState {
	var st leftState
	wal, werr := os.Stat(path + "-wal")
	switch {
	case errors.Is(werr, fs.ErrNotExist):
		st.changed = true
	case werr != nil:
		st.walFrames, st.changed = true, true
	default:
		st.walFrames = wal.Size() > 0
		if db, err := os.Stat(path); err != nil || changedAfter(db, wal) {
			st.changed = true
		}
	}
	// Whether another process has the file open matters only for a file
	// not left as a clean close leaves it; the common open asks nothing.
	if st.walFrames || st.changed {
		st.inUse = shmInUse(path + "-shm")
	}
	return st
}
