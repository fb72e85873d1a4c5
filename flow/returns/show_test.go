package returns_test

import (
	"testing"
	"time"

	"assistant/flow/returns"
)

func TestShow(t *testing.T) {
	t.Run("WaitingTaskHasNoHolder", func(t *testing.T) {
		svc, b := setup(t)
		started := mustStart(t, svc, "r1", "A3003", "size")
		v, err := svc.Show(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		if v.Holder != nil || v.Draft.DraftID != started.Draft.DraftID {
			t.Fatalf("holder %+v, draft %+v; want no holder and the started draft", v.Holder, v.Draft)
		}
	})

	t.Run("RunningTaskNamesItsHolder", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "dead", "A3003", "size", returns.NodePrepare)
		b.leftRunning(t, svc, b.liveLease(), "live", "A3001", "size", returns.NodePrepare)
		for task, alive := range map[string]bool{"dead": false, "live": true} {
			v, err := svc.Show(b.ctx, task, user)
			if err != nil {
				t.Fatal(err)
			}
			wantView(t, v, returns.StatusRunning, "")
			if v.Holder == nil || v.Holder.Alive != alive || len(v.Next) != 1 || v.Next[0] != returns.NodePrepare {
				t.Fatalf("%s: holder %+v, next %v; want alive %t, prepare next", task, v.Holder, v.Next, alive)
			}
		}
	})

	t.Run("TaskWithoutRunIsRunning", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", "")
		v, err := svc.Show(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusRunning, "")
		if v.Holder == nil || v.Holder.PID != deadPID || v.Holder.Alive {
			t.Fatalf("holder %+v, want the dead process", v.Holder)
		}
	})

	t.Run("OtherUsersTaskIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Show(b.ctx, "r1", otherUser)
		wantErr(t, err, returns.ErrNotFound)
	})

	t.Run("BadTaskIDIsInvalid", func(t *testing.T) {
		svc, b := setup(t)
		_, err := svc.Show(b.ctx, "..", user)
		wantErr(t, err, returns.ErrInvalid)
	})
}

func TestList(t *testing.T) {
	t.Run("FiltersByStatus", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "waits", "A3003", "size")
		b.clock.Advance(time.Second)
		mustStart(t, svc, "done", "A3001", "size")
		mustResume(t, svc, approve("done"))
		b.clock.Advance(time.Second)
		mustStart(t, svc, "fails", "A3007", "size")
		all, err := svc.List(b.ctx, user, "")
		if err != nil || len(all) != 3 || all[0].Task != "waits" {
			t.Fatalf("list %+v (%v), want the 3 tasks oldest first", all, err)
		}
		waiting, err := svc.List(b.ctx, user, returns.StatusWaiting)
		if err != nil || len(waiting) != 1 || waiting[0].Task != "waits" || waiting[0].Stage != returns.StageDraftReady || waiting[0].Order != "A3003" {
			t.Fatalf("waiting %+v (%v), want only waits", waiting, err)
		}
		others, err := svc.List(b.ctx, otherUser, "")
		if err != nil || len(others) != 0 {
			t.Fatalf("other user's list %+v (%v), want none", others, err)
		}
	})

	t.Run("UnknownStatusIsInvalid", func(t *testing.T) {
		svc, b := setup(t)
		_, err := svc.List(b.ctx, user, "sleeping")
		wantErr(t, err, returns.ErrInvalid)
		for _, s := range append([]string{""}, returns.Statuses...) {
			if err := returns.CheckStatus(s); err != nil {
				t.Errorf("CheckStatus(%q): %v", s, err)
			}
		}
	})
}
