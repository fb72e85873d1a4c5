package termtext

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"text/tabwriter"
)

// On text of one-column-wide characters Table writes what
// tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) writes: the same column
// blocks, the same padding, lines without a tab ending the blocks, a last
// line without a newline, text written in pieces.
func TestTableAsTabwriter(t *testing.T) {
	tests := []string{
		"",
		"no tabs\n",
		"a\tbb\tccc\nxxxx\ty\tz\n",
		"H1\tH2\tH3\nshort\tlonger cell\tlast\n\nplain line\nx\ty\n",
		"a\tb\tc\td\nlonger\tb\n1\t2\t3\t4\n",
		"a\t\tc\n\t\t\n",
		"trailing\tpart",
		"x\ty\t\n",
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var b strings.Builder
		for range r.IntN(8) {
			for range r.IntN(5) {
				b.WriteString(strings.Repeat("w", r.IntN(7)))
				b.WriteByte('\t')
			}
			b.WriteString(strings.Repeat("z", r.IntN(4)))
			b.WriteByte('\n')
		}
		tests = append(tests, b.String())
	}
	for i, in := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var want, got bytes.Buffer
			tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
			tb := NewTable(&got)
			for _, piece := range pieces(in, r) {
				tw.Write([]byte(piece))
				tb.Write([]byte(piece))
			}
			tw.Flush()
			if err := tb.Flush(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("input %q:\ngot  %q\nwant %q", in, got.String(), want.String())
			}
		})
	}
}

// pieces cuts s at random places.
func pieces(s string, r *rand.Rand) []string {
	var out []string
	for len(s) > 0 {
		n := 1 + r.IntN(len(s))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// A wide character takes two columns: the columns after a cell holding
// 运动鞋 line up with those of the other lines on a terminal.
func TestTableWideCharacters(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b)
	fmt.Fprintln(tb, "ORDER\tITEM\tDELIVERED")
	fmt.Fprintln(tb, "A3001\tTrail running shoes\t2026-11-29")
	fmt.Fprintln(tb, "A3003\t运动鞋 42码\t2026-11-26")
	fmt.Fprintln(tb, "A3002\tWool scarf — charcoal\t2026-11-21")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "ORDER  ITEM                   DELIVERED\n" +
		"A3001  Trail running shoes    2026-11-29\n" +
		"A3003  运动鞋 42码            2026-11-26\n" +
		"A3002  Wool scarf — charcoal  2026-11-21\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}
