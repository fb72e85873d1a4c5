package returns_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow"
	"assistant/flow/returns"
)

func TestResume(t *testing.T) {
	t.Run("ApproveSubmits", func(t *testing.T) {
		svc, b := setup(t)
		started := mustStart(t, svc, "r1", "A3003", "size")
		v := mustResume(t, svc, approve("r1"))
		wantView(t, v, returns.StatusDone, returns.StageSubmitted)
		if v.Result == nil || v.Result.ApplicationID == "" || v.Result.Reused || v.Result.ReviewStatus != business.ReviewPending {
			t.Fatalf("result %+v, want a new pending application", v.Result)
		}
		app, err := svc.Desk().ApplicationByDraft(b.ctx, started.Draft.DraftID)
		if err != nil || app.ID != v.Result.ApplicationID {
			t.Fatalf("application of the draft: %+v, %v; want %s", app, err, v.Result.ApplicationID)
		}
		wantRecord(t, svc, "r1", returns.StatusDone, returns.StageSubmitted)
	})

	t.Run("ApproveTwiceReusesApplication", func(t *testing.T) {
		svc, b := setup(t)
		started := mustStart(t, svc, "r1", "A3003", "size")
		first := mustResume(t, svc, approve("r1"))
		again := mustResume(t, svc, approve("r1"))
		if !again.Result.Reused || again.Result.ApplicationID != first.Result.ApplicationID {
			t.Fatalf("again %+v, want the first application reused", again.Result)
		}
		if n, err := svc.Desk().CountApplications(b.ctx, started.Draft.DraftID); err != nil || n != 1 {
			t.Fatalf("%d applications (%v), want 1", n, err)
		}
	})

	t.Run("RightDraftIsAccepted", func(t *testing.T) {
		svc, _ := setup(t)
		started := mustStart(t, svc, "r1", "A3003", "size")
		o := approve("r1")
		o.DraftID, o.InterruptID = started.Draft.DraftID, started.Interrupts[0].ID
		wantView(t, mustResume(t, svc, o), returns.StatusDone, returns.StageSubmitted)
	})

	t.Run("CancelEndsWithoutApplication", func(t *testing.T) {
		svc, b := setup(t)
		started := mustStart(t, svc, "r1", "A3003", "size")
		v := mustResume(t, svc, cancel("r1"))
		wantView(t, v, returns.StatusCancelled, returns.StageCancelled)
		if v.Result != nil {
			t.Fatalf("result %+v, want none", v.Result)
		}
		if n, _ := svc.Desk().CountApplications(b.ctx, started.Draft.DraftID); n != 0 {
			t.Fatalf("%d applications, want 0", n)
		}
	})

	t.Run("AnswerToEndedTask", func(t *testing.T) {
		// How each task ended: cancelled, submitted, refused at start
		// (final sale), and approved after its draft expired.
		end := map[string]func(t *testing.T, svc *returns.Service, b *bundle){
			"cancelled": func(t *testing.T, svc *returns.Service, b *bundle) {
				mustStart(t, svc, "r1", "A3003", "size")
				mustResume(t, svc, cancel("r1"))
			},
			"done": func(t *testing.T, svc *returns.Service, b *bundle) {
				mustStart(t, svc, "r1", "A3003", "size")
				mustResume(t, svc, approve("r1"))
			},
			"final_sale": func(t *testing.T, svc *returns.Service, b *bundle) {
				mustStart(t, svc, "r1", "A3007", "size")
			},
			"expired": func(t *testing.T, svc *returns.Service, b *bundle) {
				mustStart(t, svc, "r1", "A3003", "size")
				b.clock.Advance(business.DefaultDraftTTL)
				mustResume(t, svc, approve("r1"))
			},
		}
		withDraft := func(o returns.ResumeOptions, d string) returns.ResumeOptions { o.DraftID = d; return o }
		showR1 := &returns.Hint{Before: "run", Do: returns.DoShow, Task: "r1"}
		for _, tc := range []struct {
			name, ended string
			o           returns.ResumeOptions
			draft       bool          // the answer names the task's draft
			err         error         // nil: exit 0 with the outcome
			says        string        // part of the error's message
			hint        *returns.Hint // the error's hint, when checked
		}{
			{name: "CancelAgain", ended: "cancelled", o: cancel("r1")},
			{name: "CancelAgainWithItsDraft", ended: "cancelled", o: cancel("r1"), draft: true},
			{name: "PlainResumeOfCancelled", ended: "cancelled", o: returns.ResumeOptions{Task: "r1", User: user}},
			{name: "ApproveAfterCancel", ended: "cancelled", o: approve("r1"), err: returns.ErrConflict, says: "task r1 ended as cancelled; the answer approve changes nothing"},
			{name: "ApproveWrongDraftAfterCancel", ended: "cancelled", o: withDraft(approve("r1"), "d_wrong"), err: returns.ErrInvalid, says: "--draft d_wrong", hint: showR1},
			{name: "CancelWrongDraftAfterCancel", ended: "cancelled", o: withDraft(cancel("r1"), "d_wrong"), err: returns.ErrInvalid, says: "--draft d_wrong", hint: showR1},
			{name: "OtherReasonAfterCancel", ended: "cancelled", o: reason("r1", "colour"), err: returns.ErrConflict, says: "ended as cancelled"},
			{name: "SameReasonAfterCancel", ended: "cancelled", o: reason("r1", "size")},
			{name: "ApproveAgain", ended: "done", o: approve("r1"), draft: true},
			{name: "CancelAfterSubmit", ended: "done", o: cancel("r1"), err: returns.ErrConflict, says: "task r1 ended as done; the answer cancel changes nothing"},
			{name: "ApproveWrongDraftAfterSubmit", ended: "done", o: withDraft(approve("r1"), "d_wrong"), err: returns.ErrInvalid, says: "--draft d_wrong", hint: showR1},
			{name: "ApproveRefusedOrder", ended: "final_sale", o: approve("r1"), err: returns.ErrConflict, says: "ended as failed (final_sale)"},
			{name: "DraftOfRefusedOrder", ended: "final_sale", o: withDraft(cancel("r1"), "d_x"), err: returns.ErrInvalid, says: "ended with none"},
			{name: "PlainResumeOfRefused", ended: "final_sale", o: returns.ResumeOptions{Task: "r1", User: user}},
			{name: "ApproveExpiredAgain", ended: "expired", o: approve("r1")},
			{name: "CancelAfterExpired", ended: "expired", o: cancel("r1"), err: returns.ErrConflict, says: "task r1 ended as failed (draft_expired); the answer cancel changes nothing"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				svc, b := setup(t)
				end[tc.ended](t, svc, b)
				before, err := svc.Show(b.ctx, "r1", user)
				if err != nil {
					t.Fatal(err)
				}
				if tc.draft {
					tc.o.DraftID = before.Draft.DraftID
				}
				cps, _ := b.cps.List(b.ctx, "r1", flow.ListOptions{})
				v, err := svc.Resume(b.ctx, tc.o)
				switch {
				case tc.err != nil:
					wantErr(t, err, tc.err)
					// says names inputs as flags (flagWords).
					if msg, _ := returns.Describe(err, flagWords{}); !strings.Contains(msg, tc.says) || strings.Contains(msg, "\n") {
						t.Fatalf("error %q, want one line with %q", msg, tc.says)
					}
					if tc.hint != nil {
						wantHint(t, err, *tc.hint)
					}
				case err != nil:
					t.Fatalf("resume: %v, want the outcome", err)
				default:
					wantView(t, v, before.Status, before.Stage)
				}
				after, _ := b.cps.List(b.ctx, "r1", flow.ListOptions{})
				apps, _ := svc.Desk().ApplicationByTask(b.ctx, "r1")
				if len(after) != len(cps) || (tc.ended != "done" && apps.ID != "") {
					t.Fatalf("%d checkpoints (want %d), application %q: an answer to an ended task changed it", len(after), len(cps), apps.ID)
				}
				wantRecord(t, svc, "r1", before.Status, before.Stage)
			})
		}
	})

	t.Run("ReasonThenApprove", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3003", "")
		v := mustResume(t, svc, reason("r1", " 尺寸不合适 "))
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		if v.Draft.Reason != "尺寸不合适" {
			t.Fatalf("draft reason %q, want the answer trimmed", v.Draft.Reason)
		}
		wantView(t, mustResume(t, svc, approve("r1")), returns.StatusDone, returns.StageSubmitted)
	})

	t.Run("BlankReasonIsAskedAgain", func(t *testing.T) {
		svc, _ := setup(t)
		first := mustStart(t, svc, "r1", "A3003", "")
		v := mustResume(t, svc, reason("r1", "   "))
		wantView(t, v, returns.StatusWaiting, returns.StageNeedReason)
		var q returns.ReasonQuestion
		if err := json.Unmarshal(v.Interrupts[0].Value, &q); err != nil {
			t.Fatal(err)
		}
		if q.Problem != "the reason must not be blank" || v.Interrupts[0].ID == first.Interrupts[0].ID {
			t.Fatalf("question %+v (id %s), want a new question saying why", q, v.Interrupts[0].ID)
		}
	})

	t.Run("WrongAnswerIsInvalidAndChangesNothing", func(t *testing.T) {
		for name, o := range map[string]returns.ResumeOptions{
			"ActionAtReasonQuestion": {Task: "ask", Action: returns.ActionApprove},
			"ReasonAtApproval":       {Task: "approve", Reason: "size", HasReason: true},
			"NoAnswerAtQuestion":     {Task: "approve"},
			"ReasonAndAction":        {Task: "approve", Reason: "size", HasReason: true, Action: returns.ActionApprove},
			"UnknownAction":          {Task: "approve", Action: "maybe"},
			"ControlInReason":        {Task: "ask", Reason: "size\x1b", HasReason: true},
			"WrongDraft":             {Task: "approve", Action: returns.ActionApprove, DraftID: "d_other"},
			"UnknownInterrupt":       {Task: "approve", Action: returns.ActionApprove, InterruptID: "nope"},
			"BadTaskID":              {Task: "a/b", Action: returns.ActionApprove},
		} {
			t.Run(name, func(t *testing.T) {
				svc, b := setup(t)
				mustStart(t, svc, "ask", "A3001", "")
				mustStart(t, svc, "approve", "A3003", "size")
				before, _ := b.cps.List(b.ctx, o.Task, flow.ListOptions{})
				o.User = user
				_, err := svc.Resume(b.ctx, o)
				wantErr(t, err, returns.ErrInvalid)
				after, _ := b.cps.List(b.ctx, o.Task, flow.ListOptions{})
				if len(after) != len(before) {
					t.Fatalf("%d checkpoints after a refused answer, want %d", len(after), len(before))
				}
			})
		}
	})

	t.Run("UnknownTaskIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		_, err := svc.Resume(b.ctx, approve("nope"))
		wantErr(t, err, returns.ErrNotFound)
	})

	t.Run("OtherUsersTaskIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		o := approve("r1")
		o.User = otherUser
		_, err := svc.Resume(b.ctx, o)
		wantErr(t, err, returns.ErrNotFound)
		_, err = svc.Show(b.ctx, "r1", otherUser)
		wantErr(t, err, returns.ErrNotFound)
	})

	t.Run("ExpiredDraftFailsAndSubmitsNothing", func(t *testing.T) {
		svc, b := setup(t)
		started := mustStart(t, svc, "r1", "A3004", "broken")
		b.clock.Advance(business.DefaultDraftTTL + time.Second)
		v := mustResume(t, svc, approve("r1"))
		wantView(t, v, returns.StatusFailed, returns.StageFailed)
		if v.Error == nil || v.Error.Code != returns.CodeDraftExpired || v.Result != nil {
			t.Fatalf("error %+v, result %+v; want %s and no result", v.Error, v.Result, returns.CodeDraftExpired)
		}
		if n, _ := svc.Desk().CountApplications(b.ctx, started.Draft.DraftID); n != 0 {
			t.Fatalf("%d applications, want 0", n)
		}
	})

	t.Run("SecondApplicationForOneOrderFails", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3001", "size")
		mustStart(t, svc, "r2", "A3001", "colour")
		mustResume(t, svc, approve("r1"))
		v := mustResume(t, svc, approve("r2"))
		wantView(t, v, returns.StatusFailed, returns.StageFailed)
		if v.Error.Code != business.ReasonOpenApplication {
			t.Fatalf("error %+v, want %s", v.Error, business.ReasonOpenApplication)
		}
	})

	t.Run("WithoutRunRebuildsIt", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", "")
		v := mustResume(t, svc, returns.ResumeOptions{Task: "r1"})
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("AnswerToRecordWithoutRun", func(t *testing.T) {
		// A batch killed between its chunk's two commits leaves records
		// that show a question while the run is missing.
		withoutRun := func(t *testing.T, stage string) (*returns.Service, *bundle) {
			svc, b := setup(t)
			b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", "")
			if err := svc.Runs().SetProgress(b.ctx, "r1", "", returns.StatusWaiting, stage); err != nil {
				t.Fatal(err)
			}
			return svc, b
		}
		t.Run("ApproveRebuildsThenAnswers", func(t *testing.T) {
			svc, _ := withoutRun(t, returns.StageDraftReady)
			wantView(t, mustResume(t, svc, approve("r1")), returns.StatusDone, returns.StageSubmitted)
		})
		t.Run("WrongKindIsInvalid", func(t *testing.T) {
			svc, b := withoutRun(t, returns.StageNeedReason)
			_, err := svc.Resume(b.ctx, approve("r1"))
			wantErr(t, err, returns.ErrInvalid)
		})
		t.Run("WrongDraftIsInvalid", func(t *testing.T) {
			svc, b := withoutRun(t, returns.StageDraftReady)
			o := approve("r1")
			o.DraftID = "d_other"
			_, err := svc.Resume(b.ctx, o)
			wantErr(t, err, returns.ErrInvalid)
		})
		t.Run("NoQuestionIsConflict", func(t *testing.T) {
			svc, b := withoutRun(t, "")
			_, err := svc.Resume(b.ctx, approve("r1"))
			wantErr(t, err, returns.ErrConflict)
		})
	})

	t.Run("PartwayRunContinues", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodePrepare)
		v := mustResume(t, svc, returns.ResumeOptions{Task: "r1"})
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("PartwayRunOfLiveProcessIsBusy", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.liveLease(), "r1", "A3003", "size", returns.NodePrepare)
		_, err := svc.Resume(b.ctx, returns.ResumeOptions{Task: "r1", User: user})
		wantErr(t, err, returns.ErrConflict)
		_, err = svc.Resume(b.ctx, approve("r1"))
		wantErr(t, err, returns.ErrConflict)
		wantRecord(t, svc, "r1", returns.StatusRunning, "")
	})

	t.Run("AnswerNobodySawIsConflict", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodePrepare)
		_, err := svc.Resume(b.ctx, approve("r1"))
		wantErr(t, err, returns.ErrConflict)
	})

	t.Run("RecordedDecisionIsReaffirmedNotContradicted", func(t *testing.T) {
		svc, b := setup(t)
		// A process answered cancel and died before the cancel node ran.
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodeCancel)
		answer := returns.ApprovalAnswer{Action: returns.ActionCancel, DraftID: b.head(t, svc, "r1").Values.Draft.ID}
		if _, err := b.graph(t, svc, returns.NodeCancel).Resume(b.ctx, "r1", flow.Command{Resume: answer}); err != nil {
			t.Fatal(err)
		}
		_, err := svc.Resume(b.ctx, approve("r1"))
		wantErr(t, err, returns.ErrConflict)
		wantView(t, mustResume(t, svc, cancel("r1")), returns.StatusCancelled, returns.StageCancelled)
	})

	t.Run("RecordedReasonIsReaffirmed", func(t *testing.T) {
		svc, b := setup(t)
		// A process was given a reason and died before prepare ran.
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "", returns.NodePrepare)
		g := b.graph(t, svc, returns.NodePrepare)
		if _, err := g.Resume(b.ctx, "r1", flow.Command{Resume: returns.ReasonAnswer{Reason: "size"}}); err != nil {
			t.Fatal(err)
		}
		_, err := svc.Resume(b.ctx, reason("r1", "colour"))
		wantErr(t, err, returns.ErrConflict)
		wantView(t, mustResume(t, svc, reason("r1", "size")), returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("SavedDecisionIsReplayedNotContradicted", func(t *testing.T) {
		svc, b := setup(t)
		// A process saved the answer cancel and died before review ran with it.
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodeSubmit)
		draft := b.head(t, svc, "r1").Values.Draft.ID
		b.saveAnswer(t, svc, "r1", returns.ApprovalAnswer{Action: returns.ActionCancel, DraftID: draft})
		_, err := svc.Resume(b.ctx, approve("r1"))
		wantErr(t, err, returns.ErrConflict)
		wantView(t, mustResume(t, svc, cancel("r1")), returns.StatusCancelled, returns.StageCancelled)
	})

	t.Run("SavedReasonIsReplayedNotContradicted", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "", returns.NodeSubmit)
		b.saveAnswer(t, svc, "r1", returns.ReasonAnswer{Reason: "size"})
		_, err := svc.Resume(b.ctx, reason("r1", "colour"))
		wantErr(t, err, returns.ErrConflict)
		wantView(t, mustResume(t, svc, reason("r1", " size ")), returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("RecordBehindHeadIsRepaired", func(t *testing.T) {
		svc, b := setup(t)
		// A process reached the question and died before it let go.
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodeSubmit)
		v := mustResume(t, svc, returns.ResumeOptions{Task: "r1"})
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
		wantView(t, mustResume(t, svc, approve("r1")), returns.StatusDone, returns.StageSubmitted)
	})
}

// head reads task's head through a graph of its own, as another process.
func (b *bundle) head(tb testing.TB, svc *returns.Service, task string) *flow.Snapshot[returns.State] {
	tb.Helper()
	snap, err := b.graph(tb, svc).State(b.ctx, task)
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

// saveAnswer saves answer to task's open question as a process does before
// it runs the node that asked again; the test then plays that the process
// died there.
func (b *bundle) saveAnswer(tb testing.TB, svc *returns.Service, task string, answer any) {
	tb.Helper()
	head := b.head(tb, svc, task)
	in := head.Interrupts[0]
	raw, err := json.Marshal(answer)
	if err != nil {
		tb.Fatal(err)
	}
	w := flow.Write{TaskID: in.TaskID, Node: in.Node, Kind: flow.WriteResume, Idx: in.Idx, Value: raw}
	if err := b.cps.PutWrites(b.ctx, task, head.CheckpointID, []flow.Write{w}); err != nil {
		tb.Fatal(err)
	}
}

// countingCheckpointer counts the reads of each thread's head. Embedding
// *checkpoints.Memory keeps its optional powers (flow.HeadWriter, which
// ResumeAt relies on to skip a read); it has no flow.Syncer to forward.
type countingCheckpointer struct {
	*checkpoints.Memory
	mu    sync.Mutex
	heads map[string]int
}

var (
	_ flow.Checkpointer = (*countingCheckpointer)(nil)
	_ flow.HeadWriter   = (*countingCheckpointer)(nil)
)

func (c *countingCheckpointer) Get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error) {
	if checkpointID == "" {
		c.mu.Lock()
		c.heads[threadID]++
		c.mu.Unlock()
	}
	return c.Memory.Get(ctx, threadID, checkpointID)
}

func (c *countingCheckpointer) headReads(threadID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heads[threadID]
}

func TestResumeReadsHeadOnce(t *testing.T) {
	cps := &countingCheckpointer{Memory: checkpoints.NewMemory(), heads: map[string]int{}}
	svc, _ := setupWith(t, t.TempDir(), cps)
	mustStart(t, svc, "r1", "A3003", "size")
	before := cps.headReads("r1")
	v := mustResume(t, svc, approve("r1"))
	wantView(t, v, returns.StatusDone, returns.StageSubmitted)
	if n := cps.headReads("r1") - before; n != 1 {
		t.Fatalf("resume --action approve read the head %d times, want 1", n)
	}
}
