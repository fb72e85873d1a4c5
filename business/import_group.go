package business

import (
	"fmt"
	"hash/maphash"
	"strings"
	"unicode/utf8"
)

// group is one order of the file: its consecutive rows merged.
type group struct {
	order Order
	line  int      // first line
	last  int      // last line
	items []string // distinct items, in file order, while their join fits MaxItemBytes
	size  int      // bytes of items joined with itemSep
	more  int      // distinct items after those in items
	// dropped holds a hash of each item counted in more, so that an item
	// that comes back is counted once.
	dropped map[uint64]struct{}
	// one backs items for the common order of one item: no allocation
	// of its own.
	one [1]string
}

// itemSep joins the items of a line-item export's rows.
const itemSep = "; "

// maxLineItems is how many distinct items one order's rows may name; a
// row past it is refused (no shop sells that many lines in one order, and
// the hashes of the items not named are kept to count each once).
const maxLineItems = 10_000

// itemSeed hashes the items of an order that are counted, not named.
var itemSeed = maphash.MakeSeed()

// addItem adds the item of one more row of the order: named when the
// items so far and it, joined, fit MaxItemBytes, else counted (once per
// distinct item). It fails past maxLineItems distinct items.
func (g *group) addItem(item string) error {
	for _, it := range g.items {
		if it == item {
			return nil
		}
	}
	if g.more == 0 {
		size := len(item)
		if len(g.items) > 0 {
			size += g.size + len(itemSep)
		}
		if size <= MaxItemBytes {
			if g.items == nil {
				g.items = g.one[:0]
			}
			g.items = append(g.items, item)
			g.size = size
			return nil
		}
		g.dropped = map[uint64]struct{}{}
	}
	h := maphash.String(itemSeed, item)
	if _, ok := g.dropped[h]; ok {
		return nil
	}
	if len(g.items)+g.more >= maxLineItems {
		return fmt.Errorf("order %s has more than %d distinct items", g.order.ID, maxLineItems)
	}
	g.dropped[h] = struct{}{}
	g.more++
	return nil
}

// finish sets the order's item from the rows' items (JoinItems).
func (g *group) finish() {
	g.order.Item = JoinItems(g.items, g.more)
	g.dropped = nil
}

// JoinItems is the item of an order whose rows name items (distinct, in
// file order, joined with "; " to at most MaxItemBytes) and more items
// after those: as many of items as fit MaxItemBytes together with the
// suffix " (+N more)", N counting every item not named. The first item is
// always named, cut at a rune boundary and ended with "…" when it does not
// fit beside the suffix. The result is at most MaxItemBytes bytes.
func JoinItems(items []string, more int) string {
	if more == 0 && len(items) > 0 {
		if j := strings.Join(items, itemSep); len(j) <= MaxItemBytes {
			return j
		}
	}
	for k := len(items); k >= 1; k-- {
		suffix := fmt.Sprintf(" (+%d more)", len(items)-k+more)
		if j := strings.Join(items[:k], itemSep); len(j)+len(suffix) <= MaxItemBytes {
			return j + suffix
		}
	}
	if len(items) == 0 {
		return ""
	}
	suffix := fmt.Sprintf("… (+%d more)", len(items)-1+more)
	first := items[0][:MaxItemBytes-len(suffix)]
	for !utf8.ValidString(first) {
		first = first[:len(first)-1] // cut at a rune boundary
	}
	return first + suffix
}

// groupPool is how many groups an OrdersFile keeps for reuse: the batches
// that may be under way between its reader and its writer.
const groupPool = (importQueue + 2) * importBatch

// newGroup returns a group to fill: one given back by freeGroup, or a new
// one (a file's orders reuse a few thousand groups instead of allocating
// one each).
func (f *OrdersFile) newGroup() *group {
	select {
	case g := <-f.pool:
		*g = group{}
		return g
	default:
		return new(group)
	}
}

// freeGroup gives a group back for reuse; the caller keeps nothing of it
// but copies (strings are never changed).
func (f *OrdersFile) freeGroup(g *group) {
	select {
	case f.pool <- g:
	default:
	}
}
