package returns_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

// editOpts is an edit of task with the new reason r, bound to version
// (0: any).
func editOpts(task, r string, version int) returns.ResumeOptions {
	return returns.ResumeOptions{Task: task, User: user, Action: returns.ActionEdit, Reason: r, HasReason: true, Version: version}
}

// An answer bound to a draft version is judged by one rule whether the
// task waits or has ended: the task's last draft passes, a superseded one
// is stale (ErrConflict), one the task never had ErrInvalid; on an ended
// task only the answer it recorded stands.
func TestAnswerBoundToAVersion(t *testing.T) {
	svc, b := setup(t)
	v1 := mustStart(t, svc, "r1", "A3003", "size")
	v2 := mustResume(t, svc, editOpts("r1", "fit", 0))
	approveV := func(version int, draft string) returns.ResumeOptions {
		return returns.ResumeOptions{Task: "r1", User: user, Action: returns.ActionApprove, Version: version, DraftID: draft}
	}
	refusals := []struct {
		name string
		o    returns.ResumeOptions
		want error
	}{
		{"StaleVersion", approveV(1, ""), returns.ErrConflict},
		{"StaleDraft", approveV(0, v1.Draft.DraftID), returns.ErrConflict},
		{"VersionNeverMade", approveV(9, ""), returns.ErrInvalid},
		{"DraftNeverMade", approveV(0, "d_nosuch"), returns.ErrInvalid},
	}
	for _, tc := range refusals {
		t.Run("Waiting"+tc.name, func(t *testing.T) {
			_, err := svc.Resume(b.ctx, tc.o)
			wantErr(t, err, tc.want)
		})
	}
	done := mustResume(t, svc, approveV(2, ""))
	wantView(t, done, returns.StatusDone, returns.StageSubmitted)
	ended := append(refusals,
		struct {
			name string
			o    returns.ResumeOptions
			want error
		}{"Cancel", cancel("r1"), returns.ErrConflict},
		struct {
			name string
			o    returns.ResumeOptions
			want error
		}{"Edit", editOpts("r1", "fit", 0), returns.ErrConflict},
	)
	for _, tc := range ended {
		t.Run("Ended"+tc.name, func(t *testing.T) {
			_, err := svc.Resume(b.ctx, tc.o)
			wantErr(t, err, tc.want)
		})
	}
	for name, o := range map[string]returns.ResumeOptions{
		"EndedSameVersion": approveV(2, ""),
		"EndedSameDraft":   approveV(0, v2.Draft.DraftID),
		"EndedNoVersion":   approveV(0, ""),
	} {
		t.Run(name, func(t *testing.T) {
			v := mustResume(t, svc, o)
			if v.Result == nil || !v.Result.Reused || v.Result.ApplicationID != done.Result.ApplicationID {
				t.Fatalf("result %+v, want the application %+v reused", v.Result, done.Result)
			}
		})
	}
}

// A task ended by the edit one version too many stands only by that edit
// given again (the same reason): another reason, or another action, is
// ErrConflict.
func TestEndedByTooManyRevisions(t *testing.T) {
	svc, b := setup(t)
	mustStart(t, svc, "r1", "A3003", "size")
	for i := 1; i <= 5; i++ {
		mustResume(t, svc, editOpts("r1", fmt.Sprintf("fit %d", i), 0))
	}
	v := mustResume(t, svc, editOpts("r1", "fit 5", 0))
	if v.Status != returns.StatusFailed || v.Error == nil || v.Error.Code != returns.CodeTooManyRevisions {
		t.Fatalf("after the sixth version: %s %+v", v.Status, v.Error)
	}
	for _, tc := range []struct {
		name string
		o    returns.ResumeOptions
		want error
	}{
		{"SameEditAgain", editOpts("r1", "fit 5", 0), nil},
		{"SameEditOfItsVersion", editOpts("r1", "fit 5", 5), nil},
		{"AnotherReason", editOpts("r1", "other", 0), returns.ErrConflict},
		{"Revise", returns.ResumeOptions{Task: "r1", User: user, Action: returns.ActionRevise, Comment: "fit 5"}, returns.ErrConflict},
		{"Approve", approve("r1"), returns.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := svc.Resume(b.ctx, tc.o)
			if tc.want != nil {
				wantErr(t, err, tc.want)
				return
			}
			if err != nil || v.Status != returns.StatusFailed {
				t.Fatalf("resume: %v, %+v", err, v)
			}
		})
	}
}

// An edit or revise given again by the one who gave it, while the task
// waits on what it led to, is a retry: it shows the task and makes no
// version and no decision. An edit of the new
// version (named), or by someone else, is a new edit.
func TestEditAndReviseRetried(t *testing.T) {
	svc, b := setup(t)
	if _, err := svc.Grant(b.ctx, returns.GrantOptions{User: user, Grantee: "alice"}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, svc, "r1", "A3003", "size")
	v := mustResume(t, svc, editOpts("r1", "fit", 0))
	decisions := len(v.Decisions)
	for _, o := range []returns.ResumeOptions{editOpts("r1", "fit", 0), editOpts("r1", " fit ", 1)} {
		again := mustResume(t, svc, o)
		if again.Draft.Version != 2 || again.Status != returns.StatusWaiting || len(again.Decisions) != decisions {
			t.Fatalf("edit again %+v: draft %+v, status %s, %d decisions; want version 2, waiting, %d decisions", o, again.Draft, again.Status, len(again.Decisions), decisions)
		}
	}
	alice := editOpts("r1", "fit", 0)
	alice.User = "alice"
	if v := mustResume(t, svc, alice); v.Draft.Version != 3 {
		t.Fatalf("alice's edit made version %d, want 3", v.Draft.Version)
	}
	if v := mustResume(t, svc, editOpts("r1", "fit", 3)); v.Draft.Version != 4 {
		t.Fatalf("an edit of version 3 made version %d, want 4", v.Draft.Version)
	}
	revise := returns.ResumeOptions{Task: "r1", User: user, Action: returns.ActionRevise, Comment: "which size?"}
	v = mustResume(t, svc, revise)
	wantView(t, v, returns.StatusWaiting, returns.StageNeedReason)
	decisions = len(v.Decisions)
	again := mustResume(t, svc, revise)
	wantView(t, again, returns.StatusWaiting, returns.StageNeedReason)
	if len(again.Decisions) != decisions || again.Draft.Version != 4 {
		t.Fatalf("revise again: %d decisions, version %d; want %d, 4", len(again.Decisions), again.Draft.Version, decisions)
	}
	other := revise
	other.Comment = "another comment"
	_, err := svc.Resume(b.ctx, other)
	wantErr(t, err, returns.ErrInvalid) // the task waits for a reason
}

// The second of two approvals, given after the draft expired, is taken
// and ends the task failed (draft_expired): its note says so, not only
// which approval it was.
func TestSecondApprovalOfAnExpiredDraftSaysWhatHappened(t *testing.T) {
	svc, b := setup(t)
	for _, u := range []string{"alice", "bob"} {
		if _, err := svc.Grant(b.ctx, returns.GrantOptions{User: user, Grantee: u}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", Approvals: 2}); err != nil {
		t.Fatal(err)
	}
	firstApprove := approve("r1")
	firstApprove.User = "bob"
	first := mustResume(t, svc, firstApprove)
	if first.Status != returns.StatusWaiting || !strings.Contains(first.Note, "approver 1 of 2") {
		t.Fatalf("first approval: %s, note %q", first.Status, first.Note)
	}
	b.clock.Advance(business.DefaultDraftTTL + time.Second)
	o := approve("r1")
	o.User = "alice"
	v := mustResume(t, svc, o)
	if v.Status != returns.StatusFailed || v.Error == nil || v.Error.Code != returns.CodeDraftExpired {
		t.Fatalf("second approval of an expired draft: %s %+v", v.Status, v.Error)
	}
	for _, want := range []string{"approver 2 of 2", "failed (draft_expired)", "nothing was submitted"} {
		if !strings.Contains(v.Note, want) {
			t.Errorf("note %q does not say %q", v.Note, want)
		}
	}
}

// An approval names what it approves once the draft has more than one
// version: a bare approve of version 1 passes, one of version 2 or later
// is ErrInvalid with a hint that names the draft, and changes nothing; an
// approve naming the draft or the version passes.
func TestApproveNamesTheVersionOnceThereAreTwo(t *testing.T) {
	bare := func(task string) returns.ResumeOptions {
		return returns.ResumeOptions{Task: task, User: user, Action: returns.ActionApprove}
	}
	t.Run("BareApproveOfVersion1", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		wantView(t, mustResume(t, svc, bare("r1")), returns.StatusDone, returns.StageSubmitted)
	})
	for name, named := range map[string]func(v *returns.View) returns.ResumeOptions{
		"ByDraft":   func(v *returns.View) returns.ResumeOptions { o := bare("r1"); o.DraftID = v.Draft.DraftID; return o },
		"ByVersion": func(v *returns.View) returns.ResumeOptions { o := bare("r1"); o.Version = v.Draft.Version; return o },
	} {
		t.Run("BareApproveOfVersion2Refused"+name, func(t *testing.T) {
			svc, b := setup(t)
			mustStart(t, svc, "r1", "A3003", "size")
			v2 := mustResume(t, svc, editOpts("r1", "fit", 0))
			_, err := svc.Resume(b.ctx, bare("r1"))
			wantErr(t, err, returns.ErrInvalid)
			if !strings.Contains(err.Error(), v2.Draft.DraftID) {
				t.Fatalf("error %q does not name the draft %s", err, v2.Draft.DraftID)
			}
			var re *returns.Error
			if !errors.As(err, &re) || !slices.ContainsFunc(re.Hint.With, func(in returns.InputValue) bool { return in.Value == v2.Draft.DraftID }) {
				t.Fatalf("error %#v: its hint does not name the draft %s", err, v2.Draft.DraftID)
			}
			still, err := svc.Show(b.ctx, "r1", user)
			if err != nil {
				t.Fatal(err)
			}
			wantView(t, still, returns.StatusWaiting, returns.StageDraftReady)
			wantView(t, mustResume(t, svc, named(v2)), returns.StatusDone, returns.StageSubmitted)
		})
	}
}

// One stale answer, one code: an answer naming a question the run asked
// before (an earlier version's) is stale, ErrConflict, whether the task
// still waits or has ended; an interrupt id the task never asked is
// ErrInvalid either way.
func TestSupersededInterruptIsStale(t *testing.T) {
	svc, b := setup(t)
	v1 := mustStart(t, svc, "r1", "A3003", "size")
	old := v1.Interrupts[0].ID
	v2 := mustResume(t, svc, editOpts("r1", "fit", 0))
	answer := func(interrupt string) returns.ResumeOptions {
		return returns.ResumeOptions{Task: "r1", User: user, Action: returns.ActionApprove, Version: v2.Draft.Version, InterruptID: interrupt}
	}
	check := func(t *testing.T) {
		_, err := svc.Resume(b.ctx, answer(old))
		wantErr(t, err, returns.ErrConflict)
		if !strings.Contains(err.Error(), "stale") {
			t.Errorf("error %q does not say the answer is stale", err)
		}
		_, err = svc.Resume(b.ctx, answer("0123456789abcdef"))
		wantErr(t, err, returns.ErrInvalid)
	}
	t.Run("Waiting", func(t *testing.T) {
		check(t)
		if v, err := svc.Show(b.ctx, "r1", user); err != nil || v.Interrupts[0].ID != v2.Interrupts[0].ID {
			t.Fatalf("show after the stale answer: %v, %+v", err, v)
		}
	})
	mustResume(t, svc, cancel("r1"))
	t.Run("Ended", check)
}
