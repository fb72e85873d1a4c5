package returns_test

import (
	"reflect"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

// TestLostAnswerStands: an edit, revise or reason the decision trail holds
// for the question asked, whose checkpoint was lost (written here into the
// business file only, with the record a command would have released), is
// the view's Stands; show and list agree on the stage the head asks
// (a lost revise: draft_ready, though the record says need_reason).
func TestLostAnswerStands(t *testing.T) {
	tests := []struct {
		name, reason  string // reason: start's ("" asks for one)
		decision      business.Decision
		record, stage string // the record's stage; the stage shown
		wantWith      []returns.InputValue
	}{
		{"revise", "size", business.Decision{Action: returns.ActionRevise, Comment: "why not"},
			returns.StageNeedReason, returns.StageDraftReady, []returns.InputValue{{Input: returns.InputAction, Value: "revise"}, {Input: returns.InputComment, Value: "why not"}}},
		{"edit", "size", business.Decision{Action: returns.ActionEdit, Reason: "smaller"},
			returns.StageDraftReady, returns.StageDraftReady, []returns.InputValue{{Input: returns.InputAction, Value: "edit"}, {Input: returns.InputReason, Value: "smaller"}}},
		{"reason", "", business.Decision{Action: returns.ActionReason, Reason: "it broke"},
			returns.StageDraftReady, returns.StageNeedReason, []returns.InputValue{{Input: returns.InputReason, Value: "it broke"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := setup(t)
			v := mustStart(t, svc, "t", "A3003", tt.reason)
			d := tt.decision
			d.ID, d.TaskID, d.By, d.At = "dec_lost", "t", user, b.clock.Now().Add(time.Second)
			if v.Draft != nil {
				d.DraftID, d.Version = v.Draft.DraftID, 1
			}
			if err := svc.Desk().RecordDecision(b.ctx, d); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Desk().DB().ExecContext(b.ctx, `UPDATE tasks SET stage = ? WHERE task_id = 't'`, tt.record); err != nil {
				t.Fatal(err)
			}

			shown, err := svc.Show(b.ctx, "t", user)
			if err != nil {
				t.Fatal(err)
			}
			if shown.Stands == nil || shown.Stands.Action != d.Action || shown.Stage != tt.stage {
				t.Fatalf("show: stage %s, stands %+v; want stage %s, stands %s", shown.Stage, shown.Stands, tt.stage, d.Action)
			}
			want := returns.Hint{Do: returns.DoResume, Task: "t", With: tt.wantWith}
			if got := returns.StandingHint("t", *shown.Stands); !reflect.DeepEqual(got, want) {
				t.Errorf("StandingHint = %+v, want %+v", got, want)
			}
			list, err := svc.List(b.ctx, user, "")
			if err != nil || len(list) != 1 || list[0].Stage != shown.Stage || list[0].Status != shown.Status {
				t.Errorf("list = %+v, %v; want %s/%s as show says", list, err, shown.Status, shown.Stage)
			}
			// The one who gave the answer is the one to give it again.
			mine, err := svc.ListTasks(b.ctx, returns.ListOptions{User: user, AwaitingMe: true})
			if err != nil || len(mine) != 1 || mine[0].Stage != shown.Stage {
				t.Errorf("list --awaiting-me = %+v, %v; want t at %s", mine, err, shown.Stage)
			}
		})
	}
}
