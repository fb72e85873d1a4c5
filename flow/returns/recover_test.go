package returns_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
	"assistant/runs"
)

func TestRecover(t *testing.T) {
	t.Run("NothingToRecover", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		got, err := svc.Recover(b.ctx)
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("recover %+v (%v), want an empty report", got, err)
		}
	})

	t.Run("ResumesTaskWhoseHolderDied", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodePrepare)
		got, err := svc.Recover(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Task != "r1" || got[0].User != user || got[0].Status != returns.StatusWaiting ||
			got[0].Stage != returns.StageDraftReady || got[0].Error != "" || got[0].Recovery == nil {
			t.Fatalf("recover %+v, want r1 waiting at draft_ready with its recovery figures", got)
		}
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("LeavesTaskOfLiveProcess", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.liveLease(), "r1", "A3003", "size", returns.NodePrepare)
		got, err := svc.Recover(b.ctx)
		if err != nil || len(got) != 0 {
			t.Fatalf("recover %+v (%v), want nothing recovered", got, err)
		}
		wantRecord(t, svc, "r1", returns.StatusRunning, "")
	})

	t.Run("ResumesTaskWhoseLeaseLapsed", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.liveLease(), "r1", "A3003", "size", returns.NodePrepare)
		b.clock.Advance(returns.DefaultLeaseTTL + time.Second)
		got, err := svc.Recover(b.ctx)
		if err != nil || len(got) != 1 || got[0].Status != returns.StatusWaiting {
			t.Fatalf("recover %+v (%v), want r1 waiting", got, err)
		}
	})

	t.Run("RebuildsTaskWithoutRun", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "", "")
		got, err := svc.Recover(b.ctx)
		if err != nil || len(got) != 1 || got[0].Stage != returns.StageNeedReason {
			t.Fatalf("recover %+v (%v), want r1 asking for a reason", got, err)
		}
	})

	t.Run("RepairsRecordBehindHead", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodeSubmit)
		if _, err := svc.Recover(b.ctx); err != nil {
			t.Fatal(err)
		}
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("TaskWhoseOrderVanishedFails", func(t *testing.T) {
		svc, b := setup(t)
		rec := runs.TaskRecord{ID: "r1", User: user, OrderID: "Z9999", Reason: "size"}
		if err := svc.Runs().CreateLeasedTask(b.ctx, rec, runs.KindReturn, time.Minute, b.deadLease()); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Recover(b.ctx); err != nil {
			t.Fatal(err)
		}
		v, err := svc.Show(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusFailed, returns.StageFailed)
		if v.Error.Code != returns.CodeOrderNotFound {
			t.Fatalf("error %+v, want %s", v.Error, returns.CodeOrderNotFound)
		}
	})

	t.Run("ReportsTaskItCannotResumeAndGoesOn", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodePrepare)
		b.putHead(t, "r1", `{"ttl_seconds":"soon"}`) // does not decode
		b.leftRunning(t, svc, b.deadLease(), "r2", "A3001", "size", returns.NodePrepare)
		got, err := svc.Recover(b.ctx)
		var re *returns.RecoverError
		if !errors.As(err, &re) || len(re.Failed) != 1 || re.Failed[0].Task != "r1" || len(got) != 2 {
			t.Fatalf("recover %+v (%v), want both tasks reported and a RecoverError naming r1", got, err)
		}
		if !strings.Contains(got[0].Error, "r1") || got[1].Error != "" || got[1].Status != returns.StatusWaiting {
			t.Fatalf("recover %+v, want r1's error and r2 waiting", got)
		}
		// A state this build cannot decode is a guard stop: the task ends
		// failed and recover does not try it again.
		wantRecord(t, svc, "r1", returns.StatusFailed, returns.StageFailed)
		if again, err := svc.Recover(b.ctx); err != nil || len(again) != 0 {
			t.Fatalf("second recover %+v (%v), want nothing to recover", again, err)
		}
	})
}
