package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"assistant/internal/sqlite"
)

// TestSnapshotCopiesItsMoment: a copy holds the file as it was when the
// snapshot was taken, however much is written after; it is one file in
// rollback-journal mode that opens as a file of ours.
func TestSnapshotCopiesItsMoment(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "x.sqlite")
	db := mustOpenPool(t, src, rowsSpec())
	fill(t, db, 0, 50)
	snap, err := sqlite.TakeSnapshot(ctx, src, rowsSpec())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	fill(t, db, 50, 50) // a writer goes on: it does not wait for the snapshot
	dir := t.TempDir()
	dst := filepath.Join(dir, "x.sqlite")
	if err := snap.CopyTo(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if err := snap.CopyTo(ctx, dst); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second copy onto the first: %v, want fs.ErrExist", err)
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the copy left %d files, want 1 (no -wal, no -journal)", len(entries))
	}
	check, err := sqlite.CheckFile(ctx, dst, rowsSpec())
	if err != nil || !check.Usable() {
		t.Fatalf("CheckFile of the copy: %+v, %v", check, err)
	}
	if want, _ := sqlite.PeekDataDirID(ctx, src); check.DataDirID != want {
		t.Fatalf("copy's identity %s, want the file's %s", check.DataDirID, want)
	}
	if n := countRows(t, dst); n != 50 {
		t.Fatalf("the copy holds %d rows, want the 50 of the snapshot's moment", n)
	}
}

// TestCopyPutBackBesideAStaleWAL: a backup copy put back into a data dir
// whose -wal still holds frames of the file it replaces is refused by
// every opening, the read-only ones of verify (CheckFile) and backup
// (TakeSnapshot) too: SQLite would take the copy for a WAL file and read
// them, or merge them.
func TestCopyPutBackBesideAStaleWAL(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "x.sqlite")
	mustOpenPool(t, src, rowsSpec())
	snap, err := sqlite.TakeSnapshot(ctx, src, rowsSpec())
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "x.sqlite")
	if err := snap.CopyTo(ctx, backup); err != nil {
		t.Fatal(err)
	}
	snap.Close()
	crashed := crashCopy(t, src, t.TempDir(), func(db *sql.DB) { fill(t, db, 0, 20) })
	copyFile(t, backup, crashed)
	before := fileSums(t, filepath.Dir(crashed), "x.sqlite", "x.sqlite-wal")
	_, err = sqlite.Open(ctx, crashed, rowsSpec())
	if !errors.Is(err, sqlite.ErrForeignWAL) || !strings.Contains(err.Error(), "rollback-journal mode") {
		t.Fatalf("Open: %v, want ErrForeignWAL", err)
	}
	if _, err := sqlite.TakeSnapshot(ctx, crashed, rowsSpec()); !errors.Is(err, sqlite.ErrForeignWAL) {
		t.Fatalf("TakeSnapshot: %v, want ErrForeignWAL", err)
	}
	check, err := sqlite.CheckFile(ctx, crashed, rowsSpec())
	if err != nil || check.Usable() || len(check.Problems) != 1 || !strings.Contains(check.Problems[0], "rollback-journal mode") {
		t.Fatalf("CheckFile: %+v, %v; want the foreign -wal its one problem", check, err)
	}
	if after := fileSums(t, filepath.Dir(crashed), "x.sqlite", "x.sqlite-wal"); after["x.sqlite"] != before["x.sqlite"] || after["x.sqlite-wal"] != before["x.sqlite-wal"] {
		t.Fatal("the refused files changed")
	}
	os.Remove(crashed + "-wal")
	os.Remove(crashed + "-shm")
	if n := countRows(t, crashed); n != 0 {
		t.Fatalf("the restored copy holds %d rows, want 0", n)
	}
}

func TestCheckFileFindsDamage(t *testing.T) {
	path := corruptMiddlePage(t)
	check, err := sqlite.CheckFile(context.Background(), path, rowsSpec())
	if err != nil || check.Usable() || len(check.Problems) == 0 || !strings.HasPrefix(check.Problems[0], "integrity_check: ") {
		t.Fatalf("CheckFile: %+v, %v; want integrity_check problems", check, err)
	}
}
