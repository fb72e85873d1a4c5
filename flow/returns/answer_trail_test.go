package returns

import (
	"testing"
	"time"
)

// TestTrailOf: the decision a command records before it saves an answer
// is exactly the one the node that takes it records (same id, action,
// draft, version, words), and none for an answer the node refuses or
// leaves to submit.
func TestTrailOf(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	draft := &DraftRef{ID: "d1", Version: 2}
	two := State{Task: "t", Draft: draft, Approvals: 2}
	one := State{Task: "t", Draft: draft}
	approve := func(action string) ApprovalAnswer {
		return ApprovalAnswer{Action: action, DraftID: "d1", By: "alice", At: at, DecisionID: "dec_1"}
	}
	edit := approve(ActionEdit)
	edit.Reason = "  too small "
	badEdit := approve(ActionEdit)
	badEdit.Reason = " "
	revise := approve(ActionRevise)
	revise.Comment = " say why "
	otherDraft := approve(ActionApprove)
	otherDraft.DraftID = "d0"
	nobody := approve(ActionCancel)
	nobody.By = ""
	for _, tc := range []struct {
		name   string
		st     State
		answer any
		want   *Decision
	}{
		{"FirstOfTwoApprovals", two, approve(ActionApprove), &Decision{ID: "dec_1", By: "alice", Action: ActionApprove, DraftID: "d1", Version: 2, At: at}},
		{"SingleApprovalIsSubmits", one, approve(ActionApprove), nil},
		{"Cancel", one, approve(ActionCancel), &Decision{ID: "dec_1", By: "alice", Action: ActionCancel, DraftID: "d1", Version: 2, At: at}},
		{"EditTrimmed", one, edit, &Decision{ID: "dec_1", By: "alice", Action: ActionEdit, DraftID: "d1", Version: 2, At: at, Reason: "too small"}},
		{"EditWithoutAValidReason", one, badEdit, nil},
		{"ReviseTrimmed", two, revise, &Decision{ID: "dec_1", By: "alice", Action: ActionRevise, DraftID: "d1", Version: 2, At: at, Comment: "say why"}},
		{"AnotherDraft", two, otherDraft, nil},
		{"NamesNobody", one, nobody, nil},
		{"Reason", State{Task: "t"}, ReasonAnswer{Reason: " size ", By: "bob", At: at, DecisionID: "dec_2"}, &Decision{ID: "dec_2", By: "bob", Action: ActionReason, At: at, Reason: "size"}},
		{"ReasonAfterRevise", one, ReasonAnswer{Reason: "size", By: "bob", At: at, DecisionID: "dec_2"}, &Decision{ID: "dec_2", By: "bob", Action: ActionReason, DraftID: "d1", Version: 2, At: at, Reason: "size"}},
		{"BlankReasonIsAskedAgain", State{Task: "t"}, ReasonAnswer{Reason: "  ", By: "bob", At: at, DecisionID: "dec_2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := trailOf(tc.st, tc.answer)
			if tc.want == nil {
				if ok {
					t.Fatalf("trailOf = %+v, want none", got)
				}
				return
			}
			if !ok || got != *tc.want {
				t.Fatalf("trailOf = %+v, %v; want %+v", got, ok, *tc.want)
			}
		})
	}
}
