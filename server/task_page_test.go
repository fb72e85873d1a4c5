package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
	"assistant/runs"
)

// TestTimelineCountsOnlyRetries (docs/inbox.md "The task page"): a step
// is named in words with how it ended; a question asked again after an
// answer is not a retry, a step run again after a failed or cut-short
// run is, with its attempt.
func TestTimelineCountsOnlyRetries(t *testing.T) {
	step := func(node, status string, attempt int) runs.TimelineStep {
		return runs.TimelineStep{Node: node, Status: status, Attempt: attempt}
	}
	for _, tc := range []struct {
		name  string
		steps []runs.TimelineStep
		want  string
	}{
		{"AnsweredThenAskedAgain", []runs.TimelineStep{step("review", "waiting", 1), step("review", "done", 2), step("prepare", "done", 2), step("review", "waiting", 3)},
			"Ask for approval asked; Ask for approval answered; Prepare the draft finished; Ask for approval waiting for an answer"},
		{"CutShortThenRunAgain", []runs.TimelineStep{step("lookup", "done", 1), step("prepare", "running", 1), step("prepare", "done", 2)},
			"Look up the order finished; Prepare the draft cut short; Prepare the draft finished (attempt 2)"},
		{"TwoQuestionsOneAnswered", []runs.TimelineStep{step("review", "waiting", 1), step("review_2", "waiting", 1), step("review", "done", 2)},
			"Ask for approval asked; Ask for the second approval waiting for an answer; Ask for approval answered"},
		{"FailedThenRunAgain", []runs.TimelineStep{step("submit", "failed", 1), step("submit", "running", 2)},
			"Check the approvals again and submit failed; Check the approvals again and submit running (attempt 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range timelineOf(tc.steps) {
				w := s.Words + " " + s.StatusWords
				if s.Retry > 0 {
					w += fmt.Sprintf(" (attempt %d)", s.Retry)
				}
				got = append(got, w)
			}
			if g := strings.Join(got, "; "); g != tc.want {
				t.Errorf("timeline %q, want %q", g, tc.want)
			}
		})
	}
}

// TestReadableTimes: an RFC 3339 UTC time inside a sentence is written
// as the pages write times; other text is left as it is.
func TestReadableTimes(t *testing.T) {
	readable := pageFuncs["readable"].(func(string) string)
	for in, want := range map[string]string{
		"revoked at 2026-12-03T01:09:14Z: alice no longer holds a grant": "revoked at 2026-12-03 01:09:14 UTC: alice no longer holds a grant",
		"expired at 2026-12-03T01:09:14.123Z":                            "expired at 2026-12-03 01:09:14 UTC",
		"order 2026-12-03 and T01":                                       "order 2026-12-03 and T01",
	} {
		if got := readable(in); got != want {
			t.Errorf("readable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTaskPageOfASubmitPastItsBusinessCommit (docs/inbox.md "The task
// page"): a run whose submit made its application but has not recorded
// its end reads submitted, with its application and nothing to answer,
// whether its process is finishing or gone.
func TestTaskPageOfASubmitPastItsBusinessCommit(t *testing.T) {
	for _, alive := range []bool{true, false} {
		v := &returns.View{Task: "r3", User: "demo-user", Status: returns.StatusRunning,
			Result:  &returns.Result{ApplicationID: "app_1", ReviewStatus: "pending"},
			Holder:  &returns.HolderView{Alive: alive},
			Draft:   &returns.DraftView{DraftID: "d_1", Version: 1, ExpiresAt: time.Now().Add(time.Hour)},
			Actions: []string{}}
		p := taskPageOf(v, "Kettle", "demo-user", time.Now())
		if p.ApplicationID != "app_1" || !strings.HasPrefix(p.Closed, "Submitted: the return application was made") || p.Approve || p.Cancel || p.Edit {
			t.Errorf("holder alive %v: closed %q, application %q, approve %v; want it submitted with app_1 and nothing to press", alive, p.Closed, p.ApplicationID, p.Approve)
		}
	}
}
