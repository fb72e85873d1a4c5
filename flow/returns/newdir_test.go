package returns_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"assistant/flow/returns"
)

// NewDataDirAside makes a temporary directory beside a data dir that does
// not exist, and its parents; discard removes it and the parents it made;
// PlaceDataDir gives it the data dir's name, never over something there.
func TestDataDirAside(t *testing.T) {
	t.Run("ExistingDataDir", func(t *testing.T) {
		dir := t.TempDir()
		if _, _, err := returns.NewDataDirAside(dir); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("err %v, want fs.ErrExist", err)
		}
	})
	t.Run("DiscardRemovesWhatItMade", func(t *testing.T) {
		root := t.TempDir()
		dir := filepath.Join(root, "a", "b", "data")
		tmp, discard, err := returns.NewDataDirAside(dir)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Dir(tmp) != filepath.Dir(dir) || !strings.HasPrefix(filepath.Base(tmp), ".data.import-") {
			t.Fatalf("temporary dir %s, want .data.import-… beside %s", tmp, dir)
		}
		if st, err := os.Stat(tmp); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("temporary dir: %v %v, want mode 0700", st, err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "business.sqlite"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		discard()
		if _, err := os.Stat(filepath.Join(root, "a")); !os.IsNotExist(err) {
			t.Fatalf("parents after discard: %v, want removed", err)
		}
	})
	t.Run("Place", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		tmp, _, err := returns.NewDataDirAside(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "business.sqlite"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := returns.PlaceDataDir(tmp, dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "business.sqlite")); err != nil {
			t.Fatalf("placed data dir: %v", err)
		}
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Fatalf("temporary dir after placing: %v, want gone", err)
		}
	})
	t.Run("TakenMeanwhile", func(t *testing.T) {
		for _, other := range []string{"empty", "files"} {
			t.Run(other, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "data")
				tmp, discard, err := returns.NewDataDirAside(dir)
				if err != nil {
					t.Fatal(err)
				}
				defer discard()
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if other == "files" {
					if err := os.WriteFile(filepath.Join(dir, "checkpoints.sqlite"), []byte("theirs"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err := returns.PlaceDataDir(tmp, dir); !errors.Is(err, returns.ErrDataDirTaken) {
					t.Fatalf("err %v, want ErrDataDirTaken", err)
				}
				if _, err := os.Stat(tmp); err != nil {
					t.Fatalf("temporary dir: %v, want it left for the caller", err)
				}
				if other == "files" {
					if b, err := os.ReadFile(filepath.Join(dir, "checkpoints.sqlite")); err != nil || string(b) != "theirs" {
						t.Fatalf("the other process's file: %q %v, want kept", b, err)
					}
				}
			})
		}
	})
}
