package returns_test

import (
	"testing"
	"time"

	"assistant/flow/returns"
)

func TestOutcomeOf(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	approval, reason := returns.KindApproval, returns.KindNeedReason
	draft := func(expired bool) *returns.DraftView {
		return &returns.DraftView{DraftID: "d_1", OrderID: "A3003", ExpiresAt: now, Expired: expired}
	}
	for _, tc := range []struct {
		name string
		v    returns.View
		want returns.Outcome
	}{
		{"Submitted", returns.View{Status: returns.StatusDone, Stage: returns.StageSubmitted}, returns.OutcomeDone},
		{"BatchRanEveryRow", returns.View{Status: returns.StatusDone, Stage: returns.StageBatchDone, Batch: &returns.BatchProgress{}}, returns.OutcomeDone},
		{"Cancelled", returns.View{Status: returns.StatusCancelled, Stage: returns.StageCancelled}, returns.OutcomeCancelled},
		{"FinalSale", returns.View{Status: returns.StatusFailed, Stage: returns.StageFailed, Error: &returns.Failure{Code: "final_sale"}}, returns.OutcomeFailed},
		{"AttemptsExhausted", returns.View{Status: returns.StatusFailed, Error: &returns.Failure{Code: returns.CodeAttemptsExhausted}}, returns.OutcomeFailed},
		{"WaitingForApproval", returns.View{Status: returns.StatusWaiting, Kind: &approval, Draft: draft(false)}, returns.OutcomeNotFinished},
		{"WaitingForReason", returns.View{Status: returns.StatusWaiting, Kind: &reason}, returns.OutcomeNotFinished},
		{"DraftExpired", returns.View{Status: returns.StatusWaiting, Kind: &approval, Draft: draft(true)}, returns.OutcomeFailed},
		{"StoppedAtQuestionDraftExpired", returns.View{Status: returns.StatusInterrupted, Kind: &approval, Draft: draft(true)}, returns.OutcomeFailed},
		{"RunningHolderAlive", returns.View{Status: returns.StatusRunning, Holder: &returns.HolderView{PID: 1, Alive: true}}, returns.OutcomeNotFinished},
		{"RunningNoHolderRead", returns.View{Status: returns.StatusRunning}, returns.OutcomeNotFinished},
		{"RunningHolderGone", returns.View{Status: returns.StatusRunning, Holder: &returns.HolderView{PID: 1}}, returns.OutcomeInterrupted},
		{"Stopped", returns.View{Status: returns.StatusInterrupted}, returns.OutcomeInterrupted},
		{"StoppedAtQuestion", returns.View{Status: returns.StatusInterrupted, Kind: &approval, Draft: draft(false)}, returns.OutcomeInterrupted},
		{"UnknownStatus", returns.View{Status: "sleeping"}, returns.OutcomeNotFinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := returns.OutcomeOf(&tc.v); got != tc.want {
				t.Fatalf("OutcomeOf = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[returns.Outcome]string{
		returns.OutcomeDone: "done", returns.OutcomeCancelled: "cancelled", returns.OutcomeFailed: "failed",
		returns.OutcomeNotFinished: "not finished", returns.OutcomeInterrupted: "interrupted", returns.Outcome(42): "outcome(42)",
	} {
		if got := o.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(o), got, want)
		}
	}
}
