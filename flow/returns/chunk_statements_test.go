package returns_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"assistant/flow/returns"
	"assistant/internal/sqlitedb"
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
// stores (sqlitedb.Statements), against chunkStatementsPerRow.
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
	before := sqlitedb.Statements()
	v, err := svc.StartBatch(ctx, returns.BatchOptions{Batch: "count", User: "demo-user", Rows: rows, Fingerprint: fp, Chunk: n})
	if err != nil {
		t.Fatal(err)
	}
	got := float64(sqlitedb.Statements()-before) / n
	if v.Batch.Position != n || v.Batch.Counts[returns.StageDraftReady] != n {
		t.Fatalf("batch: position %d, counts %v; want %d rows draft_ready", v.Batch.Position, v.Batch.Counts, n)
	}
	t.Logf("%.2f statements a row", got)
	if got > chunkStatementsPerRow+1 { // +1: the batch's own statements, spread over the rows
		t.Errorf("a batch row cost %.2f statements, want at most %d (+1 for the batch's own)", got, chunkStatementsPerRow)
	}
}
