package returns_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"assistant/flow/returns"
	"assistant/internal/sqlstore"
	"assistant/runs"
)

// BenchmarkDecide runs one decide run of b.N approvals, each of a task a
// batch parked at approval (the batch is not timed), and reports
// decisions per second and durable commits per decision.
func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	svc, _ := openService(b, b.N)
	parkTasks(b, svc, "d", b.N, 0)
	drows, dfp := approvals(b, "d", b.N)
	syncsBefore := sqlstore.Syncs()
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
	b.ReportMetric(float64(sqlstore.Syncs()-syncsBefore)/float64(b.N), "fsyncs/decision")
}

// parkTasks parks n tasks, prefix0 … prefix(n-1), each on its own order
// P0 … P(n-1) of the ones openService made, at approval, with a batch
// named "parked" of chunk rows a commit (0: the default).
func parkTasks(tb testing.TB, svc *returns.Service, prefix string, n, chunk int) {
	tb.Helper()
	var b strings.Builder
	b.WriteString("task,order,reason\n")
	for i := range n {
		fmt.Fprintf(&b, "%s%d,P%d,reason %d\n", prefix, i, i, i)
	}
	rows, fp, err := returns.ParseBatch(strings.NewReader(b.String()))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := svc.StartBatch(context.Background(), returns.BatchOptions{Batch: "parked", User: "demo-user", Rows: rows, Fingerprint: fp, Chunk: chunk}); err != nil {
		tb.Fatal(err)
	}
}

// approvals returns decide's rows approving the n tasks parkTasks parked
// with prefix, and their fingerprint.
func approvals(tb testing.TB, prefix string, n int) ([]runs.BatchRow, string) {
	tb.Helper()
	var b strings.Builder
	b.WriteString("task,action\n")
	for i := range n {
		fmt.Fprintf(&b, "%s%d,approve\n", prefix, i)
	}
	rows, fp, err := returns.ParseDecisions(strings.NewReader(b.String()))
	if err != nil {
		tb.Fatal(err)
	}
	return rows, fp
}

// BenchmarkCommitter gives b.N approvals, each of a task a batch parked
// at approval (not timed), through one Committer from 64 goroutines, as
// 64 API clients do, and reports decisions per second and durable
// commits per decision.
func BenchmarkCommitter(b *testing.B) {
	ctx := context.Background()
	svc, _ := openService(b, b.N)
	parkTasks(b, svc, "g", b.N, 0)
	c := svc.NewCommitter(returns.GroupOptions{})
	next := make(chan int, b.N)
	for i := range b.N {
		next <- i
	}
	close(next)
	syncsBefore := sqlstore.Syncs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := range next {
				o := returns.ResumeOptions{Task: fmt.Sprintf("g%d", i), User: "demo-user", Action: returns.ActionApprove, Version: 1}
				if _, err := c.Decide(ctx, o); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(sqlstore.Syncs()-syncsBefore)/float64(b.N), "fsyncs/decision")
}
