package runs

import (
	"context"
	"errors"
	"testing"
	"time"

	"assistant/business"
)

// TestInTx checks one transaction shared by the desk and the run
// bookkeeping (business.Store.InTx, then New over its Handle): their methods
// see their own writes, a method that fails inside it changes nothing (savepoint), an
// error from fn undoes everything, and nothing is visible outside until
// the commit.
func TestInTx(t *testing.T) {
	t.Parallel()
	forStores(t, testInTx)
}

func testInTx(t *testing.T, kind storeKind) {
	ctx := context.Background()
	errStop := errors.New("stop")
	task := func(id string) TaskRecord {
		return TaskRecord{ID: id, User: "demo-user", OrderID: "A3001", Status: "running", CreatedAt: t0}
	}
	lease := Lease{Owner: "o1", PID: 1, Host: "h", Until: t0.Add(time.Minute)}
	tests := []struct {
		name      string
		fn        func(t *testing.T, tx *Store, desk *business.Store) error
		wantErr   error
		wantTasks int
		wantDraft bool
	}{
		{
			name: "commit",
			fn: func(t *testing.T, tx *Store, desk *business.Store) error {
				if err := tx.CreateLeasedTask(ctx, task("t1"), KindReturn, time.Minute, lease); err != nil {
					return err
				}
				if _, err := tx.Task(ctx, "t1"); err != nil {
					t.Errorf("own write not visible: %v", err)
				}
				if _, _, err := desk.PrepareDraft(ctx, "t1", "A3001", "demo-user", "size", time.Minute, t0); err != nil {
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
			fn: func(t *testing.T, tx *Store, desk *business.Store) error {
				if err := tx.CreateLeasedTask(ctx, task("t1"), KindReturn, time.Minute, lease); err != nil {
					return err
				}
				// Another user's order: PrepareDraft fails after its reads.
				if _, _, err := desk.PrepareDraft(ctx, "t1", "B4001", "demo-user", "size", time.Minute, t0); !errors.Is(err, business.ErrNotFound) {
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
			fn: func(t *testing.T, tx *Store, desk *business.Store) error {
				if err := tx.CreateLeasedTask(ctx, task("t1"), KindReturn, time.Minute, lease); err != nil {
					return err
				}
				if _, _, err := desk.PrepareDraft(ctx, "t1", "A3001", "demo-user", "size", time.Minute, t0); err != nil {
					return err
				}
				return errStop
			},
			wantErr: errStop,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, s := newSeededOn(t, kind)
			err := s.InTx(ctx, func(dtx *business.Store) error {
				// Outside the transaction nothing is visible yet: another
				// connection reads the last commit (WAL).
				if err := tc.fn(t, New(dtx.Handle(), nil), dtx); err != nil {
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
