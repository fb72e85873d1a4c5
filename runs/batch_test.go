package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestBatch(t *testing.T) {
	t.Parallel()
	forStores(t, testBatch)
}

func testBatch(t *testing.T, kind storeKind) {
	ctx := context.Background()
	batch := TaskRecord{ID: "batch-1", User: "demo-user", Fingerprint: "fp-batch"}
	// rows returns n batch rows numbered 1…n.
	rows := func(n int) []BatchRow {
		var out []BatchRow
		for i := 1; i <= n; i++ {
			out = append(out, BatchRow{RowNo: i, TaskID: fmt.Sprintf("batch-1-%d", i), OrderID: fmt.Sprintf("A300%d", i), Reason: "size"})
		}
		return out
	}
	mustCreateBatch := func(t *testing.T, s *Store, b TaskRecord, rs []BatchRow) {
		t.Helper()
		if err := s.CreateBatch(ctx, b, holder, rs); err != nil {
			t.Fatalf("create batch %s: %v", b.ID, err)
		}
	}
	mustCount := func(t *testing.T, s *Store, id string) int {
		t.Helper()
		n, err := s.CountBatchRows(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("CreateBatchRecordsRunningBatchTaskHeldAtEpochOne", func(t *testing.T) {
		s, _ := newSeededOn(t, kind) // clock fixed at t0
		mustCreateBatch(t, s, batch, rows(3))
		want := TaskRecord{ID: "batch-1", User: "demo-user", Fingerprint: "fp-batch", Status: "running",
			CreatedAt: t0, UpdatedAt: t0, Kind: KindBatch, Lease: holder}
		want.Lease.Epoch = 1
		if got := mustTask(t, s, "batch-1"); got != want {
			t.Errorf("Task = %+v, want %+v", got, want)
		}
	})

	t.Run("HeldOrdersLeaveOutDuplicatesAndRowsThatEndedInError", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		in := rows(4)
		in[2].DuplicateOf, in[2].Outcome, in[2].ErrorCode = 1, "duplicate_order", "conflict"
		mustCreateBatch(t, s, batch, in)
		outs := []RowOutcome{{RowNo: 1, Outcome: "draft_ready"}, {RowNo: 2, Outcome: "not_found", ErrorCode: "not_found", Error: "order A3002 not found"}}
		if err := s.RecordRowOutcomes(ctx, "batch-1", outs); err != nil {
			t.Fatal(err)
		}
		var got []string
		if err := s.HeldOrders(ctx, "batch-1", func(o string) bool { got = append(got, o); return true }); err != nil {
			t.Fatal(err)
		}
		// Row 1 ran, row 4 is still to run; row 2's order is unknown, row 3
		// is a duplicate.
		if want := []string{"A3001", "A3004"}; !slices.Equal(got, want) {
			t.Errorf("HeldOrders = %v, want %v", got, want)
		}
		got = nil
		if err := s.HeldOrders(ctx, "batch-1", func(o string) bool { got = append(got, o); return false }); err != nil || len(got) != 1 {
			t.Errorf("HeldOrders stopped by fn: %v, %v; want one order", got, err)
		}
	})

	t.Run("CreateBatchStoresItsRowsInOrder", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		in := rows(3)
		slices.Reverse(in) // stored by row number, not by slice order
		mustCreateBatch(t, s, batch, in)
		got, err := s.BatchRows(ctx, "batch-1", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if want := rows(3); !slices.Equal(got, want) {
			t.Errorf("BatchRows = %+v, want %+v", got, want)
		}
		if n := mustCount(t, s, "batch-1"); n != 3 {
			t.Errorf("CountBatchRows = %d, want 3", n)
		}
	})

	t.Run("CreateBatchWithNoRows", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateBatch(t, s, batch, nil)
		if n := mustCount(t, s, "batch-1"); n != 0 {
			t.Errorf("CountBatchRows = %d, want 0", n)
		}
	})

	t.Run("DuplicateIsErrTaskExistsAndAddsNoRows", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustCreateBatch(t, s, batch, rows(2))
		for _, id := range []string{"return-25", "batch-1"} {
			dup := batch
			dup.ID = id
			err := s.CreateBatch(ctx, dup, holder, []BatchRow{{RowNo: 3, TaskID: "x", OrderID: "A3001"}})
			if !errors.Is(err, ErrTaskExists) {
				t.Errorf("CreateBatch(%s): err = %v, want ErrTaskExists", id, err)
			}
		}
		if n := mustCount(t, s, "return-25"); n != 0 {
			t.Errorf("rows of return-25 = %d, want 0", n)
		}
		if n := mustCount(t, s, "batch-1"); n != 2 {
			t.Errorf("rows of batch-1 = %d, want 2", n)
		}
		if kind := mustTask(t, s, "return-25").Kind; kind != KindReturn {
			t.Errorf("kind of return-25 = %s, want %s", kind, KindReturn)
		}
	})

	t.Run("CreateBatchIsAllOrNothing", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		bad := append(rows(3), BatchRow{RowNo: 2, TaskID: "again", OrderID: "A3001"}) // row 2 twice
		if err := s.CreateBatch(ctx, batch, holder, bad); err == nil {
			t.Fatal("CreateBatch with a repeated row number succeeded")
		}
		if _, err := s.Task(ctx, "batch-1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Task after failed CreateBatch: err = %v, want ErrNotFound", err)
		}
		if n := mustCount(t, s, "batch-1"); n != 0 {
			t.Errorf("CountBatchRows after failed CreateBatch = %d, want 0", n)
		}
	})

	t.Run("BatchRowsPages", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateBatch(t, s, batch, rows(5))
		other := TaskRecord{ID: "batch-2", User: "demo-user"}
		mustCreateBatch(t, s, other, []BatchRow{{RowNo: 1, TaskID: "batch-2-1", OrderID: "A3001"}})
		all := rows(5)
		tests := []struct {
			name     string
			after, n int
			want     []BatchRow
		}{
			{"FirstPage", 0, 2, all[0:2]},
			{"NextPageStartsAfterTheLastRowSeen", 2, 2, all[2:4]},
			{"LastPageIsShort", 4, 2, all[4:5]},
			{"AfterTheLastRowIsEmpty", 5, 2, nil},
			{"ZeroRowsIsEmpty", 0, 0, nil},
			{"PageLargerThanTheBatch", 0, 100, all},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.BatchRows(ctx, "batch-1", tt.after, tt.n)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("BatchRows(after %d, n %d) = %+v, want %+v", tt.after, tt.n, got, tt.want)
				}
			})
		}
	})

	t.Run("UnknownBatchHasNoRows", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if got, err := s.BatchRows(ctx, "nope", 0, 10); err != nil || len(got) != 0 {
			t.Errorf("BatchRows = %+v (%v), want none", got, err)
		}
		if n := mustCount(t, s, "nope"); n != 0 {
			t.Errorf("CountBatchRows = %d, want 0", n)
		}
	})

	t.Run("BatchLeaseIsTakenOverLikeAReturnTask", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateBatch(t, s, batch, rows(1))
		me := Lease{Owner: "o2", PID: 202, Host: "host-b", Until: t0.Add(2 * time.Minute)}
		got, err := s.AcquireLease(ctx, "batch-1", me, holder.Until, unknown)
		epoch := got.Epoch
		if err != nil || epoch != 2 {
			t.Errorf("AcquireLease of lapsed batch = epoch %d (%v), want 2", epoch, err)
		}
	})
}
