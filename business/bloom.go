package business

import "hash/maphash"

// bloom is a Bloom filter of strings: has is false for a string never
// added, and true for one added or, rarely (about 0.1 % at the size it was
// made for), for another. ParseOrders uses it to find order ids that come
// back in a file in memory that does not grow with the file, then checks
// each id it finds exactly.
type bloom struct {
	bits []uint64
	m    uint64 // number of bits
	seed maphash.Seed
}

// bloomHashes is how many bits a string sets; with bloomBitsPer bits per
// string the filter answers wrongly for about 0.1 % of strings.
const (
	bloomHashes  = 10
	bloomBitsPer = 15
)

// newBloom makes a filter for up to n strings (about 1.9 MB for a million;
// a page of it is only touched, and so held in memory, when a string's
// bit falls on it).
func newBloom(n int) *bloom {
	m := uint64(n)*bloomBitsPer + 64
	return &bloom{bits: make([]uint64, m/64+1), m: m, seed: maphash.MakeSeed()}
}

// positions calls fn with the bloomHashes bit positions of s (double
// hashing: h1 + i·h2).
func (b *bloom) positions(s string, fn func(uint64) bool) bool {
	h := maphash.String(b.seed, s)
	h1, h2 := h, h>>32|h<<32|1
	for i := uint64(0); i < bloomHashes; i++ {
		if !fn((h1 + i*h2) % b.m) {
			return false
		}
	}
	return true
}

func (b *bloom) add(s string) {
	b.positions(s, func(p uint64) bool {
		b.bits[p/64] |= 1 << (p % 64)
		return true
	})
}

func (b *bloom) has(s string) bool {
	return b.positions(s, func(p uint64) bool { return b.bits[p/64]&(1<<(p%64)) != 0 })
}
