//go:build unix

package business

import (
	"syscall"
	"unsafe"
)

// allocHashes returns an empty slice of capacity n whose memory is mapped
// from the system, outside Go's heap: the hashes of a million ids (8 MB)
// would otherwise let the heap grow by as much again before the garbage
// collector runs, and an import's memory is to stay under 32 MiB. It
// falls back to make when the mapping fails.
func allocHashes[T hashWord](n int) []T {
	size := int(unsafe.Sizeof(T(0)))
	b, err := syscall.Mmap(-1, 0, n*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]T, 0, n)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)[:0]
}

// freeHashes unmaps a slice of allocHashes (nothing for one of make: the
// collector frees it).
func freeHashes[T hashWord](s []T) {
	if cap(s) == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s[:1]))), cap(s)*int(unsafe.Sizeof(T(0))))
	_ = syscall.Munmap(b) // EINVAL for memory of make: nothing to undo
}
