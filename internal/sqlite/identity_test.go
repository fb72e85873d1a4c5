package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
	"assistant/internal/testkit"
)

// The schema steps of a store that pairs its files: version 2 adds the
// data dir table, as business and checkpoints do in their 0004.
var (
	stepTable = sqlstore.Migration{Version: 1, Name: "0001_t.sql", SQL: "CREATE TABLE t (x INTEGER)"}
	stepPair  = sqlstore.Migration{Version: 2, Name: "0002_data_dir.sql", SQL: `CREATE TABLE data_dir (
		one INTEGER PRIMARY KEY CHECK (one = 1), id TEXT NOT NULL CHECK (length(id) = 36), stamp INTEGER NOT NULL DEFAULT 0) STRICT`}
)

// pairSpec is the Spec of a paired store's file, wanting the data dir
// identity want ("" for none).
func pairSpec(want string) sqlite.Spec {
	return sqlite.Spec{ApplicationID: 0x12345678, Migrations: []sqlstore.Migration{stepTable, stepPair}, Create: true, DataDirID: want}
}

// openID opens path with spec and returns its data dir identity.
func openID(tb testing.TB, path string, spec sqlite.Spec) (string, error) {
	tb.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, spec)
	if err != nil {
		return "", err
	}
	defer db.Close()
	return sqlite.DataDirID(ctx, db)
}

func TestDataDirIdentity(t *testing.T) {
	const want = "11111111-2222-4333-8444-555555555555"
	t.Run("NewFileGetsOneAndKeepsIt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.sqlite")
		id, err := openID(t, path, pairSpec(""))
		if err != nil || len(id) != 36 {
			t.Fatalf("id %q, %v", id, err)
		}
		again, err := openID(t, path, pairSpec(""))
		if err != nil || again != id {
			t.Fatalf("reopened: %q, %v; want %q", again, err, id)
		}
	})

	t.Run("NewFileGetsTheWantedOne", func(t *testing.T) {
		id, err := openID(t, filepath.Join(t.TempDir(), "a.sqlite"), pairSpec(want))
		if err != nil || id != want {
			t.Fatalf("id %q, %v; want %q", id, err, want)
		}
	})

	t.Run("SecondFileAdoptsTheFirstOnes", func(t *testing.T) {
		dir := t.TempDir()
		first, err := openID(t, filepath.Join(dir, "business.sqlite"), pairSpec(""))
		if err != nil {
			t.Fatal(err)
		}
		second, err := openID(t, filepath.Join(dir, "checkpoints.sqlite"), pairSpec(""))
		if err != nil || second != first {
			t.Fatalf("second file: %q, %v; want %q", second, err, first)
		}
	})

	t.Run("OlderFileGetsItInItsMigration", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.sqlite")
		old := pairSpec("")
		old.Migrations = old.Migrations[:1]
		if id, err := openID(t, path, old); err != nil || id != "" {
			t.Fatalf("version 1 file: id %q, %v; want none", id, err)
		}
		if id, err := openID(t, path, pairSpec(want)); err != nil || id != want {
			t.Fatalf("migrated: id %q, %v; want %q", id, err, want)
		}
	})

	t.Run("MismatchRefusedUnchanged", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "a.sqlite")
		have, err := openID(t, path, pairSpec(""))
		if err != nil {
			t.Fatal(err)
		}
		before := fileSums(t, dir, "a.sqlite")
		_, err = openID(t, path, pairSpec(want))
		var pe *sqlite.PairError
		if !errors.As(err, &pe) || !errors.Is(err, sqlite.ErrPairMismatch) || pe.Have != have || pe.Want != want {
			t.Fatalf("err = %v, want a PairError naming %s and %s", err, have, want)
		}
		for _, id := range []string{have, want} {
			if !strings.Contains(err.Error(), id) {
				t.Errorf("%q does not name %s", err, id)
			}
		}
		if after := fileSums(t, dir, "a.sqlite"); after["a.sqlite"] != before["a.sqlite"] {
			t.Fatal("the refused file changed")
		}
	})

	t.Run("PeekChangesNothing", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "a.sqlite")
		id, _ := openID(t, path, pairSpec(""))
		before := fileSums(t, dir, "a.sqlite")
		got, err := sqlite.PeekDataDirID(context.Background(), path)
		if err != nil || got != id {
			t.Fatalf("peek: %q, %v; want %q", got, err, id)
		}
		if missing, err := sqlite.PeekDataDirID(context.Background(), filepath.Join(dir, "none.sqlite")); err != nil || missing != "" {
			t.Fatalf("peek of a missing file: %q, %v", missing, err)
		}
		if after := fileSums(t, dir, "a.sqlite"); after["a.sqlite"] != before["a.sqlite"] {
			t.Fatal("peek changed the file")
		}
	})
}

// TestHelperProcess runs the parts of tests that need processes of their
// own (testkit.Child); it does nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	switch testkit.HelperPart() {
	case "":
		t.Skip("helper for other tests")
	case "open-pair":
		// Opens the data dir's two files as a command does: the first,
		// then the second with the first one's identity. Prints both.
		dir := os.Getenv("PAIR_DIR")
		first, err := openID(t, filepath.Join(dir, "checkpoints.sqlite"), pairSpec(""))
		if err != nil {
			fmt.Println("error", err)
			return
		}
		second, err := openID(t, filepath.Join(dir, "business.sqlite"), pairSpec(first))
		if err != nil {
			fmt.Println("error", err)
			return
		}
		fmt.Println(first, second)
	}
}

// TestDataDirIdentityTwoProcesses: processes that open one data dir's
// files at the same moment, new or of a schema without the identity, all
// end with one identity in both files: the file migrated second adopts the
// first one's, never a new one of its own.
func TestDataDirIdentityTwoProcesses(t *testing.T) {
	for _, older := range []bool{false, true} {
		t.Run(map[bool]string{false: "NewDir", true: "OlderDir"}[older], func(t *testing.T) {
			dir := t.TempDir()
			if older {
				v1 := pairSpec("")
				v1.Migrations = v1.Migrations[:1]
				for _, f := range []string{"checkpoints.sqlite", "business.sqlite"} {
					if _, err := openID(t, filepath.Join(dir, f), v1); err != nil {
						t.Fatal(err)
					}
				}
			}
			const n = 6
			var outs []*bufio.Scanner
			var cmds []interface{ Wait() error }
			for range n {
				c := testkit.Child(t, "open-pair", "PAIR_DIR="+dir)
				out, err := c.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				outs, cmds = append(outs, bufio.NewScanner(out)), append(cmds, c)
			}
			ids := map[string]bool{}
			for i, sc := range outs {
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) == 2 && len(f[0]) == 36 {
						if f[0] != f[1] {
							t.Errorf("process %d: checkpoints %s, business %s", i, f[0], f[1])
						}
						ids[f[0]] = true
					} else if len(f) > 0 && f[0] == "error" {
						t.Errorf("process %d: %s", i, sc.Text())
					}
				}
				if err := cmds[i].Wait(); err != nil {
					t.Errorf("process %d: %v", i, err)
				}
			}
			if len(ids) != 1 {
				t.Fatalf("%d identities in one data dir: %v", len(ids), ids)
			}
		})
	}
}
