package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
	"assistant/internal/testkit"
)

// rowsSpec is pairSpec with a table big enough to span many pages.
func rowsSpec() sqlite.Spec {
	spec := pairSpec("")
	spec.Migrations = []sqlstore.Migration{
		{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x INTEGER PRIMARY KEY, pad TEXT NOT NULL)"},
		stepPair,
	}
	return spec
}

// mustOpenPool opens path with spec and closes the pool when the test ends.
func mustOpenPool(tb testing.TB, path string, spec sqlite.Spec) *sql.DB {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), path, spec)
	if err != nil {
		tb.Fatalf("Open %s: %v", path, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// fill inserts n rows of about 500 bytes into t, in one transaction.
func fill(tb testing.TB, db *sql.DB, from, n int) {
	tb.Helper()
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	for i := from; i < from+n; i++ {
		if _, err := tx.Exec(`INSERT INTO t (x, pad) VALUES (?, ?)`, i, strings.Repeat("p", 500)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// crashCopy copies the file at src and its -wal into dir while a pool of
// ours still has them open, with frames in the -wal: what a process killed
// mid-run leaves behind, and nobody has the copy open. It returns the
// copy's path.
func crashCopy(tb testing.TB, src, dir string, write func(db *sql.DB)) string {
	tb.Helper()
	db := mustOpenPool(tb, src, rowsSpec())
	if _, err := db.Exec(`PRAGMA wal_autocheckpoint = 0`); err != nil {
		tb.Fatal(err)
	}
	write(db)
	dst := filepath.Join(dir, filepath.Base(src))
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suffix)
		if err != nil {
			tb.Fatal(err)
		}
		if suffix == "-wal" && len(b) == 0 {
			tb.Fatal("the -wal is empty; the test needs frames in it")
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return dst
}

// count returns the rows of t in the file at path, opened with spec.
func countRows(tb testing.TB, path string) int {
	tb.Helper()
	db := mustOpenPool(tb, path, rowsSpec())
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// refusedByReadOnlyOpenings fails t unless the read-only openings of
// verify (CheckFile) and backup (TakeSnapshot) refuse the file at path
// as Open does: ErrForeignWAL saying says, the file and its -wal unchanged.
func refusedByReadOnlyOpenings(t *testing.T, path, says string) {
	t.Helper()
	dir, base := filepath.Dir(path), filepath.Base(path)
	before := fileSums(t, dir, base, base+"-wal")
	ctx := context.Background()
	if _, err := sqlite.TakeSnapshot(ctx, path, rowsSpec()); !errors.Is(err, sqlite.ErrForeignWAL) || !strings.Contains(err.Error(), says) {
		t.Errorf("TakeSnapshot: %v, want ErrForeignWAL: %s", err, says)
	}
	check, err := sqlite.CheckFile(ctx, path, rowsSpec())
	if err != nil || check.Usable() || len(check.Problems) != 1 || !strings.Contains(check.Problems[0], says) {
		t.Errorf("CheckFile: %+v, %v; want the one problem %q", check, err, says)
	}
	if after := fileSums(t, dir, base, base+"-wal"); !maps.Equal(before, after) {
		t.Errorf("the read-only openings changed the files:\nbefore %v\nafter  %v", before, after)
	}
}

// TestWALThatBelongsElsewhere: SQLite merges any -wal beside a database
// when it opens it (it checks the frames against the -wal's own header, not
// against the database). Open refuses, unchanged, a -wal with frames that
// were not written for the file, and merges one that was; so do the
// read-only openings of verify and backup.
func TestWALThatBelongsElsewhere(t *testing.T) {
	t.Run("OwnWALOfACrashIsMerged", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "x.sqlite")
		mustOpenPool(t, src, rowsSpec())
		path := crashCopy(t, src, t.TempDir(), func(db *sql.DB) { fill(t, db, 0, 20) })
		if n := countRows(t, path); n != 20 {
			t.Fatalf("rows after the crash = %d, want the 20 committed", n)
		}
	})

	t.Run("WALOfAnotherDataDirIsRefused", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "x.sqlite")
		mustOpenPool(t, src, rowsSpec())
		crashed := crashCopy(t, src, t.TempDir(), func(db *sql.DB) { fill(t, db, 0, 20) })
		// A data dir of the same shape and history, closed cleanly.
		dir := t.TempDir()
		path := filepath.Join(dir, "x.sqlite")
		other := mustOpenPool(t, path, rowsSpec())
		fill(t, other, 0, 20)
		other.Close()
		copyFile(t, crashed+"-wal", path+"-wal")
		refusedByReadOnlyOpenings(t, path, "x.sqlite-wal carries data dir")
		before := fileSums(t, dir, "x.sqlite", "x.sqlite-wal")
		_, err := sqlite.Open(context.Background(), path, rowsSpec())
		if !errors.Is(err, sqlite.ErrForeignWAL) || !strings.Contains(err.Error(), "x.sqlite-wal carries data dir") {
			t.Fatalf("Open: %v, want ErrForeignWAL naming both data dirs", err)
		}
		if after := fileSums(t, dir, "x.sqlite", "x.sqlite-wal"); !maps.Equal(before, after) {
			t.Fatalf("refused files changed:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("WALOlderThanTheFileIsRefused", func(t *testing.T) {
		// A crash leaves a -wal; later processes merge it and write on.
		// The old -wal put back beside the newer file would roll it back.
		src := filepath.Join(t.TempDir(), "x.sqlite")
		mustOpenPool(t, src, rowsSpec())
		crashed := crashCopy(t, src, t.TempDir(), func(db *sql.DB) { fill(t, db, 0, 20) })
		old, err := os.ReadFile(crashed + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			db := mustOpenPool(t, crashed, rowsSpec())
			fill(t, db, 100+i, 1)
			db.Close()
		}
		if err := os.WriteFile(crashed+"-wal", old, 0o600); err != nil {
			t.Fatal(err)
		}
		refusedByReadOnlyOpenings(t, crashed, "older than the file")
		_, err = sqlite.Open(context.Background(), crashed, rowsSpec())
		if !errors.Is(err, sqlite.ErrForeignWAL) || !strings.Contains(err.Error(), "older than the file") {
			t.Fatalf("Open: %v, want ErrForeignWAL: older than the file", err)
		}
	})
}

// TestStampOncePerPool: the first write transaction of each pool raises the
// stamp, an autocommit write too; later ones do not.
func TestStampOncePerPool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.sqlite")
	stamp := func() int {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT stamp FROM data_dir`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	db := mustOpenPool(t, path, rowsSpec())
	if got := stamp(); got != 0 {
		t.Fatalf("stamp after creation = %d, want 0 (the creation is not a pool's write)", got)
	}
	fill(t, db, 0, 1)
	fill(t, db, 1, 1)
	if _, err := db.Exec(`INSERT INTO t (x, pad) VALUES (9, 'a')`); err != nil {
		t.Fatal(err)
	}
	if got := stamp(); got != 1 {
		t.Fatalf("stamp after three writes of one pool = %d, want 1", got)
	}
	db.Close()
	db = mustOpenPool(t, path, rowsSpec())
	if _, err := db.Exec(`UPDATE t SET pad = 'b' WHERE x = 9`); err != nil { // autocommit first
		t.Fatal(err)
	}
	if got := stamp(); got != 2 {
		t.Fatalf("stamp after a second pool's autocommit write = %d, want 2", got)
	}
	tx, err := db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if got := stamp(); got != 2 {
		t.Fatalf("a read transaction stamped: %d", got)
	}
}

// corruptMiddlePage makes a file with many pages, closes it cleanly, and
// writes garbage into a page in the middle of t's tree, none of those the
// checks at open that cost the same whatever the file's size read. It
// returns the file's path.
func corruptMiddlePage(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	path := filepath.Join(dir, "x.sqlite")
	db := mustOpenPool(tb, path, rowsSpec())
	fill(tb, db, 0, 600)
	db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	middle := fi.Size() / 4096 / 2 // a leaf of t: about 75 of the file's 80 pages are
	// Timestamps tick coarsely on some file systems: let the clock move
	// past the clean close before the file is changed behind its back.
	time.Sleep(20 * time.Millisecond)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	garbage := []byte(strings.Repeat("\xff\x13\x00\x07", 500))
	if _, err := f.WriteAt(garbage, middle*4096+64); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestChangedFileIsChecked: a file written behind the back of this program
// since it was last closed cleanly gets a quick_check at open; a damaged
// one is refused, unchanged, and stays refused.
func TestChangedFileIsChecked(t *testing.T) {
	path := corruptMiddlePage(t)
	dir, name := filepath.Dir(path), filepath.Base(path)
	before := fileSums(t, dir, name)
	for i := range 2 {
		_, err := sqlite.Open(context.Background(), path, rowsSpec())
		if !errors.Is(err, sqlite.ErrCorrupt) || !strings.Contains(err.Error(), "quick_check") ||
			strings.Contains(err.Error(), "assistant ") {
			t.Fatalf("open %d: %v, want ErrCorrupt with the quick_check findings, without a command (the application layer gives the hint)", i+1, err)
		}
	}
	if after := fileSums(t, dir, name); !maps.Equal(before, after) {
		t.Fatalf("refused file changed")
	}
}

// TestCorruptReadPoisonsThePool: a damaged page the checks at open did not
// read (the file looked closed cleanly) is met by a read: the error names
// quick_check's findings, nothing more is written by the pool, and the next
// open checks the file and refuses it.
func TestCorruptReadPoisonsThePool(t *testing.T) {
	path := corruptMiddlePage(t)
	// As if nothing had changed the file since its last clean close.
	now := time.Now().Add(time.Second)
	if err := os.Chtimes(path+"-wal", now, now); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), path, rowsSpec())
	if err != nil {
		t.Fatalf("Open of a file that looks closed cleanly: %v", err)
	}
	var sum int
	err = db.QueryRow(`SELECT sum(length(pad)) FROM t`).Scan(&sum)
	var ce *sqlite.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, sqlite.ErrCorrupt) || ce.QuickCheck == "ok" {
		t.Fatalf("read: %v, want a CorruptError with quick_check findings", err)
	}
	before := fileSums(t, filepath.Dir(path), filepath.Base(path))
	if _, err := db.Exec(`INSERT INTO t (x, pad) VALUES (100000, 'x')`); !errors.Is(err, sqlite.ErrCorrupt) {
		t.Fatalf("write after the poison: %v, want ErrCorrupt", err)
	}
	db.Close()
	if after := fileSums(t, filepath.Dir(path), filepath.Base(path)); !maps.Equal(before, after) {
		t.Fatalf("the poisoned pool wrote the file")
	}
	if _, err := sqlite.Open(context.Background(), path, rowsSpec()); !errors.Is(err, sqlite.ErrCorrupt) {
		t.Fatalf("next open: %v, want ErrCorrupt", err)
	}
}

// copyFile copies src to dst (mode 0600).
func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		tb.Fatal(fmt.Errorf("copy %s: %w", src, err))
	}
}

// TestDurableLastCheckpointsTheCommitIntoTheFile: Handle.DurableLast
// leaves its commit in the database file itself (the WAL synced and copied
// into it), and Durable leaves it in the WAL; each counts one durable
// commit.
func TestDurableLastCheckpointsTheCommitIntoTheFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		last   bool
		inFile int
	}{
		{"DurableLast", true, 1},
		{"Durable", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "f.sqlite")
			spec := rowsSpec()
			db, err := sqlite.Open(ctx, path, spec)
			if err != nil {
				t.Fatal(err)
			}
			db.Close() // the schema in the file, the -wal empty
			h := sqlite.NewHandle(mustOpenPool(t, path, spec), path, "")
			durable := h.Durable
			if tc.last {
				durable = h.DurableLast
			}
			testkit.CheckDurableWrite(t, path, "t", tc.inFile, func() error {
				return durable(ctx, func(q sqlstore.Querier) error {
					_, err := q.ExecContext(ctx, `INSERT INTO t (x, pad) VALUES (1, 'a')`)
					return err
				})
			})
		})
	}
}

// TestFileReadOnlyThroughItsWALOpens: a checkpoint cut off part-way
// leaves a file that is whole only read through its -wal (SQLite copies
// the -wal's pages into the file one by one). Open takes it: its -wal
// cannot be compared with the file alone, and the full check through the
// -wal finds it whole.
func TestFileReadOnlyThroughItsWALOpens(t *testing.T) {
	src := filepath.Join(t.TempDir(), "x.sqlite")
	mustOpenPool(t, src, rowsSpec()).Close() // the schema and identity in the file itself
	path := crashCopy(t, src, t.TempDir(), func(db *sql.DB) { fill(t, db, 0, 20) })
	// The page of the identity table, which the -wal holds newer (the
	// pool's first write raised its stamp), half copied into the file.
	alone, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	err = alone.QueryRow(`SELECT rootpage FROM sqlite_schema WHERE name = ?`, sqlite.DataDirTable).Scan(&root)
	if err == nil {
		err = alone.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
	}
	alone.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, int(pageSize/2)), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := countRows(t, path); n != 20 {
		t.Fatalf("rows of the file read through its -wal = %d, want the 20 committed", n)
	}
}
