package cmd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
)

// TestCardExpiredDraft: the card of a task waiting for approval of an
// expired draft says so and prints the commands that go on (a new
// request, recover), with the global flags, instead of the approve
// command that can no longer submit anything (issue 15 case 3).
func TestCardExpiredDraft(t *testing.T) {
	kind := returns.KindApproval
	expires := time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC)
	question, _ := json.Marshal(returns.ApprovalQuestion{Kind: kind, DraftID: "d_1", OrderID: "A3003", Reason: "too small", ExpiresAt: expires, Effect: "approve submits"})
	view := func(expired bool) *returns.View {
		return &returns.View{
			Task: "r1", User: "ci-bot", Order: "A3003", Status: returns.StatusWaiting, Stage: returns.StageDraftReady, Kind: &kind,
			Next:       []string{returns.NodeReview},
			Interrupts: []returns.InterruptView{{ID: "i1", Node: returns.NodeReview, Kind: kind, Value: question}},
			Draft:      &returns.DraftView{DraftID: "d_1", OrderID: "A3003", Reason: "too small", ExpiresAt: expires, Expired: expired},
		}
	}
	var got strings.Builder
	if err := writeCard(&got, view(true), "assistant --data /tmp/ci --user ci-bot"); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "card_expired_text", got.String())
	if strings.Contains(got.String(), "--action approve") {
		t.Errorf("the card of an expired draft offers approve:\n%s", got.String())
	}

	got.Reset()
	if err := writeCard(&got, view(false), "assistant"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.String(), "--action approve --draft d_1") || strings.Contains(got.String(), "expired before") {
		t.Errorf("the card of a draft not expired must ask for approval:\n%s", got.String())
	}
}

func TestNewTaskID(t *testing.T) {
	for task, want := range map[string]string{"r1": "r1-2", "r1-2": "r1-2-2", "return-25": "return-25-2"} {
		if got := newTaskID(task); got != want {
			t.Errorf("newTaskID(%q) = %q, want %q", task, got, want)
		}
	}
}
