package returns_test

import (
	"testing"

	"assistant/business"
	"assistant/flow/returns"
)

func TestShowOrder(t *testing.T) {
	t.Run("ApproveTwiceShowsOneApplication", func(t *testing.T) {
		svc, b := setup(t)
		started := mustStart(t, svc, "r1", "A3003", "size")
		first := mustResume(t, svc, approve("r1"))
		mustResume(t, svc, approve("r1"))
		d, err := svc.ShowOrder(b.ctx, "A3003", user)
		if err != nil {
			t.Fatal(err)
		}
		if d.ID != "A3003" || d.Returnable || d.NotReturnable != business.ReasonOpenApplication {
			t.Errorf("order %s returnable %v (%q), want A3003 not returnable: open_application", d.ID, d.Returnable, d.NotReturnable)
		}
		want := []returns.OrderTask{{Task: "r1", Status: returns.StatusDone, Stage: returns.StageSubmitted}}
		if len(d.Tasks) != 1 || d.Tasks[0] != want[0] {
			t.Errorf("tasks %+v, want %+v", d.Tasks, want)
		}
		if len(d.Applications) != 1 {
			t.Fatalf("%d applications, want 1: %+v", len(d.Applications), d.Applications)
		}
		a := d.Applications[0]
		if a.ID != first.Result.ApplicationID || a.DraftID != started.Draft.DraftID || a.DraftVersion != 1 || a.TaskID != "r1" || a.ReviewStatus != business.ReviewPending {
			t.Errorf("application %+v, want %s of draft %s version 1, task r1, pending", a, first.Result.ApplicationID, started.Draft.DraftID)
		}
	})

	t.Run("WaitingTaskAndNoApplication", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		d, err := svc.ShowOrder(b.ctx, "A3003", user)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Returnable || d.NotReturnable != "" {
			t.Errorf("returnable %v (%q), want returnable", d.Returnable, d.NotReturnable)
		}
		if len(d.Tasks) != 1 || d.Tasks[0].Status != returns.StatusWaiting || d.Tasks[0].Stage != returns.StageDraftReady {
			t.Errorf("tasks %+v, want r1 waiting at draft_ready", d.Tasks)
		}
		if d.Applications == nil || len(d.Applications) != 0 {
			t.Errorf("applications %#v, want an empty list", d.Applications)
		}
	})

	t.Run("AnotherUsersOrderReadsAsUnknown", func(t *testing.T) {
		svc, b := setup(t)
		_, other := svc.ShowOrder(b.ctx, "A3003", "alice")
		wantErr(t, other, returns.ErrNotFound)
		_, unknown := svc.ShowOrder(b.ctx, "Z9999", "alice")
		wantErr(t, unknown, returns.ErrNotFound)
		if other.Error() != "order A3003: not found for user alice" || unknown.Error() != "order Z9999: not found for user alice" {
			t.Errorf("messages %q and %q, want them alike", other, unknown)
		}
	})
}
