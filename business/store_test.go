package business

import (
	"assistant/internal/testkit"

	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("CreatesFileWithSchemaAndSeed", func(t *testing.T) {
		// Made here by Open, not copied from newSeeded's template: the
		// file's mode is Open's to set.
		s, path := openStore(t, sqliteStore, Options{Seed: seedCSV(t), Now: fixedClock(t0)})
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("file mode = %o, want 600", perm)
		}
		var appID, version int
		var journal string
		db := s.DB()
		if err := db.QueryRow("PRAGMA application_id").Scan(&appID); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("PRAGMA journal_mode").Scan(&journal); err != nil {
			t.Fatal(err)
		}
		if appID != ApplicationID || version != SchemaVersion() || journal != "wal" {
			t.Errorf("application_id=%#x user_version=%d journal_mode=%s, want %#x %d wal",
				appID, version, journal, ApplicationID, SchemaVersion())
		}
		if n := count(t, s, "SELECT count(*) FROM orders"); n != 12 {
			t.Errorf("orders = %d, want 12", n)
		}
		if n := count(t, s, "SELECT count(*) FROM applications WHERE draft_id = 'd_seed-A3009'"); n != 1 {
			t.Errorf("seed applications of A3009 = %d, want 1", n)
		}
	})

	t.Run("SeedLoadedOnce", func(t *testing.T) {
		s, path := newSeeded(t)
		if _, err := s.DB().Exec("DELETE FROM orders WHERE order_id = 'A3001'"); err != nil {
			t.Fatal(err)
		}
		s.Close()

		// Reopen with the seed again, and with Create: nothing is re-seeded.
		s = mustOpen(t, path, Options{Create: true, Seed: seedCSV(t), Now: fixedClock(t0.Add(time.Hour))})
		if n := count(t, s, "SELECT count(*) FROM orders"); n != 11 {
			t.Errorf("orders after reopen = %d, want 11", n)
		}
		if _, err := s.Order(ctx, "A3001", "demo-user"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted order after reopen: err = %v, want ErrNotFound", err)
		}
		o, err := s.Order(ctx, "A3003", "demo-user")
		if err != nil {
			t.Fatal(err)
		}
		if want := t0.Add(-5 * 24 * time.Hour); !o.DeliveredAt.Equal(want) {
			t.Errorf("A3003 delivered_at = %v, want %v (dates of the first open)", o.DeliveredAt, want)
		}
	})

	t.Run("MissingFileWithoutCreate", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "business.sqlite")
		_, err := Open(ctx, path, Options{})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v, want fs.ErrNotExist", err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name the file", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file was created: %v", err)
		}
	})

	t.Run("ZeroByteFileGetsSchemaAndSeed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "business.sqlite")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		s := mustOpen(t, path, Options{Seed: seedCSV(t), Now: fixedClock(t0)})
		if n := count(t, s, "SELECT count(*) FROM orders"); n != 12 {
			t.Errorf("orders = %d, want 12", n)
		}
	})

	t.Run("NoSeed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "business.sqlite")
		s := mustOpen(t, path, Options{Create: true})
		if n := count(t, s, "SELECT count(*) FROM orders"); n != 0 {
			t.Errorf("orders = %d, want 0", n)
		}
	})

	t.Run("BadSeedLeavesNoFile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "business.sqlite")
		_, err := Open(ctx, path, Options{Create: true, Seed: []byte("order_id,user,item,delivered_days_ago,final_sale,open_application\nA1,u,x,soon,false,false\n")})
		if err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Fatalf("err = %v, want an error naming line 2", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file exists after a bad seed: %v", err)
		}
	})

	t.Run("ConcurrentCreateSeedsOnce", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "business.sqlite")
		const n = 6
		stores := make([]*Store, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				stores[i], errs[i] = Open(ctx, path, Options{Create: true, Seed: seedCSV(t), Now: fixedClock(t0)})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Open #%d: %v", i, err)
			}
			defer stores[i].Close()
		}
		if got := count(t, stores[0], "SELECT count(*) FROM orders"); got != 12 {
			t.Errorf("orders = %d, want 12", got)
		}
	})
}

// TestOpenRefuses checks that a file this build must not touch is refused
// with the right error and keeps every byte (docs/storage.md "Refusals").
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	random := func(n int) []byte {
		r := rand.New(rand.NewPCG(1, 2))
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return b
	}
	// businessFile makes a real business file and hands its path to edit.
	businessFile := func(t *testing.T, edit func(t *testing.T, path string)) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			s := mustOpen(t, path, Options{Create: true, Seed: seedCSV(t), Now: fixedClock(t0)})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			edit(t, path)
		}
	}
	write := func(b []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	tests := []struct {
		name string
		make func(t *testing.T, path string)
		want error
	}{
		{"RandomBytes", write(random(8192)), ErrCorrupt},
		{"TextFile", write([]byte(strings.Repeat("order_id,user\nA3003,demo-user\n", 10))), ErrCorrupt},
		{"ShorterThanHeader", write([]byte(sqliteMagic + "\x10\x00")), ErrCorrupt},
		{"GarbageAfterMagic", write(append([]byte(sqliteMagic), random(8192-len(sqliteMagic))...)), ErrCorrupt},
		{"TruncatedBusinessFile", businessFile(t, func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}), ErrCorrupt},
		{"DamagedPage", businessFile(t, func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Every page after the first, so that a page in use is hit
			// whichever pages the migrations' rebuilds left free.
			for off := 4096; off+16+2000 <= len(b); off += 4096 {
				copy(b[off+16:], random(2000))
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}), ErrCorrupt},
		{"ForeignTables", func(t *testing.T, path string) {
			rawExec(t, path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "INSERT INTO notes (body) VALUES ('hello')")
		}, ErrForeignFile},
		{"ForeignApplicationID", func(t *testing.T, path string) {
			rawExec(t, path, "PRAGMA application_id = 305419896", "CREATE TABLE orders (order_id TEXT)")
		}, ErrForeignFile},
		{"ForeignApplicationIDNoTables", func(t *testing.T, path string) {
			rawExec(t, path, "PRAGMA application_id = 305419896")
		}, ErrForeignFile},
		{"NewerSchema", businessFile(t, func(t *testing.T, path string) {
			rawExec(t, path, "PRAGMA user_version = 99")
		}), ErrNewerSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "business.sqlite")
			tt.make(t, path)
			before := testkit.FileSHA256(t, path)

			for _, opts := range []Options{{}, {Create: true, Seed: seedCSV(t)}} {
				s, err := Open(ctx, path, opts)
				if err == nil {
					s.Close()
					t.Fatalf("Open(%+v) succeeded, want %v", opts.Create, tt.want)
				}
				t.Logf("Open(Create=%v): %v", opts.Create, err)
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name the file", err)
				}
			}
			if after := testkit.FileSHA256(t, path); after != before {
				t.Errorf("file changed by a refused Open: sha256 %s → %s", before, after)
			}
		})
	}
}

func TestParseSeed(t *testing.T) {
	t.Parallel()
	const header = "order_id,user,item,delivered_days_ago,final_sale,open_application\n"
	tests := []struct {
		name string
		csv  string
		want string // substring of the error; "" = valid
	}{
		{"TeachingOrders", string(seedCSV(t)), ""},
		{"Empty", "", ""},
		{"HeaderOnly", header, ""},
		{"BOMAndComment", "\ufeff" + header + "# a note\nA1,u,x,,,\n", ""},
		{"WrongHeader", "id,user,item,days,final,open\n", "header"},
		{"MissingColumn", header + "A1,u,x,1,false\n", "line 2"},
		{"EmptyOrderID", header + "A1,u,x,1,false,false\n,u,x,1,false,false\n", "line 3: order_id is empty"},
		{"EmptyItem", header + "A1,u, ,1,false,false\n", "line 2: item is empty"},
		{"NegativeDays", header + "A1,u,x,-1,false,false\n", "line 2: delivered_days_ago"},
		{"BadBool", header + "A1,u,x,1,yes,false\n", "line 2: final_sale"},
		{"BadOpenApplication", header + "A1,u,x,1,false,maybe\n", "line 2: open_application"},
		{"Duplicate", header + "A1,u,x,1,false,false\nA1,v,y,2,false,false\n", "line 3: order A1 already on line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSeed([]byte(tt.csv))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("err = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTimesAreFixedWidthUTC(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 2, 3, 4, 5, 500, time.FixedZone("CET", 3600))
	got := formatTime(at)
	if got != "2025-01-02T02:04:05.000000500Z" {
		t.Fatalf("formatTime = %s", got)
	}
	back, err := parseTime(got)
	if err != nil || !back.Equal(at) {
		t.Fatalf("parseTime(%s) = %v, %v", got, back, err)
	}
	if a, b := formatTime(t0), formatTime(t0.Add(time.Nanosecond)); !(a < b) || len(a) != len(b) {
		t.Errorf("text order differs from time order: %s vs %s", a, b)
	}
	if !bytes.Equal([]byte(formatTime(t0)), []byte("2025-03-10T09:00:00.000000000Z")) {
		t.Errorf("formatTime(t0) = %s", formatTime(t0))
	}
}

// withMigrations makes this build know ms for the rest of the test, as a
// later build with more migration files would.
func withMigrations(tb testing.TB, ms []migration) {
	tb.Helper()
	saved := migrationsOverride
	migrationsOverride = ms
	tb.Cleanup(func() { migrationsOverride = saved })
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	v1 := migrations()[:1]
	addNote := migration{Version: 2, Name: "0002_task_note.sql",
		SQL: "ALTER TABLE tasks ADD COLUMN note TEXT NOT NULL DEFAULT '';\nCREATE INDEX tasks_note ON tasks (note);"}

	t.Run("OlderFileMigratesWithoutReseeding", func(t *testing.T) {
		withMigrations(t, v1)
		s, path := newSeeded(t)
		if _, err := s.DB().Exec("DELETE FROM orders WHERE order_id = 'A3001'"); err != nil {
			t.Fatal(err)
		}
		s.Close()

		withMigrations(t, append(v1[:1:1], addNote))
		s = mustOpen(t, path, Options{Seed: seedCSV(t)})
		if n := count(t, s, "PRAGMA user_version"); n != 2 {
			t.Errorf("user_version = %d, want 2", n)
		}
		if n := count(t, s, "SELECT count(*) FROM pragma_table_info('tasks') WHERE name = 'note'"); n != 1 {
			t.Errorf("tasks.note missing after migration")
		}
		if n := count(t, s, "SELECT count(*) FROM orders"); n != 11 {
			t.Errorf("orders = %d, want 11 (no reseed)", n)
		}
	})

	t.Run("NewFileGetsAllMigrationsAtOnce", func(t *testing.T) {
		withMigrations(t, append(v1[:1:1], addNote))
		s, _ := newSeeded(t)
		if n := count(t, s, "PRAGMA user_version"); n != 2 {
			t.Errorf("user_version = %d, want 2", n)
		}
		if n := count(t, s, "SELECT count(*) FROM orders"); n != 12 {
			t.Errorf("orders = %d, want 12", n)
		}
	})

	t.Run("FailedMigrationChangesNothing", func(t *testing.T) {
		withMigrations(t, v1)
		s, path := newSeeded(t)
		s.Close()
		broken := migration{Version: 2, Name: "0002_broken.sql",
			SQL: "ALTER TABLE tasks ADD COLUMN note TEXT;\nALTER TABLE no_such_table ADD COLUMN x TEXT;"}
		withMigrations(t, append(v1[:1:1], broken))
		if _, err := Open(ctx, path, Options{}); err == nil || !strings.Contains(err.Error(), "0002_broken.sql") {
			t.Fatalf("err = %v, want one naming 0002_broken.sql", err)
		}

		withMigrations(t, v1)
		s = mustOpen(t, path, Options{})
		if n := count(t, s, "PRAGMA user_version"); n != 1 {
			t.Errorf("user_version = %d, want 1", n)
		}
		if n := count(t, s, "SELECT count(*) FROM pragma_table_info('tasks') WHERE name = 'note'"); n != 0 {
			t.Errorf("half of the failed migration stayed")
		}
	})

	t.Run("EmbeddedMigrationsAreNumbered", func(t *testing.T) {
		for i, m := range migrations() {
			if m.Version != int64(i+1) || !strings.HasPrefix(m.Name, fmt.Sprintf("%04d_", i+1)) {
				t.Errorf("migration %d is %s (version %d)", i, m.Name, m.Version)
			}
		}
	})
}
