package runs

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// The bookkeeping of a superstep: a held run's superstep is one commit (the
// check, the lease renewal, the ends of the steps before and the new
// steps), the last ends ride in the release, and a takeover settles the
// steps a holder left running from what its checkpoints hold.

func TestBeginStepsRecordsTheEndsBeforeAndRenewsInOneCommit(t *testing.T) {
	t.Parallel()
	forStores(t, testBeginStepsRecordsTheEndsBeforeAndRenewsInOneCommit)
}

func testBeginStepsRecordsTheEndsBeforeAndRenewsInOneCommit(t *testing.T, kind storeKind) {
	ctx := context.Background()
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	held := atEpoch(holder, 1)

	t.Run("EndsRenewalAndNewStepsTogether", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		first, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t0, Max: 5})
		if err != nil {
			t.Fatal(err)
		}
		renew := t0.Add(time.Hour)
		seqs, err := s.BeginSteps(ctx, "return-25", Superstep{
			Holder: held, Renew: renew, Nodes: []string{"prepare"}, Now: t2, Max: 5,
			Ended: []StepEnd{{Seq: first[0], Status: StepDone, At: t1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []TimelineStep{
			{Task: "return-25", Seq: 1, Node: "lookup", Attempt: 1, Status: StepDone, StartedAt: t0, EndedAt: t1},
			{Task: "return-25", Seq: 2, Node: "prepare", Attempt: 1, Status: StepRunning, StartedAt: t2},
		}
		if got := stepsOf(t, s, "return-25"); !slices.Equal(seqs, []int{2}) || !slices.Equal(got, want) {
			t.Errorf("seqs %v, steps %+v; want [2], %+v", seqs, got, want)
		}
		if l := mustTask(t, s, "return-25").Lease; !l.Until.Equal(renew) {
			t.Errorf("lease until %s, want renewed to %s", l.Until, renew)
		}
	})

	t.Run("NoRenewalLeavesTheLeaseAsItWas", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		if _, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t1}); err != nil {
			t.Fatal(err)
		}
		if l := mustTask(t, s, "return-25").Lease; !l.Until.Equal(holder.Until) {
			t.Errorf("lease until %s, want %s unchanged", l.Until, holder.Until)
		}
	})

	// A refused superstep writes nothing: not its steps, not the ends it
	// carried, not the renewal. The run keeps the ends for its release.
	refusals := []struct {
		name    string
		setup   func(t *testing.T, s *Store)
		holder  Lease
		wantErr error
	}{
		{name: "Stopped", setup: func(t *testing.T, s *Store) { mustStop(t, s, "return-25") }, holder: held, wantErr: ErrStopped},
		{name: "OlderEpoch", setup: func(t *testing.T, s *Store) {
			mustAcquire(t, s, "return-25", holder, t0, alive) // the same owner again: epoch 2
		}, holder: held, wantErr: ErrLeaseLost},
		{name: "TakenOver", setup: func(t *testing.T, s *Store) {
			mustAcquire(t, s, "return-25", o2, holder.Until, unknown)
		}, holder: held, wantErr: ErrLeaseLost},
	}
	for _, tt := range refusals {
		t.Run("Refused"+tt.name+"WritesNothing", func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			first, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			tt.setup(t, s)
			before, lease := stepsOf(t, s, "return-25"), mustTask(t, s, "return-25").Lease

			_, err = s.BeginSteps(ctx, "return-25", Superstep{
				Holder: tt.holder, Renew: t0.Add(time.Hour), Nodes: []string{"prepare"}, Now: t2,
				Ended: []StepEnd{{Seq: first[0], Status: StepDone, At: t1}},
			})

			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got := stepsOf(t, s, "return-25"); !slices.Equal(got, before) {
				t.Errorf("steps %+v, want unchanged %+v", got, before)
			}
			if l := mustTask(t, s, "return-25").Lease; l != lease {
				t.Errorf("lease %+v, want unchanged %+v", l, lease)
			}
		})
	}

	t.Run("AttemptsRefusalKeepsTheEndsUnwritten", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustRun(t, s, "return-25", repeat(2, "prepare", StepFailed, "boom"))
		first, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		before := stepsOf(t, s, "return-25")
		_, err = s.BeginSteps(ctx, "return-25", Superstep{
			Holder: held, Nodes: []string{"prepare"}, Now: t2, Max: 2,
			Ended: []StepEnd{{Seq: first[0], Status: StepDone, At: t1}},
		})
		if !errors.Is(err, ErrAttemptsExhausted) {
			t.Fatalf("err = %v, want ErrAttemptsExhausted", err)
		}
		if got := stepsOf(t, s, "return-25"); !slices.Equal(got, before) {
			t.Errorf("steps %+v, want unchanged %+v", got, before)
		}
	})
}

func TestReleaseRecordsTheLastEnds(t *testing.T) {
	t.Parallel()
	forStores(t, testReleaseRecordsTheLastEnds)
}

func testReleaseRecordsTheLastEnds(t *testing.T, kind storeKind) {
	ctx := context.Background()
	t1 := t0.Add(time.Second)
	held := atEpoch(holder, 1)
	for _, durable := range []bool{false, true} {
		for _, keep := range []bool{false, true} {
			name := map[bool]string{false: "Lazy", true: "Durable"}[durable] + map[bool]string{false: "Release", true: "Keep"}[keep]
			t.Run(name, func(t *testing.T) {
				s, _ := newSeededOn(t, kind)
				mustCreateLeased(t, s, "return-25", holder)
				seqs, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"review"}, Now: t0})
				if err != nil {
					t.Fatal(err)
				}
				err = s.Release(ctx, "return-25", Release{
					Owner: "o1", Status: "waiting", Stage: "draft_ready", Keep: keep, Durable: durable,
					Ended: []StepEnd{{Seq: seqs[0], Status: StepWaiting, At: t1}},
				})
				if err != nil {
					t.Fatal(err)
				}
				want := TimelineStep{Task: "return-25", Seq: 1, Node: "review", Attempt: 1, Status: StepWaiting, StartedAt: t0, EndedAt: t1}
				if got := stepsOf(t, s, "return-25"); !slices.Equal(got, []TimelineStep{want}) {
					t.Errorf("steps %+v, want %+v", got, want)
				}
				rec := mustTask(t, s, "return-25")
				if rec.Status != "waiting" || (rec.Lease.Owner == "o1") != keep {
					t.Errorf("record %s held by %q; want waiting, kept %v", rec.Status, rec.Lease.Owner, keep)
				}
			})
		}
	}

	t.Run("LostLeaseWritesNoEnd", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		seqs, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"review"}, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, s, "return-25", o2, holder.Until, unknown)
		err = s.Release(ctx, "return-25", Release{
			Owner: "o1", Status: "waiting", Stage: "draft_ready", Durable: true,
			Ended: []StepEnd{{Seq: seqs[0], Status: StepWaiting, At: t1}},
		})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
		if got := stepsOf(t, s, "return-25"); got[0].Status != StepRunning {
			t.Errorf("step %+v, want still running", got[0])
		}
	})
}

func TestSettleRunningSteps(t *testing.T) {
	t.Parallel()
	forStores(t, testSettleRunningSteps)
}

func testSettleRunningSteps(t *testing.T, kind storeKind) {
	ctx := context.Background()
	t1, t2, now := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(time.Minute)
	// Each case leaves steps of nodes running (started at t1, or at the
	// head's own time with startAtHead), settles them as how says, and
	// wants each node's status.
	tests := []struct {
		name        string
		running     []string
		startAtHead bool
		how         Settlement
		want        map[string]string
		wantFailed  int
	}{
		{
			name: "NothingTellsFailsThemAll", running: []string{"lookup", "prepare"},
			want: map[string]string{"lookup": StepFailed, "prepare": StepFailed}, wantFailed: 2,
		},
		{
			name: "HeadMadeOfTheNodeEndsItDone", running: []string{"lookup"},
			how:  Settlement{Finished: []string{"lookup"}, FinishedAt: t2},
			want: map[string]string{"lookup": StepDone},
		},
		{
			// A step that began with or after the head (a node that runs
			// again) was not finished by it.
			name: "HeadNotAfterTheStepDoesNotEndIt", running: []string{"review"}, startAtHead: true,
			how:  Settlement{Finished: []string{"review"}, FinishedAt: t2},
			want: map[string]string{"review": StepFailed}, wantFailed: 1,
		},
		{
			name: "SavedUpdateEndsItDone", running: []string{"a", "b"},
			how:  Settlement{Saved: []string{"a"}},
			want: map[string]string{"a": StepDone, "b": StepFailed}, wantFailed: 1,
		},
		{
			name: "UnansweredQuestionEndsItWaiting", running: []string{"review"},
			how:  Settlement{Asked: []string{"review"}, Finished: []string{"review"}, FinishedAt: t2},
			want: map[string]string{"review": StepWaiting},
		},
		{
			name: "OtherNodesFail", running: []string{"prepare"},
			how:  Settlement{Finished: []string{"lookup"}, FinishedAt: t2, Saved: []string{"x"}, Asked: []string{"y"}},
			want: map[string]string{"prepare": StepFailed}, wantFailed: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			mustRun(t, s, "return-25", []ran{{"lookup", StepDone, ""}})
			start := t1
			if tt.startAtHead {
				start = tt.how.FinishedAt
			}
			for _, node := range tt.running {
				if _, err := s.StartStep(ctx, "return-25", node, start); err != nil {
					t.Fatal(err)
				}
			}

			n, err := s.SettleRunningSteps(ctx, "return-25", tt.how, MsgProcessGone, now)

			if err != nil || n != tt.wantFailed {
				t.Fatalf("SettleRunningSteps = %d, %v; want %d failed", n, err, tt.wantFailed)
			}
			steps := stepsOf(t, s, "return-25")
			if steps[0].Status != StepDone || !steps[0].EndedAt.Equal(t0) {
				t.Errorf("the step that had ended changed: %+v", steps[0])
			}
			for _, st := range steps[1:] {
				want := tt.want[st.Node]
				wantAt, wantErr := now, ""
				switch want {
				case StepFailed:
					wantErr = MsgProcessGone
				case StepDone:
					if slices.Contains(tt.how.Finished, st.Node) && !tt.startAtHead {
						wantAt = tt.how.FinishedAt
					}
				}
				if st.Status != want || st.Error != wantErr || !st.EndedAt.Equal(wantAt) {
					t.Errorf("step %s: %s %q ended %s; want %s %q ended %s", st.Node, st.Status, st.Error, st.EndedAt, want, wantErr, wantAt)
				}
			}
		})
	}
}
