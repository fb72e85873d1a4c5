package returns_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"assistant/flow/returns"
	"assistant/internal/sqlstore"
)

// chunkStatementsPerRow is the budget of SQL statements a new batch row
// costs in a chunk over checkpoints.sqlite (on PostgreSQL each is a round
// trip to the server). The business store's 2: the row's task record
// (insert) and its draft (one insert that checks the order and an earlier
// draft, without a savepoint: business.PrepareDraftVersion in a chunk).
// The chunk reads its rows' task records and orders up front
// (prepareOrderRows) and writes their status and stage, timeline and
// outcomes in a statement each (runs.RecordProgressAll, stepLog.flush,
// runs.RecordRowOutcomes). The checkpoint buffer's 6. A change that adds
// a statement to every row fails here; lower the budget when one goes.
const chunkStatementsPerRow = 8

// TestChunkStatementsPerRow runs a batch of new tasks, each parked at
// approval, in one chunk and counts the statements per row of both
// stores (sqlstore.Statements), against chunkStatementsPerRow.
func TestChunkStatementsPerRow(t *testing.T) {
	ctx := context.Background()
	const n = 50
	svc, _ := openService(t, n)
	var csv strings.Builder
	csv.WriteString("task,order,reason\n")
	for i := range n {
		fmt.Fprintf(&csv, "s%d,P%d,reason %d\n", i, i, i)
	}
	rows, fp, err := returns.ParseBatch(strings.NewReader(csv.String()))
	if err != nil {
		t.Fatal(err)
	}
	before := sqlstore.Statements()
	v, err := svc.StartBatch(ctx, returns.BatchOptions{Batch: "count", User: "demo-user", Rows: rows, Fingerprint: fp, Chunk: n})
	if err != nil {
		t.Fatal(err)
	}
	got := float64(sqlstore.Statements()-before) / n
	if v.Batch.Position != n || v.Batch.Counts[returns.StageDraftReady] != n {
		t.Fatalf("batch: position %d, counts %v; want %d rows draft_ready", v.Batch.Position, v.Batch.Counts, n)
	}
	t.Logf("%.2f statements a row", got)
	if got > chunkStatementsPerRow+1 { // +1: the batch's own statements, spread over the rows
		t.Errorf("a batch row cost %.2f statements, want at most %d (+1 for the batch's own)", got, chunkStatementsPerRow)
	}
}

// decideStatementsPerRow is the budget of SQL statements an approval
// costs in a decide chunk over both files. The business store's 3: the
// row's lease (one guarded update), and submit's decision and application
// (no savepoint in a chunk: business.submitDecidedInTx); the chunk reads the tasks' records,
// timelines, decisions, drafts, applications and orders up front
// (prepareDecisions: business.PreloadTasks and PreloadOrders) and writes
// their status and stage in one statement (runs.RecordProgressAll). The
// checkpoint buffer's 4: two checkpoints, the head moved once, and the
// answer's pending write against the head the checkpoints follow (no read
// of that head: the head's move checks it). Before these a row cost 21.
const decideStatementsPerRow = 7

// TestDecideStatementsPerRow parks a batch of tasks at approval, approves
// them all in one decide chunk and counts the statements per row of both
// stores (sqlstore.Statements), against decideStatementsPerRow.
func TestDecideStatementsPerRow(t *testing.T) {
	ctx := context.Background()
	const n = 50
	svc, _ := openService(t, n)
	parkTasks(t, svc, "s", n, n)
	drows, dfp := approvals(t, "s", n)
	before := sqlstore.Statements()
	v, err := svc.StartDecide(ctx, returns.DecideOptions{User: "demo-user", Rows: drows, Fingerprint: dfp, Chunk: n})
	if err != nil {
		t.Fatal(err)
	}
	got := float64(sqlstore.Statements()-before) / n
	if v.Batch.Position != n || v.Batch.Counts[returns.StageSubmitted] != n {
		t.Fatalf("decide: position %d, counts %v; want %d rows submitted", v.Batch.Position, v.Batch.Counts, n)
	}
	t.Logf("%.2f statements a row", got)
	if got > decideStatementsPerRow+1 { // +1: the run's own statements, spread over the rows
		t.Errorf("a decision cost %.2f statements, want at most %d (+1 for the run's own)", got, decideStatementsPerRow)
	}
}
