package business

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestReadAheadBoundsBatchBytes: a batch of readAhead ends after the
// record that brings its fields to aheadBytes, so a file of huge quoted
// fields (a record spanning many lines) keeps a few records in memory,
// not aheadRows of them (a 60 MB file of 1 MB fields took 72 MiB of RSS
// against 25 MiB when batches were bounded by rows alone); records of
// usual size still fill a batch to aheadRows.
func TestReadAheadBoundsBatchBytes(t *testing.T) {
	t.Parallel()
	big := strings.Repeat(strings.Repeat("y", 999)+"\n", 100) // 100,000 bytes over 100 lines
	for _, tc := range []struct {
		name     string
		rows     int
		item     string
		maxBatch int // most records a batch may hold
	}{
		{"HugeQuotedFields", 40, `"` + big + `"`, 1 + aheadBytes/len(big)},
		{"UsualRows", 2000, "Pen", aheadRows},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var csv strings.Builder
			csv.WriteString("order_id,user,item,delivered_at,final_sale\n")
			for i := range tc.rows {
				fmt.Fprintf(&csv, "F%d,demo-user,%s,,false\n", i, tc.item)
			}
			tb, err := OpenTable(strings.NewReader(csv.String()), ordersSpec, MaxOrdersFileBytes)
			if err != nil {
				t.Fatal(err)
			}
			a := readAhead(context.Background(), tb)
			defer a.stop()
			rows, most := 0, 0
			for {
				b, err := a.next()
				if err != nil {
					t.Fatal(err)
				}
				if b == nil {
					break
				}
				rows += len(b.lines)
				most = max(most, len(b.lines))
				a.free(b)
			}
			if rows != tc.rows {
				t.Fatalf("read %d records, want %d", rows, tc.rows)
			}
			if most > tc.maxBatch {
				t.Errorf("a batch held %d records, want at most %d", most, tc.maxBatch)
			}
			if tc.name == "UsualRows" && most != aheadRows {
				t.Errorf("the largest batch of usual rows held %d records, want %d", most, aheadRows)
			}
		})
	}
}
