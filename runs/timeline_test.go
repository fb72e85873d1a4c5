package runs

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestTimeline(t *testing.T) {
	t.Parallel()
	forStores(t, testTimeline)
}

func testTimeline(t *testing.T, kind storeKind) {
	ctx := context.Background()
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	setup := func(t *testing.T) *Store {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		return s
	}
	mustStart := func(t *testing.T, s *Store, task, node string, at time.Time) int {
		t.Helper()
		seq, err := s.StartStep(ctx, task, node, at)
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	mustSteps := func(t *testing.T, s *Store, task string) []TimelineStep {
		t.Helper()
		steps, err := s.Steps(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		return steps
	}

	t.Run("StartStepNumbersSeqAndCountsAttemptsPerNode", func(t *testing.T) {
		s := setup(t)
		starts := []struct {
			node        string
			wantSeq     int
			wantAttempt int
		}{
			{"lookup", 1, 1},
			{"prepare", 2, 1},
			{"lookup", 3, 2},
			{"confirm", 4, 1},
			{"lookup", 5, 3},
		}
		for _, st := range starts {
			if seq := mustStart(t, s, "return-25", st.node, t0); seq != st.wantSeq {
				t.Errorf("StartStep(%s) = %d, want %d", st.node, seq, st.wantSeq)
			}
		}
		steps := mustSteps(t, s, "return-25")
		if len(steps) != len(starts) {
			t.Fatalf("Steps = %+v, want %d steps", steps, len(starts))
		}
		for i, st := range starts {
			want := TimelineStep{Task: "return-25", Seq: st.wantSeq, Node: st.node, Attempt: st.wantAttempt, Status: StepRunning, StartedAt: t0}
			if steps[i] != want {
				t.Errorf("step %d = %+v, want %+v", i+1, steps[i], want)
			}
		}
	})

	t.Run("SeqAndAttemptArePerTask", func(t *testing.T) {
		s := setup(t)
		mustCreateLeased(t, s, "return-26", holder)
		mustStart(t, s, "return-25", "lookup", t0)
		mustStart(t, s, "return-25", "lookup", t0)
		if seq := mustStart(t, s, "return-26", "lookup", t0); seq != 1 {
			t.Errorf("first StartStep of return-26 = %d, want 1", seq)
		}
		if last, err := s.LastStep(ctx, "return-26"); err != nil || last.Attempt != 1 {
			t.Errorf("LastStep of return-26 = %+v (%v), want attempt 1", last, err)
		}
	})

	t.Run("StartStepFollowsTheHighestSeq", func(t *testing.T) {
		s := setup(t)
		if err := s.AddStep(ctx, TimelineStep{Task: "return-25", Seq: 5, Node: "lookup", Attempt: 1, Status: StepDone, StartedAt: t0, EndedAt: t1}); err != nil {
			t.Fatal(err)
		}
		if seq := mustStart(t, s, "return-25", "prepare", t1); seq != 6 {
			t.Errorf("StartStep = %d, want 6", seq)
		}
	})

	ends := []struct {
		name   string
		status string
		msg    string
	}{
		{"EndStepRecordsDone", StepDone, ""},
		{"EndStepRecordsWaiting", StepWaiting, ""},
		{"EndStepRecordsFailureWithMessage", StepFailed, "order not found"},
	}
	for _, tt := range ends {
		t.Run(tt.name, func(t *testing.T) {
			s := setup(t)
			seq := mustStart(t, s, "return-25", "lookup", t0)
			if err := s.EndStep(ctx, "return-25", seq, tt.status, tt.msg, t1); err != nil {
				t.Fatal(err)
			}
			want := TimelineStep{Task: "return-25", Seq: 1, Node: "lookup", Attempt: 1, Status: tt.status,
				StartedAt: t0, EndedAt: t1, Error: tt.msg}
			if got := mustSteps(t, s, "return-25"); !slices.Equal(got, []TimelineStep{want}) {
				t.Errorf("Steps = %+v, want [%+v]", got, want)
			}
		})
	}

	t.Run("EndStepLeavesAnEndedStepAlone", func(t *testing.T) {
		s := setup(t)
		seq := mustStart(t, s, "return-25", "lookup", t0)
		if err := s.EndStep(ctx, "return-25", seq, StepDone, "", t1); err != nil {
			t.Fatal(err)
		}
		before := mustSteps(t, s, "return-25")
		if err := s.EndStep(ctx, "return-25", seq, StepFailed, "late failure", t2); err != nil {
			t.Fatalf("second EndStep: %v", err)
		}
		if got := mustSteps(t, s, "return-25"); !slices.Equal(got, before) {
			t.Errorf("Steps = %+v, want unchanged %+v", got, before)
		}
	})

	t.Run("EndStepOfUnknownSeqChangesNothing", func(t *testing.T) {
		s := setup(t)
		mustStart(t, s, "return-25", "lookup", t0)
		before := mustSteps(t, s, "return-25")
		if err := s.EndStep(ctx, "return-25", 9, StepDone, "", t1); err != nil {
			t.Fatalf("EndStep: %v", err)
		}
		if got := mustSteps(t, s, "return-25"); !slices.Equal(got, before) {
			t.Errorf("Steps = %+v, want unchanged %+v", got, before)
		}
	})

	t.Run("FailRunningStepsMarksOnlyRunningStepsOfTheTask", func(t *testing.T) {
		s := setup(t)
		mustCreateLeased(t, s, "return-26", holder)
		mustStart(t, s, "return-25", "lookup", t0)
		mustStart(t, s, "return-25", "prepare", t0)
		mustStart(t, s, "return-25", "confirm", t0)
		if err := s.EndStep(ctx, "return-25", 2, StepDone, "", t1); err != nil {
			t.Fatal(err)
		}
		mustStart(t, s, "return-26", "lookup", t0)

		n, err := s.FailRunningSteps(ctx, "return-25", "process died", t2)
		if err != nil || n != 2 {
			t.Fatalf("FailRunningSteps = %d (%v), want 2", n, err)
		}
		failed := func(seq int, node string) TimelineStep {
			return TimelineStep{Task: "return-25", Seq: seq, Node: node, Attempt: 1, Status: StepFailed,
				StartedAt: t0, EndedAt: t2, Error: "process died"}
		}
		want := []TimelineStep{
			failed(1, "lookup"),
			{Task: "return-25", Seq: 2, Node: "prepare", Attempt: 1, Status: StepDone, StartedAt: t0, EndedAt: t1},
			failed(3, "confirm"),
		}
		if got := mustSteps(t, s, "return-25"); !slices.Equal(got, want) {
			t.Errorf("Steps = %+v, want %+v", got, want)
		}
		if other := mustSteps(t, s, "return-26"); len(other) != 1 || other[0].Status != StepRunning {
			t.Errorf("steps of return-26 = %+v, want its one step still running", other)
		}
		if n, err := s.FailRunningSteps(ctx, "return-25", "process died", t2); err != nil || n != 0 {
			t.Errorf("second FailRunningSteps = %d (%v), want 0", n, err)
		}
	})

	t.Run("LastStepIsTheHighestSeq", func(t *testing.T) {
		s := setup(t)
		mustStart(t, s, "return-25", "lookup", t0)
		mustStart(t, s, "return-25", "prepare", t1)
		got, err := s.LastStep(ctx, "return-25")
		if err != nil || got.Seq != 2 || got.Node != "prepare" || !got.StartedAt.Equal(t1) || !got.EndedAt.IsZero() {
			t.Errorf("LastStep = %+v (%v), want running step 2 prepare started %v", got, err, t1)
		}
	})

	t.Run("LastStepOfEmptyTimelineIsNotFound", func(t *testing.T) {
		s := setup(t)
		if _, err := s.LastStep(ctx, "return-25"); !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	})

	t.Run("StepsAreInSeqOrderAndReadBackAsAdded", func(t *testing.T) {
		s := setup(t)
		added := []TimelineStep{
			{Task: "return-25", Seq: 3, Node: "confirm", Attempt: 1, Status: StepRunning, StartedAt: t2},
			{Task: "return-25", Seq: 1, Node: "lookup", Attempt: 1, Status: StepDone, StartedAt: t0, EndedAt: t1},
			{Task: "return-25", Seq: 2, Node: "prepare", Attempt: 1, Status: StepFailed, StartedAt: t1, EndedAt: t2, Error: "boom"},
		}
		for _, st := range added {
			if err := s.AddStep(ctx, st); err != nil {
				t.Fatal(err)
			}
		}
		want := []TimelineStep{added[1], added[2], added[0]}
		if got := mustSteps(t, s, "return-25"); !slices.Equal(got, want) {
			t.Errorf("Steps = %+v, want %+v", got, want)
		}
	})

	t.Run("StepsOfTaskWithoutTimelineAreNone", func(t *testing.T) {
		s := setup(t)
		if got := mustSteps(t, s, "return-25"); len(got) != 0 {
			t.Errorf("Steps = %+v, want none", got)
		}
	})

	t.Run("AddStepWithTakenSeqIsErrorAndKeepsTheFirst", func(t *testing.T) {
		s := setup(t)
		first := TimelineStep{Task: "return-25", Seq: 1, Node: "lookup", Attempt: 1, Status: StepDone, StartedAt: t0, EndedAt: t1}
		if err := s.AddStep(ctx, first); err != nil {
			t.Fatal(err)
		}
		dup := first
		dup.Node, dup.Status = "prepare", StepFailed
		if err := s.AddStep(ctx, dup); err == nil {
			t.Error("AddStep with a taken seq succeeded")
		}
		if got := mustSteps(t, s, "return-25"); !slices.Equal(got, []TimelineStep{first}) {
			t.Errorf("Steps = %+v, want [%+v]", got, first)
		}
	})

	counts := []struct {
		name         string
		nodes        []string // started in this order
		wantMaxSeq   int
		wantAttempts map[string]int
	}{
		{"StepCountsOfEmptyTimeline", nil, 0, map[string]int{}},
		{"StepCountsPerNode", []string{"lookup", "prepare", "lookup", "confirm", "lookup"}, 5,
			map[string]int{"lookup": 3, "prepare": 1, "confirm": 1}},
	}
	for _, tt := range counts {
		t.Run(tt.name, func(t *testing.T) {
			s := setup(t)
			for _, node := range tt.nodes {
				mustStart(t, s, "return-25", node, t0)
			}
			maxSeq, attempts, err := s.StepCounts(ctx, "return-25")
			if err != nil {
				t.Fatal(err)
			}
			if maxSeq != tt.wantMaxSeq || !maps.Equal(attempts, tt.wantAttempts) {
				t.Errorf("StepCounts = (%d, %v), want (%d, %v)", maxSeq, attempts, tt.wantMaxSeq, tt.wantAttempts)
			}
		})
	}
}
