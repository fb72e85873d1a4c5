package business

import "hash/maphash"

// bloom is a blocked Bloom filter of strings: add reports false for a
// string never added before, and true for one added before or, rarely
// (about 0.2 % at the size it was made for), for another. ParseOrders uses
// it to find order ids that come back in a file, in memory that does not
// grow with the file, then checks each id it finds exactly. The bits of a
// string all fall in one block of 512 (a cache line), so adding one costs
// one miss of the CPU's cache, not one per bit.
type bloom struct {
	blocks [][8]uint64
	seed   maphash.Seed
}

// bloomHashes is how many bits a string sets; with bloomBitsPer bits per
// string the filter answers wrongly for about 0.2 % of strings.
const (
	bloomHashes  = 10
	bloomBitsPer = 15
)

// newBloom makes a filter for up to n strings (about 1.9 MB for a million;
// a page of it is only held in memory once a string's block falls on it).
func newBloom(n int) *bloom {
	return &bloom{blocks: make([][8]uint64, n*bloomBitsPer/512+1), seed: maphash.MakeSeed()}
}

// add adds s and reports whether all its bits were set before.
func (b *bloom) add(s string) bool {
	h := maphash.String(b.seed, s)
	blk := &b.blocks[(h>>32)%uint64(len(b.blocks))]
	h1, h2 := uint32(h), uint32(h>>32)|1
	had := true
	for i := uint32(0); i < bloomHashes; i++ {
		p := (h1 + i*h2) % 512
		w, bit := &blk[p/64], uint64(1)<<(p%64)
		if *w&bit == 0 {
			had = false
			*w |= bit
		}
	}
	return had
}
