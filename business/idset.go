package business

import (
	"hash/maphash"
	"slices"
)

// idChunk is how many hashes one chunk of an idHashes holds (512 KiB):
// the list grows a chunk at a time, never by copying what it holds.
const idChunk = 64 << 10

// idHashes finds the strings (order ids) that occur more than once in a
// file, in 8 bytes per string and one reading: it keeps a 64-bit hash of
// each, and repeats sorts them and returns the hashes seen twice or more.
// Two different ids share a hash with a chance of about n²/2⁶⁵ (3·10⁻⁸
// for a million ids), so a repeated hash almost always is a repeated id;
// the caller checks those exactly. ParseOrders uses it to find orders
// whose rows come back after other orders without a second reading of a
// good file.
type idHashes struct {
	seed   maphash.Seed
	chunks [][]uint64
}

func newIDHashes() *idHashes { return &idHashes{seed: maphash.MakeSeed()} }

// hash is the hash add keeps for s.
func (h *idHashes) hash(s string) uint64 { return maphash.String(h.seed, s) }

// add keeps the hash of s.
func (h *idHashes) add(s string) {
	n := len(h.chunks)
	if n == 0 || len(h.chunks[n-1]) == idChunk {
		h.chunks = append(h.chunks, allocHashes(idChunk))
		n++
	}
	h.chunks[n-1] = append(h.chunks[n-1], h.hash(s))
}

// release returns the chunks' memory.
func (h *idHashes) release() {
	for _, c := range h.chunks {
		freeHashes(c)
	}
	h.chunks = nil
}

// repeats returns the hashes added more than once, at most max of them
// (over: more were), and drops what it kept.
func (h *idHashes) repeats(max int) (rep map[uint64]bool, over bool) {
	rep = map[uint64]bool{}
	for _, c := range h.chunks {
		slices.Sort(c)
	}
	// Merge the sorted chunks: equal neighbours in the merged order are
	// the repeats. A file holds at most 16 chunks, so the smallest head
	// is found by looking at each.
	pos := make([]int, len(h.chunks))
	var last uint64
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
		if !first && v == last && !rep[v] {
			if len(rep) == max {
				over = true
				break
			}
			rep[v] = true
		}
		last, first = v, false
	}
	h.release()
	return rep, over
}
