package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"

	"assistant/internal/sqlitedb"
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
			ms, err := sqlitedb.LoadMigrations(tc.fsys, "m")
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
	spec := sqlitedb.Spec{
		ApplicationID: 0x12345678,
		Migrations:    []sqlitedb.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x INTEGER)"}},
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
			db, err := sqlitedb.Open(ctx, path, spec)
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
	_, err := sqlitedb.Open(context.Background(), filepath.Join(t.TempDir(), "x.sqlite"), sqlitedb.Spec{
		ApplicationID: 1, Migrations: []sqlitedb.Migration{{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x)"}},
	})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}
