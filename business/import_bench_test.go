package business

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkImportOrders imports a file of 200,000 one-row orders into a
// fresh business file (Fresh), and the same file again (Again: every order
// unchanged); First is the first import into a new data dir
// (ImportOrdersNew), the case scripts/bench.sh's first import times
// through the binary, as Again is its second; Parse is ParseOrders alone.
// Profile it with -cpuprofile to see where an import's time goes.
func BenchmarkImportOrders(b *testing.B) {
	const rows = 200_000
	path := filepath.Join(b.TempDir(), "orders.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "order_id,user,item,delivered_at,final_sale")
	day := time.Now().UTC().Add(-72 * time.Hour).Format(time.DateOnly)
	for i := range rows {
		fmt.Fprintf(w, "M%07d,demo-user,Bench item %d,%sT00:00:00Z,false\n", i, i, day)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	imp := func(b *testing.B, s *Store) {
		in, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close()
		res, err := s.ImportOrders(ctx, in, ParseOptions{User: "demo-user"})
		if err != nil || res.Rows != rows {
			b.Fatalf("import: %+v, %v", res.Rows, err)
		}
	}
	// Parse is the check alone (ParseOrders): the part of an import that
	// runs before the data dir is opened, on one core.
	b.Run("Parse", func(b *testing.B) {
		for range b.N {
			in, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			f, err := ParseOrders(ctx, in, ParseOptions{User: "demo-user"})
			if err != nil || f.Rows() != rows {
				b.Fatalf("parse: %v", err)
			}
			f.Close()
			in.Close()
		}
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("Fresh", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			s := mustOpen(b, filepath.Join(b.TempDir(), "business.sqlite"), Options{Create: true})
			b.StartTimer()
			imp(b, s)
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	// First is the first import into a data dir that does not exist
	// (ImportOrdersNew): the check beside the writer, in rollback-journal
	// mode, into a closed new file; Fresh is the same file the way an
	// import into an existing data dir writes it.
	b.Run("First", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			dbPath := filepath.Join(b.TempDir(), "business.sqlite")
			s := mustOpen(b, dbPath, Options{Create: true})
			s.Close()
			in, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			res, f, err := ImportOrdersNew(ctx, dbPath, time.Now(), in, ParseOptions{User: "demo-user"})
			b.StopTimer()
			if err != nil || res.Rows != rows {
				b.Fatalf("first import: %+v, %v", res.Rows, err)
			}
			f.Close()
			in.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("Again", func(b *testing.B) {
		s := mustOpen(b, filepath.Join(b.TempDir(), "business.sqlite"), Options{Create: true})
		defer s.Close()
		imp(b, s)
		b.ResetTimer()
		for range b.N {
			imp(b, s)
		}
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
