package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

// bulkSpec is a store of one table for BulkLoad's tests.
var bulkSpec = sqlite.Spec{
	ApplicationID: 0x12345678,
	Migrations:    []sqlstore.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x INTEGER PRIMARY KEY, y TEXT NOT NULL)"}},
	Create:        true,
}

// newBulkFile makes a file of bulkSpec, closed, and returns its path.
func newBulkFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.sqlite")
	db, err := sqlite.Open(context.Background(), path, bulkSpec)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// bulkRows counts the rows of t in the file at path, opened as every
// command opens it.
func bulkRows(t *testing.T, path string) int {
	t.Helper()
	spec := bulkSpec
	spec.Create = false
	db, err := sqlite.Open(context.Background(), path, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// BulkLoad commits what fn writes, or nothing when fn fails, and leaves the
// file in WAL mode with an empty -wal that is not older than the file's
// last change (a clean close's state: the next open checks no page).
func TestBulkLoad(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	for _, tt := range []struct {
		name string
		fail error
		want int
	}{{"Commit", nil, 5000}, {"Rollback", boom, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			path := newBulkFile(t)
			err := sqlite.BulkLoad(ctx, path, func(q sqlstore.Querier) error {
				for i := range 5000 {
					if _, err := q.ExecContext(ctx, `INSERT INTO t (x, y) VALUES (?, ?)`, i, "row"); err != nil {
						return err
					}
				}
				return tt.fail
			})
			if !errors.Is(err, tt.fail) {
				t.Fatalf("BulkLoad: %v, want %v", err, tt.fail)
			}
			if tt.fail == nil {
				wantCleanClose(t, path)
			}
			if n := bulkRows(t, path); n != tt.want {
				t.Fatalf("%d rows, want %d", n, tt.want)
			}
		})
	}
}

// BulkLoad refuses a file another connection has open (it cannot leave
// WAL mode then) and writes nothing.
func TestBulkLoadFileOpenElsewhere(t *testing.T) {
	ctx := context.Background()
	path := newBulkFile(t)
	spec := bulkSpec
	spec.Create = false
	other, err := sqlite.Open(ctx, path, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`INSERT INTO t (x, y) VALUES (1, 'other')`); err != nil {
		t.Fatal(err)
	}
	ran := false
	err = sqlite.BulkLoad(ctx, path, func(q sqlstore.Querier) error { ran = true; return nil })
	if err == nil || ran {
		t.Fatalf("BulkLoad: %v (fn ran: %v), want a refusal before fn", err, ran)
	}
	var n int
	if err := other.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows %d (%v), want the other connection's 1", n, err)
	}
}

// wantCleanClose fails t unless the file at path is in WAL mode and its
// -wal is empty and not older than the file's last change (ctime).
func wantCleanClose(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	err = db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	db.Close()
	if err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if ctime := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); wal.Size() != 0 || ctime.After(wal.ModTime()) {
		t.Fatalf("-wal %d bytes, modified %v; file changed %v: want an empty -wal not older than the file", wal.Size(), wal.ModTime(), ctime)
	}
}
