package sqlite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name    string
		fsys    fstest.MapFS
		want    []int64
		wantErr bool
	}{
		{"Ordered", fstest.MapFS{"m/0002_b.sql": file("B"), "m/0001_a.sql": file("A")}, []int64{1, 2}, false},
		{"Gap", fstest.MapFS{"m/0001_a.sql": file("A"), "m/0003_c.sql": file("C")}, nil, true},
		{"BadName", fstest.MapFS{"m/first.sql": file("A")}, nil, true},
		{"None", fstest.MapFS{"m/readme.txt": file("x")}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := sqlstore.LoadMigrations(tc.fsys, "m")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			var got []int64
			for _, m := range ms {
				got = append(got, m.Version)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("versions %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOpenConcurrentCreate: many goroutines open one new file at once. Each
// switches it to WAL (a lock upgrade SQLite never waits on) and races to
// migrate; all succeed and OnCreate runs once.
func TestOpenConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.sqlite")
	var mu sync.Mutex
	created := 0
	spec := sqlite.Spec{
		ApplicationID: 0x12345678,
		Migrations:    []sqlstore.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x INTEGER)"}},
		Create:        true,
		OnCreate: func(ctx context.Context, tx *sql.Tx) error {
			mu.Lock()
			created++
			mu.Unlock()
			return nil
		},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			db, err := sqlite.Open(ctx, path, spec)
			if err == nil {
				err = db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if created != 1 {
		t.Errorf("OnCreate ran %d times, want 1", created)
	}
}

func TestOpenMissingWithoutCreate(t *testing.T) {
	_, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "x.sqlite"), sqlite.Spec{
		ApplicationID: 1, Migrations: []sqlstore.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x)"}},
	})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}

// TestOpenRefusesWALFileUnchanged: a refused file in WAL mode whose -wal
// still holds frames (another program's, or ours of a newer schema, left by
// a crash) is left byte for byte as it was, its -wal included: those frames
// must not be checkpointed into it when the refusing open closes.
func TestOpenRefusesWALFileUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		appID int64
		ver   int64
		want  error
	}{
		{"another program's", 0x0BADF00D, 1, sqlite.ErrForeignFile},
		{"a newer schema", 0x12345678, 9, sqlite.ErrNewerSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dir := t.TempDir(), t.TempDir()
			// Copy the database and its -wal while the writer still has
			// them open: a WAL-mode file whose frames were never
			// checkpointed, as a crash leaves it.
			w, err := sql.Open("sqlite", "file:"+filepath.Join(src, "x.sqlite"))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.SetMaxOpenConns(1)
			for _, q := range []string{
				`PRAGMA journal_mode = WAL`, `PRAGMA wal_autocheckpoint = 0`,
				fmt.Sprintf(`PRAGMA application_id = %d`, tc.appID), fmt.Sprintf(`PRAGMA user_version = %d`, tc.ver),
				`CREATE TABLE t (x)`, `INSERT INTO t VALUES (1), (2), (3)`,
			} {
				if _, err := w.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			for _, name := range []string{"x.sqlite", "x.sqlite-wal"} {
				b, err := os.ReadFile(filepath.Join(src, name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := fileSums(t, dir, "x.sqlite", "x.sqlite-wal")
			if before["x.sqlite-wal"] == fileSums(t, t.TempDir())["x.sqlite-wal"] {
				t.Fatal("the copied -wal is empty; the test needs frames in it")
			}
			_, err = sqlite.Open(context.Background(), filepath.Join(dir, "x.sqlite"), sqlite.Spec{
				ApplicationID: 0x12345678,
				Migrations:    []sqlstore.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x)"}},
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if after := fileSums(t, dir, "x.sqlite", "x.sqlite-wal"); !maps.Equal(before, after) {
				t.Errorf("refused file changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// fileSums returns the SHA-256 of each named file in dir ("missing" for a
// file that is not there).
func fileSums(t *testing.T, dir string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			out[name] = "missing"
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[name] = fmt.Sprintf("%x (%d bytes)", sha256.Sum256(b), len(b))
	}
	return out
}

// TestOpenWhileWriterHoldsLock opens a file of ours, current, while another
// connection writes it (its -wal holds frames, and it holds the write lock
// in a transaction): Open must not wait for that lock, as a `show` must not
// wait for a batch's chunk.
func TestOpenWhileWriterHoldsLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.sqlite")
	spec := sqlite.Spec{
		ApplicationID: 0x12345678,
		Migrations:    []sqlstore.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x INTEGER)"}},
		Create:        true,
		BusyTimeout:   200 * time.Millisecond,
	}
	w, err := sqlite.Open(ctx, path, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Exec(`INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	tx, err := w.Begin() // BEGIN IMMEDIATE: the write lock, held
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`INSERT INTO t VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, path, spec)
	if err != nil {
		t.Fatalf("Open while another connection holds the write lock: %v", err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Errorf("rows seen: %d (%v), want the 1 committed", n, err)
	}
}

// TestOpenRefusesByHeaderMakingNoFiles: a WAL-mode file closed cleanly by
// another program (no -wal, no -shm beside it) that is another
// application's or of a newer schema is refused from its header alone:
// the refusing open makes no -wal or -shm beside it, and the file is
// left byte for byte as it was.
func TestOpenRefusesByHeaderMakingNoFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		appID int64
		ver   int64
		want  error
	}{
		{"another program's", 0x0BADF00D, 1, sqlite.ErrForeignFile},
		{"a newer schema", 0x12345678, 9, sqlite.ErrNewerSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.sqlite")
			w, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			w.SetMaxOpenConns(1)
			for _, q := range []string{
				`PRAGMA journal_mode = WAL`,
				fmt.Sprintf(`PRAGMA application_id = %d`, tc.appID), fmt.Sprintf(`PRAGMA user_version = %d`, tc.ver),
				`CREATE TABLE t (x)`, `INSERT INTO t VALUES (1)`,
			} {
				if _, err := w.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			names := []string{"x.sqlite", "x.sqlite-wal", "x.sqlite-shm"}
			before := fileSums(t, dir, names...)
			if before["x.sqlite-wal"] != "missing" || before["x.sqlite-shm"] != "missing" {
				t.Fatalf("the test needs a file closed cleanly, without -wal and -shm: %v", before)
			}
			spec := sqlite.Spec{
				ApplicationID: 0x12345678,
				Migrations:    []sqlstore.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x)"}},
			}
			_, err = sqlite.Open(context.Background(), path, spec)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if after := fileSums(t, dir, names...); !maps.Equal(before, after) {
				t.Errorf("the refusing open changed the files:\nbefore %v\nafter  %v", before, after)
			}
			// backup's read-only open and verify's check refuse it alike.
			db, err := sqlite.OpenReadOnly(context.Background(), path, spec)
			if !errors.Is(err, tc.want) {
				if db != nil {
					db.Close()
				}
				t.Fatalf("OpenReadOnly: %v, want %v", err, tc.want)
			}
			fc, err := sqlite.CheckFile(context.Background(), path, spec)
			if err != nil || len(fc.Problems) == 0 {
				t.Fatalf("CheckFile: %+v, %v; want a problem", fc, err)
			}
			if after := fileSums(t, dir, names...); !maps.Equal(before, after) {
				t.Errorf("the read-only open or the check changed the files:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// TestOpenReadOnlyRefusesOlderSchema: a read-only open of a file whose
// schema is older than the spec's newest refuses it as ErrOlderSchema,
// the versions in its message and what to do next left to the caller's
// hint, and leaves the file unmigrated.
func TestOpenReadOnlyRefusesOlderSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.sqlite")
	m1 := sqlstore.Migration{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x INTEGER)"}
	m2 := sqlstore.Migration{Version: 2, Name: "0002_u.sql", SQL: "CREATE TABLE u (y INTEGER)"}
	db, err := sqlite.Open(ctx, path, sqlite.Spec{ApplicationID: 0x12345678, Migrations: []sqlstore.Migration{m1}, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = sqlite.OpenReadOnly(ctx, path, sqlite.Spec{ApplicationID: 0x12345678, Migrations: []sqlstore.Migration{m1, m2}})
	if err == nil {
		db.Close()
		t.Fatal("OpenReadOnly of an older schema: no error")
	}
	if !errors.Is(err, sqlite.ErrOlderSchema) {
		t.Fatalf("OpenReadOnly: %v, want ErrOlderSchema", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "schema version 1, this build writes 2") || strings.Contains(msg, "run ") {
		t.Errorf("message %q: want the versions, and no instruction (the hint is the caller's)", msg)
	}
}
