package returns_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"assistant/flow/returns"
	"assistant/internal/sqlitedb"
)

// BenchmarkDecide runs one decide run of b.N approvals, each of a task a
// batch parked at approval (the batch is not timed), and reports
// decisions per second and durable commits per decision.
func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	svc, _ := openService(b, b.N)
	var rowsCSV, decisions strings.Builder
	rowsCSV.WriteString("task,order,reason\n")
	decisions.WriteString("task,action\n")
	for i := range b.N {
		fmt.Fprintf(&rowsCSV, "d%d,P%d,reason %d\n", i, i, i)
		fmt.Fprintf(&decisions, "d%d,approve\n", i)
	}
	rows, fp, err := returns.ParseBatch(strings.NewReader(rowsCSV.String()))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.StartBatch(ctx, returns.BatchOptions{Batch: "parked", User: "demo-user", Rows: rows, Fingerprint: fp}); err != nil {
		b.Fatal(err)
	}
	drows, dfp, err := returns.ParseDecisions(strings.NewReader(decisions.String()))
	if err != nil {
		b.Fatal(err)
	}
	syncsBefore := sqlitedb.Syncs()
	b.ResetTimer()
	v, err := svc.StartDecide(ctx, returns.DecideOptions{User: "demo-user", Rows: drows, Fingerprint: dfp})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if v.Batch.Position != b.N || v.Batch.Counts[returns.StageSubmitted] != b.N {
		b.Fatalf("decide handled %d of %d rows: %v", v.Batch.Position, b.N, v.Batch.Counts)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(sqlitedb.Syncs()-syncsBefore)/float64(b.N), "fsyncs/decision")
}
