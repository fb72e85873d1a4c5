package returns_test

import (
	"slices"
	"testing"

	"assistant/flow"
	"assistant/flow/returns"
)

// TestAnUncountedApprovalAsksForAnother: a submit that found approvals no
// longer count (State.Uncounted) routes back to the approval questions
// missing, and the round counts only the approvals still counted: one
// question of a task that needs one, the second of two when one approval
// still counts, both when none does; a submit that ended the request
// routes to the end.
func TestAnUncountedApprovalAsksForAnother(t *testing.T) {
	t.Parallel()
	draft := &returns.DraftRef{ID: "d1", Version: 1}
	approve := func(id, by string) returns.Decision {
		return returns.Decision{ID: id, By: by, Action: returns.ActionApprove, DraftID: "d1", Version: 1}
	}
	alice, bob := approve("a", "alice"), approve("b", "bob")
	aliceOut := []returns.Uncounted{{ID: "a", By: "alice", Because: "revoked at …"}}
	bothOut := append(slices.Clone(aliceOut), returns.Uncounted{ID: "b", By: "bob", Because: "revoked at …"})
	for _, tc := range []struct {
		name       string
		st         returns.State
		next       []string
		roundAfter string // roundAction of the state
	}{
		{"SubmittedEnds", returns.State{Stage: returns.StageSubmitted, Draft: draft, Approvals: 2, Decisions: []returns.Decision{alice, bob}}, []string{flow.End}, returns.ActionApprove},
		{"FailedEnds", returns.State{Stage: returns.StageFailed, Draft: draft, Decisions: []returns.Decision{alice}, Decision: returns.ActionApprove}, []string{flow.End}, returns.ActionApprove},
		{"OneNeededAsksAgain", returns.State{Stage: returns.StageDraftReady, Draft: draft, Decisions: []returns.Decision{alice}, Decision: returns.ActionApprove, Uncounted: aliceOut}, []string{returns.NodeReview}, returns.ActionApprove},
		{"OneOfTwoStillCounts", returns.State{Stage: returns.StageDraftReady, Draft: draft, Approvals: 2, Decisions: []returns.Decision{alice, bob}, Uncounted: aliceOut}, []string{returns.NodeReview2}, ""},
		{"NoneOfTwoCounts", returns.State{Stage: returns.StageDraftReady, Draft: draft, Approvals: 2, Decisions: []returns.Decision{alice, bob}, Uncounted: bothOut}, []string{returns.NodeReview, returns.NodeReview2}, ""},
		{"ANewApprovalOfTheUncountedApproverCounts", returns.State{Stage: returns.StageDraftReady, Draft: draft, Approvals: 2, Decisions: []returns.Decision{alice, bob, approve("a2", "alice")}, Uncounted: aliceOut}, []string{returns.NodeReview2}, returns.ActionApprove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := returns.AfterSubmit(tc.st); !slices.Equal(got, tc.next) {
				t.Errorf("after submit: %v, want %v", got, tc.next)
			}
			if got := returns.RoundAction(tc.st); got != tc.roundAfter {
				t.Errorf("round action: %q, want %q", got, tc.roundAfter)
			}
		})
	}
}
