package returns_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow"
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

// TestRecoverEndsExpiredDrafts: recover ends every task waiting for
// approval of a draft that has expired, failed with draft_expired, through
// the engine (a checkpoint and the record both say so); nothing is
// submitted, an approve afterwards is refused, prune may remove it, and a
// start of the same request shows how it ended.
func TestRecoverEndsExpiredDrafts(t *testing.T) {
	svc, b := setupSQLite(t) // prune needs a store that can prune
	for _, o := range []returns.StartOptions{
		{Task: "r1", User: user, Order: "A3003", Reason: "size", TTL: time.Minute},
		{Task: "r2", User: user, Order: "A3004", Reason: "size", TTL: time.Hour},
		{Task: "o1", User: otherUser, Order: "B4001", Reason: "size", TTL: time.Minute},
		{Task: "r3", User: user, Order: "A3001", TTL: time.Minute}, // asks for a reason: no draft
	} {
		if _, err := svc.Start(b.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	b.clock.Advance(time.Minute)
	got, err := svc.Recover(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ended := map[string]returns.Recovered{}
	for _, r := range got {
		ended[r.Task] = r
	}
	if len(got) != 2 || ended["r1"].Ended != returns.CodeDraftExpired || ended["o1"].User != otherUser ||
		ended["r1"].Status != returns.StatusFailed || ended["r1"].Stage != returns.StageFailed {
		t.Fatalf("recover %+v, want r1 and o1 ended failed with draft_expired", got)
	}
	wantRecord(t, svc, "r1", returns.StatusFailed, returns.StageFailed)
	wantRecord(t, svc, "o1", returns.StatusFailed, returns.StageFailed)
	wantRecord(t, svc, "r2", returns.StatusWaiting, returns.StageDraftReady)
	wantRecord(t, svc, "r3", returns.StatusWaiting, returns.StageNeedReason)

	v, err := svc.Show(b.ctx, "r1", user)
	if err != nil || v.Status != returns.StatusFailed || v.Error == nil || v.Error.Code != returns.CodeDraftExpired ||
		v.Result != nil || len(v.Interrupts) != 0 || !v.Draft.Expired {
		t.Fatalf("show r1: %+v (%v), want failed with draft_expired, no question, the draft expired", v, err)
	}
	head, err := b.cps.Get(b.ctx, "r1", "")
	if err != nil || head.Metadata.Source != flow.SourceUpdate || head.Metadata.Writes[returns.NodeGiveUp] == nil {
		t.Fatalf("head of r1: %+v (%v), want a checkpoint written as give_up", head, err)
	}
	if _, err := svc.Desk().ApplicationByTask(b.ctx, "r1"); !errors.Is(err, business.ErrNotFound) {
		t.Fatalf("application of r1: %v, want none", err)
	}

	_, err = svc.Resume(b.ctx, approve("r1"))
	wantErr(t, err, returns.ErrConflict)
	if !strings.Contains(err.Error(), "ended as failed (draft_expired)") {
		t.Fatalf("approve after the end: %v, want it to say how the task ended", err)
	}
	again, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", TTL: time.Minute})
	if err != nil || again.Status != returns.StatusFailed || again.Error.Code != returns.CodeDraftExpired || again.Draft.DraftID != v.Draft.DraftID {
		t.Fatalf("start r1 again: %+v (%v), want its end, the same draft", again, err)
	}
	if got, err := svc.Recover(b.ctx); err != nil || len(got) != 0 {
		t.Fatalf("recover again: %+v (%v), want nothing", got, err)
	}

	b.clock.Advance(time.Hour)
	pr, err := svc.Prune(b.ctx, returns.PruneOptions{FinishedBefore: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pruned := []string{}
	for _, p := range pr.Tasks {
		pruned = append(pruned, p.Task)
	}
	if !slices.Contains(pruned, "r1") || slices.Contains(pruned, "r2") {
		t.Fatalf("pruned %v, want r1 (ended) and not r2 (expired now, still waiting)", pruned)
	}
}
