package runs

import (
	"context"
	"errors"
	"testing"
	"time"

	"assistant/internal/sqlstore"
)

// TestAStopEndsTheStepsItCutShort: an operator stop ends, in its own
// commit, the steps the stopped run left running (failed, "run
// interrupted", at the stop's time), so the timeline tells where the stop
// cut the run short whatever the stopped process does next; a refused
// stop, and the stop of a run that ended already, leave them running. A
// step that ended is never rewritten: the stopped run's own end of it
// (its release, or EndSteps) changes nothing, and the stop's stands
// (docs/recovery.md "Operator stop").
func TestAStopEndsTheStepsItCutShort(t *testing.T) {
	t.Parallel()
	forStores(t, testAStopEndsTheStepsItCutShort)
}

func testAStopEndsTheStepsItCutShort(t *testing.T, kind storeKind) {
	ctx := context.Background()
	stopAt, doneAt := t0.Add(time.Minute), t0.Add(2*time.Minute)
	refuse := func(context.Context, sqlstore.Querier) error { return errors.New("submitted first") }
	cut := TimelineStep{Status: StepFailed, Error: MsgInterrupted, EndedAt: stopAt}
	running := TimelineStep{Status: StepRunning}
	done := TimelineStep{Status: StepDone, EndedAt: doneAt}
	// byRelease records prepare done in the run's release, as its holder;
	// byEndSteps records it with no holder's guard.
	byRelease := func(s *Store) error {
		return s.Release(ctx, "return-25", Release{Owner: holder.Owner, Status: "done", Stage: "submitted",
			Ended: []StepEnd{{Seq: 2, Status: StepDone, At: doneAt}}})
	}
	byEndSteps := func(s *Store) error {
		return s.EndSteps(ctx, "return-25", []StepEnd{{Seq: 2, Status: StepDone, At: doneAt}})
	}
	tests := []struct {
		name string
		stop func(s *Store) error
		end  func(s *Store) error
		// want is how step 2 (prepare, running at the stop) reads after
		// it; then after the stopped run recorded prepare done.
		want, afterRun TimelineStep
	}{
		{"StopEndsTheRunningStep/TheReleaseLeavesIt", func(s *Store) error { return s.RequestStop(ctx, "return-25") }, byRelease, cut, cut},
		{"StopEndsTheRunningStep/EndStepsLeavesIt", func(s *Store) error { return s.RequestStop(ctx, "return-25") }, byEndSteps, cut, cut},
		{"RefusedStopLeavesItRunning", func(s *Store) error { return s.RequestStop(ctx, "return-25", refuse) }, byRelease, running, done},
		{"StopOfAnEndedRunLeavesItRunning", func(s *Store) error { return s.RequestStopOfEnded(ctx, "return-25") }, byEndSteps, running, done},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, desk := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			for _, node := range []string{"lookup", "prepare"} {
				if _, err := s.StartStep(ctx, "return-25", node, t0); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.EndStep(ctx, "return-25", 1, StepDone, "", t0); err != nil {
				t.Fatal(err)
			}
			_ = tt.stop(New(desk.Handle(), fixed(stopAt)))
			check := func(when string, want TimelineStep) {
				t.Helper()
				steps, err := s.Steps(ctx, "return-25")
				if err != nil || len(steps) != 2 {
					t.Fatalf("%s: steps %+v (%v), want 2", when, steps, err)
				}
				if st := steps[0]; st.Status != StepDone || !st.EndedAt.Equal(t0) {
					t.Errorf("%s: lookup %+v, want done as it was", when, st)
				}
				st := steps[1]
				if st.Status != want.Status || st.Error != want.Error || !st.EndedAt.Equal(want.EndedAt) {
					t.Errorf("%s: prepare %s %q ended %v, want %s %q ended %v", when, st.Status, st.Error, st.EndedAt, want.Status, want.Error, want.EndedAt)
				}
			}
			check("after the stop", tt.want)
			// The stopped run says it completed prepare.
			if err := tt.end(s); err != nil {
				t.Fatal(err)
			}
			check("after the run's end", tt.afterRun)
		})
	}

	t.Run("AStoppedHolderFailsNoStep", func(t *testing.T) {
		s, desk := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		if _, err := s.StartStep(ctx, "return-25", "prepare", t0); err != nil {
			t.Fatal(err)
		}
		if err := New(desk.Handle(), fixed(stopAt)).RequestStop(ctx, "return-25"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StartStep(ctx, "return-25", "review", t0); err != nil {
			t.Fatal(err)
		}
		if n, err := s.FailRunningStepsHeld(ctx, "return-25", holder.Owner, "late", doneAt); err != nil || n != 0 {
			t.Errorf("FailRunningStepsHeld after a stop: %d (%v), want 0", n, err)
		}
		if err := s.EndStepsHeld(ctx, "return-25", holder.Owner, []StepEnd{{Seq: 2, Status: StepDone, At: doneAt}}); err != nil {
			t.Fatal(err)
		}
		if st, err := s.LastStep(ctx, "return-25"); err != nil || st.Status != StepRunning {
			t.Errorf("review %+v (%v), want running: a stopped holder writes no end", st, err)
		}
	})

	t.Run("AStepEndedOtherwiseIsLeftAsItIs", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		if _, err := s.StartStep(ctx, "return-25", "prepare", t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FailRunningSteps(ctx, "return-25", MsgProcessGone, stopAt); err != nil {
			t.Fatal(err)
		}
		if err := s.EndSteps(ctx, "return-25", []StepEnd{{Seq: 1, Status: StepDone, At: doneAt}}); err != nil {
			t.Fatal(err)
		}
		if st, err := s.LastStep(ctx, "return-25"); err != nil || st.Status != StepFailed || st.Error != MsgProcessGone {
			t.Errorf("prepare %+v (%v), want failed %q as the takeover ended it", st, err, MsgProcessGone)
		}
	})
}
