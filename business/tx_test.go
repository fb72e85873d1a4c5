package business

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestInTx checks the transaction of InTx: its methods see their own
// writes, a method that fails inside it changes nothing (savepoint), an
// error from fn undoes everything, and nothing is visible outside until
// the commit.
func TestInTx(t *testing.T) {
	ctx := context.Background()
	errStop := errors.New("stop")
	task := func(id string) Task {
		return Task{ID: id, User: "demo-user", OrderID: "A3001", Status: "running", CreatedAt: t0}
	}
	lease := Lease{Owner: "o1", PID: 1, Host: "h", Until: t0.Add(time.Minute)}
	tests := []struct {
		name      string
		fn        func(t *testing.T, tx *Store) error
		wantErr   error
		wantTasks int
		wantDraft bool
	}{
		{
			name: "commit",
			fn: func(t *testing.T, tx *Store) error {
				if err := tx.CreateLeasedTask(ctx, task("t1"), KindReturn, time.Minute, lease); err != nil {
					return err
				}
				if _, err := tx.Task(ctx, "t1"); err != nil {
					t.Errorf("own write not visible: %v", err)
				}
				if _, _, err := tx.PrepareDraft(ctx, "t1", "A3001", "demo-user", "size", time.Minute, t0); err != nil {
					return err
				}
				if _, err := tx.StartStep(ctx, "t1", "lookup", t0); err != nil {
					return err
				}
				return tx.ReleaseLeaseSync(ctx, "t1", "o1", "waiting", "draft_ready")
			},
			wantTasks: 1, wantDraft: true,
		},
		{
			name: "failed method changes nothing",
			fn: func(t *testing.T, tx *Store) error {
				if err := tx.CreateLeasedTask(ctx, task("t1"), KindReturn, time.Minute, lease); err != nil {
					return err
				}
				// Another user's order: PrepareDraft fails after its reads.
				if _, _, err := tx.PrepareDraft(ctx, "t1", "B4001", "demo-user", "size", time.Minute, t0); !errors.Is(err, ErrNotFound) {
					t.Errorf("PrepareDraft of another user's order: %v, want ErrNotFound", err)
				}
				// A guarded update that matches nothing.
				if err := tx.SetProgress(ctx, "t1", "done", "waiting", "x"); !errors.Is(err, ErrConflict) {
					t.Errorf("SetProgress: %v, want ErrConflict", err)
				}
				if err := tx.CreateLeasedTask(ctx, task("t1"), KindReturn, time.Minute, lease); !errors.Is(err, ErrTaskExists) {
					t.Errorf("second CreateLeasedTask: %v, want ErrTaskExists", err)
				}
				return nil
			},
			wantTasks: 1,
		},
		{
			name: "error rolls back everything",
			fn: func(t *testing.T, tx *Store) error {
				if err := tx.CreateLeasedTask(ctx, task("t1"), KindReturn, time.Minute, lease); err != nil {
					return err
				}
				if _, _, err := tx.PrepareDraft(ctx, "t1", "A3001", "demo-user", "size", time.Minute, t0); err != nil {
					return err
				}
				return errStop
			},
			wantErr: errStop,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSeeded(t)
			err := s.InTx(ctx, func(tx *Store) error {
				// Outside the transaction nothing is visible yet: another
				// connection reads the last commit (WAL).
				if err := tc.fn(t, tx); err != nil {
					return err
				}
				var n int
				if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != 0 {
					t.Errorf("tasks seen outside the transaction before commit: %d (%v)", n, err)
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("InTx: %v, want %v", err, tc.wantErr)
			}
			var n int
			if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != tc.wantTasks {
				t.Errorf("tasks after InTx: %d (%v), want %d", n, err, tc.wantTasks)
			}
			_, err = s.DraftByTask(ctx, "t1")
			if gotDraft := err == nil; gotDraft != tc.wantDraft {
				t.Errorf("draft after InTx: %v, want present=%v", err, tc.wantDraft)
			}
		})
	}
}

// TestInTxOrderMemo checks the orders kept inside InTx: a second read gives
// the same order, another user's order stays not found, and an order
// imported in the same transaction after a read found none is found.
func TestInTxOrderMemo(t *testing.T) {
	ctx := context.Background()
	s, _ := newSeeded(t)
	err := s.InTx(ctx, func(tx *Store) error {
		first, err := tx.Order(ctx, "A3001", "demo-user")
		if err != nil {
			return err
		}
		again, err := tx.Order(ctx, "A3001", "demo-user")
		if err != nil || again != first {
			t.Errorf("second read = %+v, %v; want %+v", again, err, first)
		}
		if _, err := tx.Order(ctx, "B4001", "demo-user"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another user's order: %v, want ErrNotFound", err)
		}
		if _, err := tx.Order(ctx, "A9999", "demo-user"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown order: %v, want ErrNotFound", err)
		}
		csv := "order_id,user,item,delivered_at,final_sale\nA9999,demo-user,New item,2025-03-01,false\n"
		if _, err := tx.ImportOrders(ctx, strings.NewReader(csv)); err != nil {
			return err
		}
		if o, err := tx.Order(ctx, "A9999", "demo-user"); err != nil || o.Item != "New item" {
			t.Errorf("read after an import in the transaction = %+v, %v; want the imported order", o, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
