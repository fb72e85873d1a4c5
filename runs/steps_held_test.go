package runs

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// BeginSteps checks the hold inside the first step's insert: a refusal
// there must still be told as the hold's (the hold before the attempts),
// and must leave nothing written, the ends of the steps before included.
func TestBeginStepsHoldBeforeAttempts(t *testing.T) {
	t.Parallel()
	forStores(t, testBeginStepsHoldBeforeAttempts)
}

func testBeginStepsHoldBeforeAttempts(t *testing.T, kind storeKind) {
	ctx := context.Background()
	t1 := t0.Add(time.Second)
	held := atEpoch(holder, 1)
	tests := []struct {
		name    string
		stop    bool // the task is stopped before the superstep
		wantErr error
	}{
		{name: "HeldAndExhaustedIsAttemptsError", wantErr: ErrAttemptsExhausted},
		{name: "StoppedAndExhaustedIsErrStopped", stop: true, wantErr: ErrStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			mustRun(t, s, "return-25", repeat(5, "lookup", StepFailed, "boom"), []ran{{"prepare", StepRunning, ""}})
			if tt.stop {
				mustStop(t, s, "return-25")
			}
			before := stepsOf(t, s, "return-25")
			last := before[len(before)-1]

			seqs, err := s.BeginSteps(ctx, "return-25", Superstep{
				Holder: held, Nodes: []string{"lookup"}, Now: t1, Max: 5,
				Ended: []StepEnd{{Seq: last.Seq, Status: StepDone, At: t1}},
			})

			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("BeginSteps: err = %v, want %v", err, tt.wantErr)
			}
			if seqs != nil {
				t.Errorf("seqs = %v, want none", seqs)
			}
			if got := stepsOf(t, s, "return-25"); !slices.Equal(got, before) {
				t.Errorf("Steps = %+v, want unchanged %+v (the end of step %d not recorded either)", got, before, last.Seq)
			}
		})
	}
}
