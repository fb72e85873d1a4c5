package runs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAcquireLeaseIf(t *testing.T) {
	t.Parallel()
	forStores(t, testAcquireLeaseIf)
}

// testAcquireLeaseIf: recover's take of a task left running (its holder
// gone) takes it only while it is still running; a task an operator
// stopped meanwhile stays interrupted, held as it was (ErrStopped), and any
// other status is a plain ErrConflict. Without a status the take is
// AcquireLease's, which a deliberate resume of a stopped task uses.
func testAcquireLeaseIf(t *testing.T, kind storeKind) {
	ctx := context.Background()
	gone := func(Lease) Liveness { return HolderGone }
	me := Lease{Owner: "o2", PID: 202, Host: "host-a", Until: t0.Add(time.Minute)}
	tests := []struct {
		name       string
		status     string // the task's status when recover takes it
		want       string // AcquireLeaseIf's status precondition
		wantErr    error
		wantStatus string
		wantOwner  string
	}{
		{"RunningIsTaken", "running", "running", nil, "running", "o2"},
		{"StoppedMeanwhileStaysStopped", "interrupted", "running", ErrStopped, "interrupted", "o1"},
		{"EndedMeanwhileIsConflict", "done", "running", ErrConflict, "done", "o1"},
		{"AnyStatusTakesAStoppedTask", "interrupted", "", nil, "running", "o2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			if tt.status == "interrupted" {
				if err := s.RequestStop(ctx, "return-25"); err != nil {
					t.Fatal(err)
				}
			} else if err := s.RecordProgress(ctx, "return-25", "o1", tt.status, "review"); err != nil {
				t.Fatal(err)
			}
			before := mustTask(t, s, "return-25")
			_, err := s.AcquireLeaseIf(ctx, "return-25", me, t0, gone, tt.want)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == ErrConflict && errors.Is(err, ErrStopped)) {
				t.Fatalf("AcquireLeaseIf: err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "is "+tt.status) {
				t.Errorf("message %q does not name status %s", err, tt.status)
			}
			got := mustTask(t, s, "return-25")
			if got.Status != tt.wantStatus || got.Lease.Owner != tt.wantOwner {
				t.Errorf("status %s owner %q, want %s %s", got.Status, got.Lease.Owner, tt.wantStatus, tt.wantOwner)
			}
			if err != nil && got.Lease.Epoch != before.Lease.Epoch {
				t.Errorf("a refused take raised the epoch %d → %d", before.Lease.Epoch, got.Lease.Epoch)
			}
		})
	}
}
