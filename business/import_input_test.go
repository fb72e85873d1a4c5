package business

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The line items of one order merge into an item of at most MaxItemBytes
// that names as many items as fit and counts the rest, each once; no item
// name is lost for a suffix, and nothing is cut inside a character.
func TestJoinItems(t *testing.T) {
	t.Parallel()
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name  string
		items []string // rows' items, in file order
		want  string
	}{
		{name: "One", items: []string{"Kettle"}, want: "Kettle"},
		{name: "RepeatedOnce", items: []string{"Kettle", "Mug", "Kettle"}, want: "Kettle; Mug"},
		{name: "ExactlyFull", items: []string{a(185), "Second item"}, want: a(185) + "; Second item"},
		{name: "OneByteOver", items: []string{a(188), "Second item"}, want: a(188) + " (+1 more)"},
		{name: "FirstLongSecondCounted", items: []string{a(190), "Second item"}, want: a(190) + " (+1 more)"},
		{name: "FirstTooLongBesideSuffix", items: []string{a(195), "Second item"}, want: a(200-len("… (+1 more)")) + "… (+1 more)"},
		{name: "FirstFullSize", items: []string{a(200), "b", "c"}, want: a(200-len("… (+2 more)")) + "… (+2 more)"},
		{name: "DroppedCountedOnce", items: []string{a(198), "x", "y", "x", "y"}, want: a(200-len("… (+2 more)")) + "… (+2 more)"},
		{name: "SuffixFitsBesideBoth", items: []string{a(90), a(95) + "b", a(20)}, want: a(90) + "; " + a(95) + "b (+1 more)"},
		{name: "SuffixTakesTheLastName", items: []string{a(90), a(105), "cccccc"}, want: a(90) + " (+2 more)"},
		{name: "RuneBoundary", items: []string{strings.Repeat("运", 66) + "ab", "z"}, want: strings.Repeat("运", 62) + "… (+1 more)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &group{order: Order{ID: "L8"}}
			for _, it := range tt.items {
				if err := g.addItem(it); err != nil {
					t.Fatal(err)
				}
			}
			g.finish()
			got := g.order.Item
			if got != tt.want {
				t.Fatalf("item %q (%d bytes), want %q (%d bytes)", got, len(got), tt.want, len(tt.want))
			}
			if len(got) > MaxItemBytes || !utf8.ValidString(got) || strings.HasPrefix(got, " ") {
				t.Fatalf("item %q: %d bytes, valid UTF-8 %v", got, len(got), utf8.ValidString(got))
			}
		})
	}
	t.Run("TooManyDistinct", func(t *testing.T) {
		g := &group{order: Order{ID: "L9"}}
		var err error
		for i := 0; err == nil && i <= maxLineItems; i++ {
			err = g.addItem(fmt.Sprintf("item %d", i))
		}
		if err == nil || !strings.Contains(err.Error(), "more than") {
			t.Fatalf("err = %v, want too many items", err)
		}
	})
}

// A line-item export's rows merge through the file reader as through
// JoinItems (the case the tester found: order L8).
func TestParseOrdersLineItemNames(t *testing.T) {
	t.Parallel()
	const h = "order_id,user,item,delivered_at,final_sale\n"
	first := strings.Repeat("n", 190)
	got, err := parsed(t, h+"L8,u,"+first+",,false\nL8,u,Second item,,false\n", ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := first + " (+1 more)"; len(got) != 1 || got[0].Item != want {
		t.Fatalf("orders %+v, want L8 %q", got, want)
	}
}

// Delivery times outside [2000-01-01, now + 1 day] are refused with their
// line, whatever form they take; a bare date needs --timezone as a time
// without a zone does; the teaching file's delivered_days_ago needs none.
func TestParseOrdersDeliveryRange(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		header  string
		value   string
		loc     *time.Location
		want    time.Time
		wantErr string
	}{
		{name: "ZeroDate", value: "0001-01-01", loc: time.UTC, wantErr: "line 2: delivered_at \"0001-01-01\" is before 2000-01-01"},
		{name: "ZeroTime", value: "0001-01-01T00:00:00Z", wantErr: "is before 2000-01-01"},
		{name: "LastSecondOf1999", value: "1999-12-31T23:59:59Z", wantErr: "is before 2000-01-01"},
		{name: "First2000", value: "2000-01-01T00:00:00Z", want: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "ADayAhead", value: "2026-12-01T12:00:00Z", want: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)},
		{name: "MoreThanADayAhead", value: "2026-12-01T12:00:01Z", wantErr: "line 2: delivered_at \"2026-12-01T12:00:01Z\" is more than 24h0m0s after now"},
		{name: "YearTypo", value: "2206-11-20", loc: time.UTC, wantErr: "after now"},
		{name: "BareDateNoZone", value: "2026-11-20", wantErr: "line 2: delivered_at \"2026-11-20\" has no time zone"},
		{name: "BareDateInZone", value: "2026-11-20", loc: time.UTC, want: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)},
		{name: "DaysAgoNeedsNoZone", header: "delivered_days_ago", value: "3", want: now.Add(-72 * time.Hour)},
		{name: "DaysAgoBefore2000", header: "delivered_days_ago", value: "36000", wantErr: "line 2: delivered_days_ago 36000 is before 2000-01-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := tt.header
			if col == "" {
				col = "delivered_at"
			}
			file := "order_id,user,item," + col + ",final_sale\nC1,u,Kettle," + tt.value + ",false\n"
			got, err := parsed(t, file, ParseOptions{Location: tt.loc, Now: now})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != 1 || got[0].DeliveredAt == nil || !got[0].DeliveredAt.Equal(tt.want) {
				t.Fatalf("orders %+v, %v; want delivered %s", got, err, tt.want)
			}
		})
	}
}

// A UTF-16 file whose last character is one byte short is refused, not
// read with the byte dropped or replaced.
func TestParseOrdersOddUTF16(t *testing.T) {
	t.Parallel()
	plain := "order_id,user,item,delivered_at,final_sale\nC1,u,Kettle,,false\n"
	for name, file := range map[string]string{
		"LEBOM":        encodeUTF16(plain, false, true) + "x",
		"BEBOM":        encodeUTF16(plain, true, true) + "x",
		"LE":           encodeUTF16(plain, false, false) + "x",
		"NoFinalBreak": encodeUTF16(strings.TrimSuffix(plain, "\n"), false, true) + "x",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseOrders(context.Background(), strings.NewReader(file), ParseOptions{Operator: true})
			if err == nil || !strings.Contains(err.Error(), "UTF-16 file with an odd number of bytes") {
				t.Fatalf("err = %v, want the odd byte count named", err)
			}
		})
	}
}

// Fields lose the ASCII spaces and tabs around them and nothing else: a
// no-break space stays, and the id and user rules refuse it.
func TestParseOrdersTrimming(t *testing.T) {
	t.Parallel()
	const h = "order_id,user,item,delivered_at,final_sale\n"
	got, err := parsed(t, h+"\t C1 ,  u\t,\"  pad  \",,false\n", ParseOptions{})
	if err != nil || len(got) != 1 || got[0].ID != "C1" || got[0].User != "u" || got[0].Item != "pad" {
		t.Fatalf("orders %+v, %v; want C1 of u, item pad", got, err)
	}
	got, err = parsed(t, h+"C2,u,\u00a0nbsp,,false\n", ParseOptions{})
	if err != nil || len(got) != 1 || got[0].Item != "\u00a0nbsp" {
		t.Fatalf("orders %+v, %v; want the no-break space kept in the item", got, err)
	}
	_, err = parsed(t, h+"C3,\u00a0u,Kettle,,false\n", ParseOptions{})
	if err == nil || !strings.Contains(err.Error(), "line 2: user \"\\u00a0u\" starts or ends with a space character") {
		t.Fatalf("err = %v, want the user refused", err)
	}
	_, err = ParseOrders(context.Background(), strings.NewReader(h+"C4\u00a0,u,Kettle,,false\n"), ParseOptions{Operator: true, CheckID: func(id string) error {
		if strings.ContainsRune(id, '\u00a0') {
			return fmt.Errorf("order id %q holds a space", id)
		}
		return nil
	}})
	if err == nil || !strings.Contains(err.Error(), "line 2: order id") {
		t.Fatalf("err = %v, want the id with a no-break space refused", err)
	}
}

// idHashes finds every id added more than once, across its chunks, and
// nothing else, at either width (at 32 bits a hash repeated by chance
// may come back too: the caller checks those ids exactly).
func TestIDHashesRepeats(t *testing.T) {
	t.Parallel()
	t.Run("64", func(t *testing.T) { testIDHashes(t, newIDHashes[uint64](), true) })
	t.Run("32", func(t *testing.T) { testIDHashes(t, newIDHashes[uint32](), false) })
}

func testIDHashes[T hashWord](t *testing.T, h *idHashes[T], exact bool) {
	n := 2*idChunk + 10 // three chunks
	for i := range n {
		h.add(fmt.Sprintf("O%d", i))
	}
	h.add("O7")      // back in the third chunk, first in the first
	h.add("O131080") // the third chunk's own, twice
	h.add("O131080") // and a third time: one repeat
	seven, other := h.hash("O7"), h.hash("O131080")
	// 131,082 ids share about two 32-bit hashes by chance.
	rep, over := h.repeats(100)
	if over || !rep[seven] || !rep[other] || (exact && len(rep) != 2) || len(rep) > 20 {
		t.Fatalf("repeats %d (over %v), want O7 and O131080", len(rep), over)
	}
	h2 := newIDHashes[T]()
	for i := range 5 {
		h2.add(fmt.Sprintf("D%d", i))
		h2.add(fmt.Sprintf("D%d", i))
	}
	if rep, over := h2.repeats(3); len(rep) != 3 || !over {
		t.Fatalf("repeats %d (over %v), want 3 and over", len(rep), over)
	}
}
