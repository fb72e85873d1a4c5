package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"assistant/internal/sqlstore"
)

// TestRecordRowOutcomes checks a batch's rows stored in a statement for
// every rowsPerInsert rows, and the outcomes of a chunk's rows stored in
// one statement (a round trip on PostgreSQL, instead of one a row), each
// on its own row, other rows untouched, more rows than one statement holds
// in two, and an unknown row refused as ErrNotFound naming it.
func TestRecordRowOutcomes(t *testing.T) {
	forStores(t, testRecordRowOutcomes)
}

func testRecordRowOutcomes(t *testing.T, kind storeKind) {
	ctx := context.Background()
	const n = outcomesPerUpdate + 5
	var rows []BatchRow
	for i := 1; i <= n; i++ {
		rows = append(rows, BatchRow{RowNo: i, Line: i + 1, TaskID: fmt.Sprintf("t%d", i), OrderID: "A3001", Reason: "size"})
	}
	rows[1].DuplicateOf, rows[1].Outcome, rows[1].ErrorCode, rows[1].Error = 1, "duplicate", "invalid_input", "row 2 repeats row 1"
	s, _ := newSeededOn(t, kind)
	before := sqlstore.Statements()
	if err := s.CreateBatch(ctx, TaskRecord{ID: "b", User: "demo-user", Fingerprint: "fp"}, holder, rows); err != nil {
		t.Fatal(err)
	}
	if got := sqlstore.Statements() - before; got != 3 {
		t.Errorf("a batch of %d rows took %d statements to create, want 3 (its task, two inserts of rows)", n, got)
	}
	if got, err := s.BatchRows(ctx, "b", 0, n); err != nil || !slices.Equal(got, rows) {
		t.Fatalf("rows stored: %v (%d of %d rows equal), want them as given", err, countEqual(got, rows), n)
	}
	outs := []RowOutcome{
		{RowNo: 3, Outcome: "draft_ready"},
		{RowNo: 1, Outcome: "not_found", ErrorCode: "not_found", Error: "order A3001 not found; it's 'quoted'"},
		{RowNo: 2, Outcome: "failed", ErrorCode: "internal", Error: ""},
	}
	before = sqlstore.Statements()
	if err := s.RecordRowOutcomes(ctx, "b", outs); err != nil {
		t.Fatal(err)
	}
	if got := sqlstore.Statements() - before; got != 1 {
		t.Errorf("3 outcomes took %d statements, want 1", got)
	}
	got, err := s.BatchRows(ctx, "b", 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		r := got[o.RowNo-1]
		if r.Outcome != o.Outcome || r.ErrorCode != o.ErrorCode || r.Error != o.Error {
			t.Errorf("row %d: %q %q %q, want %+v", o.RowNo, r.Outcome, r.ErrorCode, r.Error, o)
		}
	}
	if r := got[3]; r.Outcome != "" || r.Error != "" {
		t.Errorf("row 4, not recorded: %+v", r)
	}

	all := make([]RowOutcome, n)
	for i := range all {
		all[i] = RowOutcome{RowNo: i + 1, Outcome: "submitted"}
	}
	before = sqlstore.Statements()
	if err := s.RecordRowOutcomes(ctx, "b", all); err != nil {
		t.Fatal(err)
	}
	if got := sqlstore.Statements() - before; got != 2 {
		t.Errorf("%d outcomes took %d statements, want 2", n, got)
	}
	got, err = s.BatchRows(ctx, "b", 0, n)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(got, func(r BatchRow) bool { return r.Outcome != "submitted" || r.Error != "" }); i >= 0 || len(got) != n {
		t.Errorf("after recording all: row %d of %d is %+v", i+1, len(got), got[max(i, 0)])
	}

	err = s.RecordRowOutcomes(ctx, "b", []RowOutcome{{RowNo: 2, Outcome: "x"}, {RowNo: n + 7, Outcome: "x"}})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprintf("row %d ", n+7)) {
		t.Errorf("unknown row: %v, want ErrNotFound naming row %d", err, n+7)
	}
	if err := s.RecordRowOutcomes(ctx, "other", []RowOutcome{{RowNo: 1, Outcome: "x"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown batch: %v, want ErrNotFound", err)
	}
}

// countEqual counts the rows of a equal to the row of b at the same index.
func countEqual(a, b []BatchRow) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			n++
		}
	}
	return n
}

// TestRecordProgressAll checks the status and stage of a chunk's row
// tasks recorded in one statement, as RecordProgress does each: the
// holder's tasks change, an interrupted status is kept, and a task the
// owner does not hold is ErrConflict.
func TestRecordProgressAll(t *testing.T) {
	forStores(t, testRecordProgressAll)
}

func testRecordProgressAll(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	for _, id := range []string{"r1", "r2", "r3"} {
		mustCreateLeased(t, s, id, holder)
	}
	if _, err := s.h.Q().ExecContext(ctx, `UPDATE tasks SET status = 'interrupted' WHERE task_id = 'r2'`); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Minute)
	before := sqlstore.Statements()
	err := s.RecordProgressAll(ctx, holder.Owner, []Progress{
		{Task: "r1", Status: "waiting", Stage: "draft_ready", At: at},
		{Task: "r2", Status: "waiting", Stage: "draft_ready", At: at},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := sqlstore.Statements() - before; got != 1 {
		t.Errorf("2 tasks' progress took %d statements, want 1", got)
	}
	for id, want := range map[string]string{"r1": "waiting", "r2": "interrupted", "r3": "running"} {
		got := mustTask(t, s, id)
		if got.Status != want {
			t.Errorf("task %s: status %q, want %q", id, got.Status, want)
		}
		if id != "r3" && (got.Stage != "draft_ready" || !got.UpdatedAt.Equal(at) || got.Lease.Owner != holder.Owner) {
			t.Errorf("task %s: stage %q, updated %v, lease %+v; want draft_ready at %v, still held", id, got.Stage, got.UpdatedAt, got.Lease, at)
		}
	}
	err = s.RecordProgressAll(ctx, "someone-else", []Progress{{Task: "r3", Status: "waiting", Stage: "draft_ready", At: at}})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("a task another owner holds: %v, want ErrConflict", err)
	}
	if got := mustTask(t, s, "r3"); got.Status != "running" {
		t.Errorf("task r3 after the refusal: %q, want running", got.Status)
	}
}
