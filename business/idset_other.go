//go:build !unix

package business

// allocHashes returns an empty slice of capacity n.
func allocHashes(n int) []uint64 { return make([]uint64, 0, n) }

// freeHashes leaves s to the garbage collector.
func freeHashes(s []uint64) {}
