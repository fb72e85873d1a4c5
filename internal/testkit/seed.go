package testkit

import (
	"errors"
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
	b, err := ReadSeedOrders()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// ReadSeedOrders is SeedOrders for a caller without a testing.TB (a
// FileTemplate's maker): the bytes of testdata/orders.csv, or the error
// reading them.
func ReadSeedOrders() ([]byte, error) {
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("testkit: cannot tell where the repository is")
	}
	return os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "testdata", "orders.csv"))
}
