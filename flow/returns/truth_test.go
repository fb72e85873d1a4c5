package returns_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow/returns"
)

// TestPointOfActionReadsTheBusinessFile: before cancel and submit, and when
// a lookup refuses an order, the flow looks the task's application up in
// the business file, which is the truth for side effects.
func TestPointOfActionReadsTheBusinessFile(t *testing.T) {
	t.Run("CancelAfterLostSubmitIsSubmitted", func(t *testing.T) {
		// The application committed, its checkpoint was lost (power loss):
		// the head still asks for approval.
		svc, b := setup(t)
		v := mustStart(t, svc, "t", "A3003", "size")
		a, _, err := svc.Desk().Submit(b.ctx, v.Draft.DraftID, user, b.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		got := mustResume(t, svc, cancel("t"))
		wantView(t, got, returns.StatusDone, returns.StageSubmitted)
		if got.Result == nil || got.Result.ApplicationID != a.ID || !got.Result.Reused {
			t.Fatalf("result %+v, want %s reused", got.Result, a.ID)
		}
		wantRecord(t, svc, "t", returns.StatusDone, returns.StageSubmitted)
	})

	t.Run("CancelWithoutApplicationIsCancelled", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "t", "A3003", "size")
		wantView(t, mustResume(t, svc, cancel("t")), returns.StatusCancelled, returns.StageCancelled)
	})

	t.Run("StartAgainWithLostRunIsSubmitted", func(t *testing.T) {
		// An older checkpoints.sqlite without the task's run: start runs
		// it again, and its own application must not fail it with
		// open_application.
		svc, b := setup(t)
		mustStart(t, svc, "t", "A3003", "size")
		done := mustResume(t, svc, approve("t"))
		svc.Close()
		older, _ := setupWith(t, b.dir, checkpoints.NewMemory())
		got := mustStart(t, older, "t", "A3003", "size")
		wantView(t, got, returns.StatusDone, returns.StageSubmitted)
		if got.Result == nil || got.Result.ApplicationID != done.Result.ApplicationID || !got.Result.Reused {
			t.Fatalf("result %+v, want %s reused", got.Result, done.Result.ApplicationID)
		}
		if got.Draft == nil || got.Draft.DraftID != done.Draft.DraftID {
			t.Fatalf("draft %+v, want %s", got.Draft, done.Draft.DraftID)
		}
		if n, _ := older.Desk().CountApplications(b.ctx, done.Draft.DraftID); n != 1 {
			t.Fatalf("applications of the draft = %d, want 1", n)
		}
	})
}

// TestSubmitChecksEligibilityAgain: facts that change while a draft waits
// for approval end the request failed with the business code.
func TestSubmitChecksEligibilityAgain(t *testing.T) {
	tests := []struct {
		name    string
		wait    time.Duration
		want    string // stage
		code    string
		message string
	}{
		{"WindowStillOpen", 30 * time.Minute, returns.StageSubmitted, "", ""},
		{"WindowClosedWhileWaiting", 2 * time.Hour, returns.StageFailed, business.ReasonReturnWindowClosed, "window closed while the draft waited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := setup(t)
			// Delivered one hour short of the 30-day window.
			delivered := b.clock.Now().Add(-business.ReturnWindow + time.Hour).Format(time.RFC3339)
			csv := fmt.Sprintf("order_id,user,item,delivered_at,final_sale\nW1,%s,Lamp,%s,false\n", user, delivered)
			if _, err := svc.ImportOrders(b.ctx, strings.NewReader(csv)); err != nil {
				t.Fatal(err)
			}
			v, err := svc.Start(b.ctx, returns.StartOptions{Task: "t", User: user, Order: "W1", Reason: "size", TTL: 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
			b.clock.Advance(tt.wait)
			got := mustResume(t, svc, approve("t"))
			if got.Stage != tt.want {
				t.Fatalf("stage %s, want %s (%+v)", got.Stage, tt.want, got.Error)
			}
			n, _ := svc.Desk().CountApplications(b.ctx, v.Draft.DraftID)
			if tt.code == "" {
				if n != 1 {
					t.Fatalf("applications = %d, want 1", n)
				}
				return
			}
			if got.Error == nil || got.Error.Code != tt.code || !strings.Contains(got.Error.Message, tt.message) {
				t.Fatalf("error %+v, want %s mentioning %q", got.Error, tt.code, tt.message)
			}
			if n != 0 {
				t.Fatalf("applications = %d, want 0", n)
			}
			wantRecord(t, svc, "t", returns.StatusFailed, returns.StageFailed)
		})
	}
}
