package returns_test

import (
	"testing"
	"time"

	"assistant/flow/returns"
	"assistant/runs"
)

// The run bookkeeping of a superstep (the status and fencing
// check, the lease renewal, the ends of the steps before, the steps that
// start) is one business commit, the last steps' ends ride in the release,
// and a process that takes a task over settles the steps its former holder
// left running from the checkpoints.

func TestOneBookkeepingCommitPerSuperstep(t *testing.T) {
	svc, b := setup(t)
	count := func(fn func()) int64 {
		before := businessCommits.Load()
		fn()
		return businessCommits.Load() - before
	}
	// start: the task record with its lease; lookup, prepare and review,
	// one commit each; prepare's durable draft; the release (status
	// waiting, review's end). A superstep's steps end in its own commit,
	// never in one of their own.
	n := count(func() { mustStart(t, svc, "r1", "A3003", "size") })
	if n != 6 {
		t.Errorf("start made %d business commits, want 6 (record, 3 supersteps, draft, release)", n)
	}
	// approve: the lease; review and submit, one commit each; submit's
	// application with the decision that asked for it (one durable
	// commit); the release. The decision rides in submit's commit.
	n = count(func() { mustResume(t, svc, returns.ResumeOptions{Task: "r1", Action: returns.ActionApprove}) })
	if n != 5 {
		t.Errorf("approve made %d business commits, want 5 (lease, 2 supersteps, application with decision, release)", n)
	}
	h, err := svc.History(b.ctx, "r1", user)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ node, status string }{
		{returns.NodeLookup, runs.StepDone}, {returns.NodePrepare, runs.StepDone}, {returns.NodeReview, runs.StepWaiting},
		{returns.NodeReview, runs.StepDone}, {returns.NodeSubmit, runs.StepDone},
	}
	if len(h.Steps) != len(want) {
		t.Fatalf("steps %+v, want %d", h.Steps, len(want))
	}
	for i, st := range h.Steps {
		if st.Node != want[i].node || st.Status != want[i].status || st.EndedAt.IsZero() {
			t.Errorf("step %d: %s %s ended %v; want %s %s, ended", i+1, st.Node, st.Status, st.EndedAt, want[i].node, want[i].status)
		}
	}
}

func TestTakeoverSettlesStepsFromTheHead(t *testing.T) {
	// Each case leaves r1 as a holder killed between a checkpoint and the
	// commit that would have recorded its step's end (or in the middle of
	// a step), then resumes it, and wants the step settled as the
	// checkpoints tell, and the recovery's figures to match.
	tests := []struct {
		name string
		// stopBefore is where the dead holder's run paused (leftRunning);
		// running is the node whose step it left running, begun before
		// the head was written when beforeHead.
		stopBefore, running string
		beforeHead          bool
		repair              bool // the head waits already: resume repairs the record, runs nothing, reports no recovery
		wantStatus          string
		wantInterrupted     int
	}{
		{
			// Killed after lookup's checkpoint, before the next superstep's
			// commit: lookup's work is kept, and the timeline says so.
			name: "FinishedStepEndsDone", stopBefore: returns.NodePrepare, running: returns.NodeLookup, beforeHead: true,
			wantStatus: runs.StepDone,
		},
		{
			// Killed after review's question was saved, before the release.
			name: "AskedStepEndsWaiting", stopBefore: returns.NodeSubmit, running: returns.NodeReview, repair: true,
			wantStatus: runs.StepWaiting,
		},
		{
			// Killed while prepare ran: its work is lost, the step cut.
			name: "CutStepFails", stopBefore: returns.NodePrepare, running: returns.NodePrepare,
			wantStatus: runs.StepFailed, wantInterrupted: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := setup(t)
			b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", "")
			startStep := func() {
				if _, err := svc.Runs().StartStep(b.ctx, "r1", tt.running, b.clock.Now()); err != nil {
					t.Fatal(err)
				}
				b.clock.Advance(time.Millisecond)
			}
			if tt.beforeHead {
				startStep()
			}
			if _, err := b.graph(t, svc, tt.stopBefore).Invoke(b.ctx, "r1", returns.State{Task: "r1", User: user, Order: "A3003", Reason: "size", TTLSeconds: 300}); err != nil {
				t.Fatal(err)
			}
			b.clock.Advance(time.Millisecond)
			if !tt.beforeHead {
				startStep()
			}

			v := mustResume(t, svc, returns.ResumeOptions{Task: "r1"})

			steps, err := svc.Runs().Steps(b.ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) == 0 || steps[0].Node != tt.running || steps[0].Status != tt.wantStatus {
				t.Fatalf("steps %+v; want the first, %s, %s", steps, tt.running, tt.wantStatus)
			}
			if tt.wantStatus == runs.StepFailed && steps[0].Error != runs.MsgProcessGone {
				t.Errorf("cut step's error %q, want %q", steps[0].Error, runs.MsgProcessGone)
			}
			if tt.repair {
				if v.Status != returns.StatusWaiting {
					t.Errorf("status %s, want waiting", v.Status)
				}
				return
			}
			if v.Recovery == nil || v.Recovery.StepsInterrupted != tt.wantInterrupted || v.Recovery.StepsRedone != 0 {
				t.Errorf("recovery %+v, want %d interrupted, none redone", v.Recovery, tt.wantInterrupted)
			}
		})
	}
}
