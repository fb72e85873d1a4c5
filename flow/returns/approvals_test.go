package returns_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

// TestApprovals is the approval core in one process, with the
// fake clock: who may decide, the trail, versions, revise and two
// approvals.
func TestApprovals(t *testing.T) {
	grant := func(t *testing.T, svc *returns.Service, grantee string) {
		t.Helper()
		if _, err := svc.Grant(t.Context(), returns.GrantOptions{User: user, Grantee: grantee}); err != nil {
			t.Fatal(err)
		}
	}
	as := func(who string, o returns.ResumeOptions) returns.ResumeOptions { o.User = who; return o }

	t.Run("GranteeDecidesOthersAreToldUnknown", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Resume(b.ctx, as("alice", approve("r1")))
		wantErr(t, err, returns.ErrNotFound)
		_, unknown := svc.Resume(b.ctx, as("alice", approve("nosuch")))
		if strings.Replace(unknown.Error(), "nosuch", "r1", 1) != err.Error() {
			t.Fatalf("refusals %q and %q differ in more than the task id", err, unknown)
		}
		grant(t, svc, "alice")
		if got, err := svc.ListTasks(b.ctx, returns.ListOptions{User: "alice", AwaitingMe: true}); err != nil || len(got) != 1 || got[0].Owner != user {
			t.Fatalf("alice awaiting %+v, %v", got, err)
		}
		b.clock.Advance(1500 * time.Millisecond)
		v := mustResume(t, svc, as("alice", approve("r1")))
		wantView(t, v, returns.StatusDone, returns.StageSubmitted)
		want := b.clock.Now().UTC().Truncate(time.Millisecond)
		if len(v.Decisions) != 1 || v.Decisions[0].By != "alice" || !v.Decisions[0].At.Equal(want) || *v.Decisions[0].Version != 1 {
			t.Fatalf("decisions %+v, want alice's approve at %s", v.Decisions, want)
		}
		if _, err := svc.Revoke(b.ctx, returns.GrantOptions{User: user, Grantee: "alice"}); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Show(b.ctx, "r1", "alice")
		wantErr(t, err, returns.ErrNotFound)
	})

	t.Run("OnlyTheOwnerGrants", func(t *testing.T) {
		for _, o := range []returns.GrantOptions{
			{User: "alice", Grantee: "alice", For: user},
			{User: user, Grantee: user},
			{User: user, Grantee: "a b"},
		} {
			if _, err := returns.CheckGrant(o); err == nil {
				t.Errorf("CheckGrant(%+v) passed", o)
			}
		}
	})

	t.Run("EditMakesVersionTwoAndVersionOneIsStale", func(t *testing.T) {
		svc, b := setup(t)
		v1 := mustStart(t, svc, "r1", "A3003", "size")
		b.clock.Advance(time.Minute)
		v2 := mustResume(t, svc, returns.ResumeOptions{Task: "r1", Action: returns.ActionEdit, Reason: "colour", HasReason: true})
		if v2.Draft.Version != 2 || v2.Draft.Reason != "colour" || !v2.Draft.ExpiresAt.Equal(b.clock.Now().Add(business.DefaultDraftTTL)) {
			t.Fatalf("draft after edit %+v", v2.Draft)
		}
		for _, o := range []returns.ResumeOptions{
			{Task: "r1", User: user, Action: returns.ActionApprove, DraftID: v1.Draft.DraftID},
			{Task: "r1", User: user, Action: returns.ActionApprove, Version: 1},
		} {
			_, err := svc.Resume(b.ctx, o)
			wantErr(t, err, returns.ErrConflict)
		}
		_, err := svc.Resume(b.ctx, returns.ResumeOptions{Task: "r1", User: user, Action: returns.ActionApprove, Version: 3})
		wantErr(t, err, returns.ErrInvalid)
		done := mustResume(t, svc, returns.ResumeOptions{Task: "r1", Action: returns.ActionApprove, DraftID: v2.Draft.DraftID})
		if done.Result == nil || len(done.Decisions) != 2 || done.Decisions[0].Action != returns.ActionEdit {
			t.Fatalf("after approve: %+v, decisions %+v", done.Result, done.Decisions)
		}
	})

	t.Run("ReviseAsksTheOwnerWithTheComment", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		v := mustResume(t, svc, returns.ResumeOptions{Task: "r1", Action: returns.ActionRevise, Comment: "which size?"})
		wantView(t, v, returns.StatusWaiting, returns.StageNeedReason)
		if string(v.Interrupts[0].Value) == "" || !strings.Contains(string(v.Interrupts[0].Value), `"comment":"which size?"`) {
			t.Fatalf("question %s", v.Interrupts[0].Value)
		}
		v = mustResume(t, svc, reason("r1", "size 44"))
		if v.Draft.Version != 2 || v.Draft.Reason != "size 44" {
			t.Fatalf("draft after the new reason %+v", v.Draft)
		}
	})

	t.Run("FifthVersionIsTheLast", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		for i := 2; i <= business.MaxDraftVersions; i++ {
			mustResume(t, svc, returns.ResumeOptions{Task: "r1", Action: returns.ActionEdit, Reason: fmt.Sprintf("take %d", i), HasReason: true})
		}
		v := mustResume(t, svc, returns.ResumeOptions{Task: "r1", Action: returns.ActionRevise, Comment: "again"})
		wantView(t, v, returns.StatusFailed, returns.StageFailed)
		if v.Error.Code != returns.CodeTooManyRevisions {
			t.Fatalf("error %+v", v.Error)
		}
	})

	t.Run("TwoApprovalsNeedTwoPeople", func(t *testing.T) {
		svc, b := setup(t)
		grant(t, svc, "alice")
		grant(t, svc, "bob")
		v, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", Approvals: 2})
		if err != nil || len(v.Interrupts) != 2 {
			t.Fatalf("start: %v, %+v", err, v)
		}
		first := mustResume(t, svc, as("alice", approve("r1")))
		if first.Note == "" || len(first.Interrupts) != 1 || len(first.Decisions) != 1 {
			t.Fatalf("after alice: note %q, %d open, decisions %+v", first.Note, len(first.Interrupts), first.Decisions)
		}
		// Her approve again is a retry that counts once; naming the other
		// question is refused: two approvals need two people.
		again := mustResume(t, svc, as("alice", approve("r1")))
		if again.Status != returns.StatusWaiting || len(again.Decisions) != 1 || !strings.Contains(again.Note, "another person") {
			t.Fatalf("alice's approve again: %s, decisions %+v, note %q", again.Status, again.Decisions, again.Note)
		}
		other := as("alice", approve("r1"))
		other.InterruptID = first.Interrupts[0].ID
		_, err = svc.Resume(b.ctx, other)
		wantErr(t, err, returns.ErrConflict)
		done := mustResume(t, svc, as("bob", approve("r1")))
		wantView(t, done, returns.StatusDone, returns.StageSubmitted)
		if n, _ := svc.Desk().CountApplications(b.ctx, done.Draft.DraftID); n != 1 {
			t.Fatalf("%d applications", n)
		}
	})

	t.Run("OneCancelEndsTwoApprovals", func(t *testing.T) {
		svc, b := setup(t)
		grant(t, svc, "alice")
		grant(t, svc, "bob")
		if _, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", Approvals: 2}); err != nil {
			t.Fatal(err)
		}
		mustResume(t, svc, as("alice", approve("r1")))
		v := mustResume(t, svc, as("bob", cancel("r1")))
		wantView(t, v, returns.StatusCancelled, returns.StageCancelled)
	})

	t.Run("ApprovalsAreStartInput", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", Approvals: 2})
		wantErr(t, err, returns.ErrConflict)
		err = returns.ValidateStart(returns.StartOptions{Task: "r2", User: user, Order: "A3003", Approvals: 3})
		wantErr(t, err, returns.ErrInvalid)
	})
}
