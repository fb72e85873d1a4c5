package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"assistant/internal/pgtest"
)

// BenchmarkRows writes chunks of 100 batch rows (each 3 checkpoints and 1
// pending write, of the sizes a return task writes up to its first
// question: bufferRow) to a local server, one op per chunk, and reports
// rows/s: through the plain store (4 commits a row) and through a write
// buffer (Preload of the chunk's threads, one Flush of 4 round trips).
// The server of pgtest runs with fsync off: a commit costs its round trip
// and WAL write, not a disk flush.
func BenchmarkRows(b *testing.B) {
	const rows = 100
	ctx := context.Background()
	for _, mode := range []string{"Store", "Buffer"} {
		b.Run(mode, func(b *testing.B) {
			s := mustOpen(b, pgtest.Database(b))
			chunk := 0
			for b.Loop() {
				ids := make([]string, rows)
				for i := range ids {
					ids[i] = fmt.Sprintf("c%d-r%d", chunk, i)
				}
				chunk++
				if mode == "Store" {
					for _, id := range ids {
						bufferRow(b, s, id, "")
					}
					continue
				}
				buf := s.NewBuffer()
				if err := buf.Preload(ctx, ids); err != nil {
					b.Fatal(err)
				}
				for _, id := range ids {
					bufferRow(b, buf, id, "")
				}
				if err := buf.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
