package testkit

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// SeedOrders returns the teaching orders the CLI seeds a new store with:
// the repository's testdata/orders.csv, found from this file's place, so
// a test of any package reads the same file. A failure to read it fails
// tb.
func SeedOrders(tb testing.TB) []byte {
	tb.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("testkit: cannot tell where the repository is")
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "testdata", "orders.csv"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
