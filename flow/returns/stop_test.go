package returns_test

import (
	"context"
	"testing"
	"time"

	"assistant/checkpoints"
	"assistant/flow"
	"assistant/flow/returns"
)

func TestStop(t *testing.T) {
	t.Run("WaitingTaskIsConflict", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Stop(b.ctx, "r1", user, 0)
		wantErr(t, err, returns.ErrConflict)
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("NegativeWaitIsInvalidAndStopsNothing", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.liveLease(), "r1", "A3003", "size", returns.NodePrepare)
		_, err := svc.Stop(b.ctx, "r1", user, -time.Second)
		wantErr(t, err, returns.ErrInvalid)
		wantRecord(t, svc, "r1", returns.StatusRunning, "")
	})

	t.Run("UnknownTaskIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		_, err := svc.Stop(b.ctx, "nope", user, 0)
		wantErr(t, err, returns.ErrNotFound)
	})

	t.Run("RunningTaskOfDeadProcessIsInterrupted", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodePrepare)
		// The holder is gone: Stop does not wait for it, however long it may.
		v, err := svc.Stop(b.ctx, "r1", user, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusInterrupted, "")
		if v.Holder == nil || v.Holder.Alive {
			t.Fatalf("holder %+v, want the dead process", v.Holder)
		}
		wantRecord(t, svc, "r1", returns.StatusInterrupted, "")
	})

	t.Run("RunningTaskOfLiveProcessIsInterrupted", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.liveLease(), "r1", "A3003", "size", returns.NodePrepare)
		v, err := svc.Stop(b.ctx, "r1", user, 0)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusInterrupted, "")
		if v.Holder == nil || !v.Holder.Alive {
			t.Fatalf("holder %+v, want the live process, which has not noticed yet", v.Holder)
		}
	})

	t.Run("StoppedTaskWithoutRunShowsInterrupted", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", "")
		v, err := svc.Stop(b.ctx, "r1", user, 0)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusInterrupted, "")
	})

	t.Run("ResumeContinuesStoppedTask", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodePrepare)
		if _, err := svc.Stop(b.ctx, "r1", user, 0); err != nil {
			t.Fatal(err)
		}
		v := mustResume(t, svc, returns.ResumeOptions{Task: "r1"})
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		if v.Holder != nil {
			t.Fatalf("holder %+v, want none once it waits", v.Holder)
		}
	})
}

// stallingCheckpointer holds the Put of thread's first checkpoint (its
// input, written on the run's context) until that context ends, then
// stores it: the run is part-way, nothing of it done, for as long as the
// test needs, and it goes on only to see that it was stopped.
type stallingCheckpointer struct {
	*checkpoints.Memory
	thread  string
	stalled chan struct{} // closed once the Put is held
}

func (c *stallingCheckpointer) Put(ctx context.Context, cp *flow.Checkpoint) error {
	if cp.ThreadID == c.thread && cp.Metadata.Source == flow.SourceInput {
		close(c.stalled)
		<-ctx.Done()
	}
	return c.Memory.Put(context.WithoutCancel(ctx), cp)
}

// Fenced keeps the run's writes going through the stalling Put: the
// embedded store's view would bypass it.
func (c *stallingCheckpointer) Fenced(string, int64) flow.Checkpointer { return c }

func TestStopWhileRunning(t *testing.T) {
	// startStalled starts r1 on ctx in a goroutine and returns once its
	// run is held at its first checkpoint; the Start's view comes on the
	// channel.
	startStalled := func(t *testing.T, ctx context.Context) (*returns.Service, *bundle, <-chan *returns.View) {
		cps := &stallingCheckpointer{Memory: checkpoints.NewMemory(), thread: "r1", stalled: make(chan struct{})}
		svc, b := setupWith(t, t.TempDir(), cps)
		done := make(chan *returns.View, 1)
		go func() {
			v, err := svc.Start(ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size"})
			if err != nil {
				t.Errorf("start: %v", err)
			}
			done <- v
		}()
		<-cps.stalled
		return svc, b, done
	}
	// wantNoStep checks the timeline: the run stopped before lookup, the
	// node due, began, so nothing ran and no step is recorded (the
	// timeline holds only steps that ran: attempts are real ones).
	wantNoStep := func(t *testing.T, svc *returns.Service, b *bundle) {
		h, err := svc.History(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Steps) != 0 {
			t.Fatalf("steps %+v, want none", h.Steps)
		}
	}

	t.Run("OperatorStopEndsTheRunInterrupted", func(t *testing.T) {
		svc, b, done := startStalled(t, context.Background())
		// Stop waits for this process's heartbeat to notice and let go.
		v, err := svc.Stop(b.ctx, "r1", user, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusInterrupted, "")
		if v.Holder != nil {
			t.Fatalf("holder %+v, want none once the run let go", v.Holder)
		}
		if started := <-done; started == nil || started.Status != returns.StatusInterrupted {
			t.Fatalf("start returned %+v, want the run interrupted", started)
		}
		wantNoStep(t, svc, b)
		wantView(t, mustResume(t, svc, returns.ResumeOptions{Task: "r1"}), returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("CancelledCommandEndsTheRunInterrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		svc, b, done := startStalled(t, ctx)
		cancel() // SIGINT
		if started := <-done; started == nil || started.Status != returns.StatusInterrupted {
			t.Fatalf("start returned %+v, want the run interrupted", started)
		}
		wantRecord(t, svc, "r1", returns.StatusInterrupted, "")
		wantNoStep(t, svc, b)
	})
}
