//go:build !unix

package business

// allocHashes returns an empty slice of capacity n.
func allocHashes[T hashWord](n int) []T { return make([]T, 0, n) }

// freeHashes leaves s to the garbage collector.
func freeHashes[T hashWord](s []T) {}
