package returns_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

// waitFor runs Wait in a goroutine; the returned function gives its result.
func waitFor(svc *returns.Service, o returns.WaitOptions) func() (*returns.View, error) {
	type res struct {
		v   *returns.View
		err error
	}
	done := make(chan res, 1)
	go func() {
		v, err := svc.Wait(context.Background(), o)
		done <- res{v, err}
	}()
	return func() (*returns.View, error) { r := <-done; return r.v, r.err }
}

func TestWait(t *testing.T) {
	// A data dir deleted or replaced under a wait ends it with not found
	// (exit 4): the open files would read on for ever. Whether the file
	// goes before Wait looks first or while it polls, the answer is the
	// same.
	for name, change := range map[string]func(t *testing.T, path string){
		"DataDirDeleted": func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
		"DataDirReplaced": func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			svc, b := setup(t)
			mustStart(t, svc, "r1", "A3003", "size")
			result := waitFor(svc, returns.WaitOptions{Task: "r1", User: user})
			change(t, filepath.Join(b.dir, returns.BusinessFile))
			if _, err := result(); !errors.Is(err, returns.ErrNotFound) {
				t.Fatalf("Wait after the data dir changed: %v, want ErrNotFound", err)
			}
		})
	}

	t.Run("ApprovedByAnotherCaller", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		result := waitFor(svc, returns.WaitOptions{Task: "r1", User: user})
		mustResume(t, svc, approve("r1"))
		v, err := result()
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusDone, returns.StageSubmitted)
		if got := returns.OutcomeOf(v); got != returns.OutcomeDone {
			t.Fatalf("outcome %s, want done", got)
		}
	})

	t.Run("CancelledByAnotherCaller", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		result := waitFor(svc, returns.WaitOptions{Task: "r1", User: user})
		mustResume(t, svc, cancel("r1"))
		v, err := result()
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusCancelled, returns.StageCancelled)
	})

	t.Run("DraftExpiresWhileWaiting", func(t *testing.T) {
		svc, b := setup(t)
		started := mustStart(t, svc, "r1", "A3003", "size")
		result := waitFor(svc, returns.WaitOptions{Task: "r1", User: user})
		b.clock.Advance(business.DefaultDraftTTL)
		v, err := result()
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != returns.StatusFailed || v.Error == nil || v.Error.Code != returns.CodeDraftExpired || returns.OutcomeOf(v) != returns.OutcomeFailed {
			t.Fatalf("status %s, error %+v; want failed with draft_expired", v.Status, v.Error)
		}
		if v.Draft == nil || v.Draft.DraftID != started.Draft.DraftID || !v.Draft.Expired || v.Stage != returns.StageFailed || len(v.Interrupts) != 0 || v.Kind != nil {
			t.Fatalf("draft %+v, stage %s, kind %v, interrupts %v; want the started draft expired, as the task will end: stage failed, no question", v.Draft, v.Stage, v.Kind, v.Interrupts)
		}
		// Wait wrote nothing: the task still waits at its question.
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
		// Show tells what wait told: the record is not what either shows.
		shown, err := svc.Show(b.ctx, "r1", user)
		if err != nil || shown.Status != returns.StatusFailed || shown.Error == nil || shown.Error.Code != returns.CodeDraftExpired {
			t.Fatalf("show after wait: %+v (%v), want failed with draft_expired, as wait said", shown, err)
		}
	})

	t.Run("TimeoutReturnsTheCurrentView", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		v, err := svc.Wait(context.Background(), returns.WaitOptions{Task: "r1", User: user, Timeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		if got := returns.OutcomeOf(v); got != returns.OutcomeNotFinished {
			t.Fatalf("outcome %s, want not finished", got)
		}
	})

	t.Run("ProcessGoneIsInterruptedAtOnce", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodePrepare)
		v, err := svc.Wait(b.ctx, returns.WaitOptions{Task: "r1", User: user})
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != returns.StatusRunning || v.Holder == nil || v.Holder.Alive || returns.OutcomeOf(v) != returns.OutcomeInterrupted {
			t.Fatalf("status %s, holder %+v; want running with its holder gone", v.Status, v.Holder)
		}
		// Wait recovered nothing.
		wantRecord(t, svc, "r1", returns.StatusRunning, "")
	})

	t.Run("HolderThatLapsesWhileWaited", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.liveLease(), "r1", "A3003", "size", returns.NodePrepare)
		result := waitFor(svc, returns.WaitOptions{Task: "r1", User: user})
		// Nothing on this host can tell the other host's process died:
		// its lease lapsing does, and the record does not change for it.
		b.clock.Advance(returns.DefaultLeaseTTL + time.Second)
		v, err := result()
		if err != nil {
			t.Fatal(err)
		}
		if v.Holder == nil || v.Holder.Alive || returns.OutcomeOf(v) != returns.OutcomeInterrupted {
			t.Fatalf("status %s, holder %+v; want its holder gone", v.Status, v.Holder)
		}
	})

	t.Run("StoppedIsInterrupted", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.liveLease(), "r1", "A3003", "size", returns.NodePrepare)
		if _, err := svc.Stop(b.ctx, "r1", user, 0); err != nil {
			t.Fatal(err)
		}
		v, err := svc.Wait(b.ctx, returns.WaitOptions{Task: "r1", User: user})
		if err != nil || v.Status != returns.StatusInterrupted || returns.OutcomeOf(v) != returns.OutcomeInterrupted {
			t.Fatalf("wait on a stopped task: %+v (%v), want interrupted", v, err)
		}
	})

	t.Run("EndedTaskReturnsAtOnce", func(t *testing.T) {
		for _, tc := range []struct {
			order  string
			answer func(string) returns.ResumeOptions
			want   returns.Outcome
			code   string
		}{
			{"A3003", approve, returns.OutcomeDone, ""},
			{"A3003", cancel, returns.OutcomeCancelled, ""},
			{"A3007", nil, returns.OutcomeFailed, "final_sale"},
		} {
			svc, b := setup(t)
			mustStart(t, svc, "r1", tc.order, "size")
			if tc.answer != nil {
				mustResume(t, svc, tc.answer("r1"))
			}
			v, err := svc.Wait(b.ctx, returns.WaitOptions{Task: "r1", User: user})
			if err != nil || returns.OutcomeOf(v) != tc.want || (tc.code != "" && (v.Error == nil || v.Error.Code != tc.code)) {
				t.Fatalf("%s: %+v (%v), want %s %s", tc.order, v, err, tc.want, tc.code)
			}
		}
	})

	t.Run("UnknownOrOtherUsersTaskIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Wait(b.ctx, returns.WaitOptions{Task: "nope", User: user})
		wantErr(t, err, returns.ErrNotFound)
		_, err = svc.Wait(b.ctx, returns.WaitOptions{Task: "r1", User: otherUser})
		wantErr(t, err, returns.ErrNotFound)
	})

	t.Run("CancelledContextEndsTheWait", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		ctx, stop := context.WithCancel(b.ctx)
		stop()
		_, err := svc.Wait(ctx, returns.WaitOptions{Task: "r1", User: user})
		wantErr(t, err, context.Canceled)
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
	})
}

// BenchmarkWaitLook compares what Wait reads per look while nothing
// changes (the task's record) with a full Show of a task waiting for
// approval, over SQLite files: Wait looks up to ten times a second.
func BenchmarkWaitLook(b *testing.B) {
	ctx := context.Background()
	svc, _ := openService(b, 1)
	if _, err := svc.Start(ctx, returns.StartOptions{Task: "t0", User: user, Order: "P0", Reason: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.Run("Look", func(b *testing.B) {
		for range b.N {
			if err := svc.Look(ctx, "t0", user); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Show", func(b *testing.B) {
		for range b.N {
			if _, err := svc.Show(ctx, "t0", user); err != nil {
				b.Fatal(err)
			}
		}
	})
}
