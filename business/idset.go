package business

import (
	"hash/maphash"
	"slices"
	"unsafe"
)

// idChunk is how many hashes one chunk of an idHashes holds (512 KiB of
// 64-bit hashes, 256 KiB of 32-bit ones): the list grows a chunk at a
// time, never by copying what it holds.
const idChunk = 64 << 10

// hashWord is the width of the hashes an idHashes keeps.
type hashWord interface{ ~uint32 | ~uint64 }

// idHashes finds the strings (order ids) that occur more than once in a
// file, in 8 (uint64) or 4 (uint32) bytes per string and one reading: it
// keeps a hash of each, and repeats sorts them and returns the hashes seen
// twice or more. Two different ids share a 64-bit hash with a chance of
// about n²/2⁶⁵ (3·10⁻⁸ for a million ids), so a repeated hash almost always
// is a repeated id; 32-bit hashes of a million ids share about 116 hashes,
// so a repeated hash is often not. The caller checks the ids of every
// repeated hash exactly either way (scatterCheck), so the width costs a
// second reading of the spool, never a wrong answer; with at most
// MaxOrdersRows ids, the chance collisions fill maxScattered is nil.
// ParseOrders uses 64-bit hashes, to find orders whose rows come back
// after other orders without a second reading of a good file;
// ImportOrdersStream 32-bit ones, whose 4 MB live beside the writer's.
type idHashes[T hashWord] struct {
	seed   maphash.Seed
	chunks [][]T
}

func newIDHashes[T hashWord]() *idHashes[T] { return &idHashes[T]{seed: maphash.MakeSeed()} }

// chanceRepeats is how many more hashes than the ids it looks for a
// caller of repeats should take from an idHashes of width T: the hashes
// that repeat by chance alone, with room to spare (about 116 for
// MaxOrdersRows 32-bit hashes, a chance of 3·10⁻⁸ for 64-bit ones), so
// that they never take the place of an id that does come back.
func (h *idHashes[T]) chanceRepeats() int {
	if unsafe.Sizeof(T(0)) < 8 {
		return 4096
	}
	return 0
}

// hash is the hash add keeps for s, widened to 64 bits.
func (h *idHashes[T]) hash(s string) uint64 { return uint64(T(maphash.String(h.seed, s))) }

// add keeps the hash of s.
func (h *idHashes[T]) add(s string) {
	n := len(h.chunks)
	if n == 0 || len(h.chunks[n-1]) == idChunk {
		h.chunks = append(h.chunks, allocHashes[T](idChunk))
		n++
	}
	h.chunks[n-1] = append(h.chunks[n-1], T(maphash.String(h.seed, s)))
}

// release returns the chunks' memory.
func (h *idHashes[T]) release() {
	for _, c := range h.chunks {
		freeHashes(c)
	}
	h.chunks = nil
}

// repeats returns the hashes added more than once (widened to 64 bits),
// at most max of them (over: more were), and drops what it kept.
func (h *idHashes[T]) repeats(max int) (rep map[uint64]bool, over bool) {
	rep = map[uint64]bool{}
	for _, c := range h.chunks {
		slices.Sort(c)
	}
	// Merge the sorted chunks: equal neighbours in the merged order are
	// the repeats. A file holds at most 16 chunks, so the smallest head
	// is found by looking at each.
	pos := make([]int, len(h.chunks))
	var last T
	first := true
	for {
		min := -1
		for i, c := range h.chunks {
			if pos[i] < len(c) && (min < 0 || c[pos[i]] < h.chunks[min][pos[min]]) {
				min = i
			}
		}
		if min < 0 {
			break
		}
		v := h.chunks[min][pos[min]]
		pos[min]++
		if !first && v == last && !rep[uint64(v)] {
			if len(rep) == max {
				over = true
				break
			}
			rep[uint64(v)] = true
		}
		last, first = v, false
	}
	h.release()
	return rep, over
}
