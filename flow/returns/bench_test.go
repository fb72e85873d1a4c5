package returns_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"assistant/checkpoints"
	"assistant/flow/returns"
	"assistant/internal/sqlstore"
)

// commits counts committed write transactions on every SQLite connection of
// this test binary, businessCommits those to a business.sqlite. At
// synchronous=NORMAL in WAL mode a commit does not fsync; the durable ones
// are counted by sqlstore.Syncs (scripts/bench.sh also counts the fsync
// system calls themselves with strace).
var commits, businessCommits atomic.Int64

func init() {
	sqlite.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, dsn string) error {
		business := strings.Contains(dsn, returns.BusinessFile)
		if h, ok := conn.(sqlite.HookRegisterer); ok {
			h.RegisterCommitHook(func() int32 {
				commits.Add(1)
				if business {
					businessCommits.Add(1)
				}
				return 0
			})
		}
		return nil
	})
}

// openService opens a Service over a fresh data dir with the teaching orders
// and n more eligible orders P0…P(n-1) of demo-user.
func openService(tb testing.TB, n int) (*returns.Service, string) {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	seed, err := os.ReadFile("../../testdata/orders.csv")
	if err != nil {
		tb.Fatal(err)
	}
	cps, err := checkpoints.OpenSQLite(ctx, filepath.Join(dir, returns.CheckpointsFile), checkpoints.SQLiteOptions{Create: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cps.Close() })
	svc, err := returns.Open(ctx, returns.Config{Business: returns.DataDir{Dir: dir, Mode: returns.CreateIfMissing, Seed: seed}, Checkpoints: cps})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close() })
	var b strings.Builder
	b.WriteString("order_id,user,item,delivered_at,final_sale\n")
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.DateOnly) + "T00:00:00Z" // a time zone: a bare date needs --timezone
	for i := range n {
		fmt.Fprintf(&b, "P%d,demo-user,Item %d,%s,false\n", i, i, day)
	}
	if n == 0 {
		return svc, dir // an import of no orders is refused
	}
	if _, err := svc.ImportOrders(ctx, strings.NewReader(b.String())); err != nil {
		tb.Fatal(err)
	}
	return svc, dir
}

// BenchmarkStartApprove runs start then approve of one task per op in one
// process, with the default storage settings, and reports commits and
// durable commits (fsyncs) per task and the checkpoint storage each
// finished task leaves.
func BenchmarkStartApprove(b *testing.B) {
	ctx := context.Background()
	svc, dir := openService(b, b.N)
	before, syncsBefore := commits.Load(), sqlstore.Syncs()
	b.ResetTimer()
	for i := range b.N {
		task := fmt.Sprintf("t%d", i)
		if _, err := svc.Start(ctx, returns.StartOptions{Task: task, User: "demo-user", Order: fmt.Sprintf("P%d", i), Reason: "bench"}); err != nil {
			b.Fatal(err)
		}
		v, err := svc.Resume(ctx, returns.ResumeOptions{Task: task, User: "demo-user", Action: returns.ActionApprove})
		if err != nil {
			b.Fatal(err)
		}
		if v.Stage != returns.StageSubmitted {
			b.Fatalf("stage %s", v.Stage)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(commits.Load()-before)/float64(b.N), "commits/task")
	b.ReportMetric(float64(sqlstore.Syncs()-syncsBefore)/float64(b.N), "fsyncs/task")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, returns.CheckpointsFile)+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var bytes, rows float64
	if err := db.QueryRow(`SELECT
		(SELECT coalesce(sum(length(thread_id) + length(checkpoint_id) + coalesce(length(pruned_parent_id), 0) + length(coalesce(values_json, '')) + length(coalesce(next_json, '')) + coalesce(length(metadata_json), 0) + CASE WHEN created_at IS NULL THEN 0 ELSE 8 END + 24), 0) FROM checkpoints)
		+ (SELECT coalesce(sum(length(thread_id) + 8 + length(task_id) + length(kind) + length(node) + length(coalesce(value_json, '')) + 8), 0) FROM writes),
		(SELECT count(*) FROM checkpoints) + (SELECT count(*) FROM writes)`).Scan(&bytes, &rows); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(bytes/float64(b.N), "ckpt_bytes/task")
	b.ReportMetric(rows/float64(b.N), "ckpt_rows/task")
}

// BenchmarkBatch runs one batch of b.N rows (each row's task parks at
// approval) and reports rows per second and durable commits per row.
func BenchmarkBatch(b *testing.B) {
	ctx := context.Background()
	svc, _ := openService(b, b.N)
	var csv strings.Builder
	csv.WriteString("task,order,reason\n")
	for i := range b.N { // an order a row: a batch refuses a second row of an order
		fmt.Fprintf(&csv, "b%d,P%d,reason %d\n", i, i, i)
	}
	rows, fp, err := returns.ParseBatch(strings.NewReader(csv.String()))
	if err != nil {
		b.Fatal(err)
	}
	syncsBefore, statementsBefore := sqlstore.Syncs(), sqlstore.Statements()
	b.ResetTimer()
	v, err := svc.StartBatch(ctx, returns.BatchOptions{Batch: "bench", User: "demo-user", Rows: rows, Fingerprint: fp})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if v.Batch.Position != b.N || v.Batch.Counts[returns.StageDraftReady] != b.N {
		b.Fatalf("batch handled %d of %d rows: %v; want every row draft_ready", v.Batch.Position, b.N, v.Batch.Counts)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(sqlstore.Syncs()-syncsBefore)/float64(b.N), "fsyncs/row")
	b.ReportMetric(float64(sqlstore.Statements()-statementsBefore)/float64(b.N), "statements/row")
}
