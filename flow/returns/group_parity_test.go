package returns_test

import (
	"context"
	"errors"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"assistant/checkpoints"
	"assistant/flow"
	"assistant/flow/returns"
)

// lossyStore is checkpoints.sqlite whose buffers, while lose is set, store
// nothing at their Flush: what a crash between a group's business commit
// and its checkpoint commit leaves (the business rows durable, the
// checkpoints not).
type lossyStore struct {
	*checkpoints.SQLite
	lose atomic.Bool
}

// NewBuffer is the SQLite store's buffer, losing its Flush while lose is
// set.
func (s *lossyStore) NewBuffer() flow.WriteBuffer {
	return &lossyBuffer{WriteBuffer: s.SQLite.NewBuffer(), s: s}
}

type lossyBuffer struct {
	flow.WriteBuffer
	s *lossyStore
}

func (b *lossyBuffer) Flush(ctx context.Context) error {
	if b.s.lose.Load() {
		b.WriteBuffer.Discard()
		return errors.New("the checkpoint commit was lost")
	}
	return b.WriteBuffer.Flush(ctx)
}

// setupLossy is setupSQLite over a lossyStore.
func setupLossy(tb testing.TB) (*returns.Service, *bundle, *lossyStore) {
	tb.Helper()
	dir := tb.TempDir()
	ls := &lossyStore{SQLite: openCheckpoints(tb, dir)}
	svc, b := setupWith(tb, dir, ls)
	return svc, b, ls
}

// outcome is what an answer came to, as a client sees it: the error code
// and message of a refusal, or the view's status, stage and whether its
// application was reused.
type outcome struct {
	code, message     string
	status, stage     string
	reused, noApprove bool
}

// draftID matches a draft id in a message.
var draftID = regexp.MustCompile(`d_[0-9a-f-]+`)

func outcomeOf(v *returns.View, err error) outcome {
	if err != nil {
		// Draft ids are new in each data dir.
		return outcome{code: returns.ErrorCode(err), message: draftID.ReplaceAllString(err.Error(), "d_ID")}
	}
	o := outcome{status: v.Status, stage: v.Stage, noApprove: v.NoApprove != ""}
	if v.Result != nil {
		o.reused = v.Result.Reused
	}
	return o
}

// The committer answers every decision as Resume does: for each case the
// same data is made twice, the answer is given to one through Resume and
// to the other through a Committer, and both must come to the same
// outcome (and to the one the case expects: a refusal's code, or a
// status).
func TestCommitterAnswersAsResume(t *testing.T) {
	as := func(who string, o returns.ResumeOptions) returns.ResumeOptions { o.User = who; return o }
	grant := func(t *testing.T, svc *returns.Service, b *bundle, grantee string) {
		t.Helper()
		if _, err := svc.Grant(b.ctx, returns.GrantOptions{User: user, Grantee: grantee}); err != nil {
			t.Fatal(err)
		}
	}
	// lostGroup approves t1 through a group whose checkpoint commit is
	// lost: the business file holds the approve and the application, the
	// head still asks for approval.
	lostGroup := func(t *testing.T, svc *returns.Service, b *bundle, ls *lossyStore) {
		t.Helper()
		ls.lose.Store(true)
		_, err := svc.NewCommitter(returns.GroupOptions{Size: 1}).Decide(b.ctx, approve("t1"))
		ls.lose.Store(false)
		if err == nil {
			t.Fatal("the group whose checkpoints were lost reported success")
		}
	}
	versioned := func(task string, version int) returns.ResumeOptions {
		o := approve(task)
		o.Version = version
		return o
	}
	for _, c := range []struct {
		name    string
		prepare func(t *testing.T, svc *returns.Service, b *bundle, ls *lossyStore)
		answer  returns.ResumeOptions
		// want is the error code of the refusal, or "" and the status.
		want, status string
	}{
		{"CancelAfterAnApproveIsRefused", func(t *testing.T, svc *returns.Service, b *bundle, _ *lossyStore) {
			mustResume(t, svc, approve("t1"))
		}, cancel("t1"), returns.CodeConflict, ""},
		{"TheSameApproveAgainReusesTheApplication", func(t *testing.T, svc *returns.Service, b *bundle, _ *lossyStore) {
			mustResume(t, svc, approve("t1"))
		}, approve("t1"), "", returns.StatusDone},
		{"CancelAfterAnApproveWhoseCheckpointsWereLostIsRefused", lostGroup, cancel("t1"), returns.CodeConflict, ""},
		{"ApproveAfterAnApproveWhoseCheckpointsWereLostReportsIt", lostGroup, approve("t1"), "", returns.StatusDone},
		{"EditAfterAnApproveWhoseCheckpointsWereLostIsRefused", lostGroup, editOpts("t1", "other", 0), returns.CodeConflict, ""},
		{"AStaleVersionIsRefused", func(t *testing.T, svc *returns.Service, b *bundle, _ *lossyStore) {
			mustResume(t, svc, editOpts("t1", "fit", 0))
		}, versioned("t1", 1), returns.CodeConflict, ""},
		{"AnUnnamedVersionIsRefused", func(t *testing.T, svc *returns.Service, b *bundle, _ *lossyStore) {
			mustResume(t, svc, editOpts("t1", "fit", 0))
		}, approve("t1"), returns.CodeInvalidInput, ""},
		{"AnInterruptNotPendingIsRefused", nil, returns.ResumeOptions{Task: "t1", User: user, Action: returns.ActionApprove, InterruptID: "nosuch"}, returns.CodeInvalidInput, ""},
		{"AReasonToAnApprovalIsRefused", nil, reason("t1", "because"), returns.CodeInvalidInput, ""},
		{"AnUnknownTaskIsNotFound", nil, approve("nosuch"), returns.CodeNotFound, ""},
		{"AnotherUsersTaskIsNotFound", nil, as(otherUser, approve("t1")), returns.CodeNotFound, ""},
		{"ARevokedApproverIsNotFound", func(t *testing.T, svc *returns.Service, b *bundle, _ *lossyStore) {
			grant(t, svc, b, "alice")
			if _, err := svc.Revoke(b.ctx, returns.GrantOptions{User: user, Grantee: "alice"}); err != nil {
				t.Fatal(err)
			}
		}, as("alice", approve("t1")), returns.CodeNotFound, ""},
		{"AGranteeApproves", func(t *testing.T, svc *returns.Service, b *bundle, _ *lossyStore) {
			grant(t, svc, b, "alice")
		}, as("alice", approve("t1")), "", returns.StatusDone},
		{"FourEyesRefuseTheSameApproverTwice", func(t *testing.T, svc *returns.Service, b *bundle, _ *lossyStore) {
			startTwoApprovals(t, svc, b, "t2")
			mustResume(t, svc, as("alice", approve("t2")))
		}, as("alice", approve("t2")), "", returns.StatusWaiting},
		{"FourEyesTakeTheSecondApprover", func(t *testing.T, svc *returns.Service, b *bundle, _ *lossyStore) {
			startTwoApprovals(t, svc, b, "t2")
			mustResume(t, svc, as("alice", approve("t2")))
		}, as("bob", approve("t2")), "", returns.StatusDone},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got [2]outcome
			for i := range got {
				svc, b, ls := setupLossy(t)
				mustStart(t, svc, "t1", "A3001", "size")
				if c.prepare != nil {
					c.prepare(t, svc, b, ls)
				}
				var v *returns.View
				var err error
				if i == 0 {
					v, err = svc.Resume(b.ctx, c.answer)
				} else {
					v, err = svc.NewCommitter(returns.GroupOptions{Wait: time.Millisecond}).Decide(b.ctx, c.answer)
				}
				got[i] = outcomeOf(v, err)
			}
			if got[0] != got[1] {
				t.Fatalf("Resume came to %+v; the committer to %+v", got[0], got[1])
			}
			if got[0].code != c.want || (c.want == "" && got[0].status != c.status) {
				t.Fatalf("both came to %+v; want code %q, status %q", got[0], c.want, c.status)
			}
		})
	}
}

// startTwoApprovals starts task for demo-user needing two approvals, and
// grants alice and bob.
func startTwoApprovals(t *testing.T, svc *returns.Service, b *bundle, task string) {
	t.Helper()
	for _, u := range []string{"alice", "bob"} {
		if _, err := svc.Grant(b.ctx, returns.GrantOptions{User: user, Grantee: u}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Start(b.ctx, returns.StartOptions{Task: task, User: user, Order: "A3003", Reason: "size", Approvals: 2}); err != nil {
		t.Fatal(err)
	}
}
