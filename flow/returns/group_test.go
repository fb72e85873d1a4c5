package returns_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"assistant/flow/returns"
)

// groupOf gives every decision of os to c at once and returns, in the
// order of os, what each came to. c must gather them into one group: its
// Size is len(os) and its Wait longer than any test, so the group is
// committed only once all of them arrived.
func groupOf(c *returns.Committer, b *bundle, os []returns.ResumeOptions) ([]*returns.View, []error) {
	views := make([]*returns.View, len(os))
	errs := make([]error, len(os))
	var wg sync.WaitGroup
	for i, o := range os {
		wg.Go(func() { views[i], errs[i] = c.Decide(b.ctx, o) })
	}
	wg.Wait()
	return views, errs
}

// A group of decisions commits together, each judged by the answer path
// of Resume inside the group's transaction: a stale version and another
// user's answer are refused alone, the others are applied once each.
func TestGroupRefusesADecisionAloneAndCommitsTheOthers(t *testing.T) {
	svc, b := setupSQLite(t)
	for task, order := range map[string]string{"g1": "A3001", "g2": "A3002", "g3": "A3003", "g4": "A3004", "g5": "A3008"} {
		mustStart(t, svc, task, order, "size")
	}
	mustResume(t, svc, editOpts("g2", "fit", 0)) // g2's draft is at version 2
	var sizes []int
	var mu sync.Mutex
	c := svc.NewCommitter(returns.GroupOptions{Wait: time.Hour, Size: 5, OnGroup: func(n int) { mu.Lock(); sizes = append(sizes, n); mu.Unlock() }})
	stale := returns.ResumeOptions{Task: "g2", User: user, Action: returns.ActionApprove, Version: 1}
	stranger := returns.ResumeOptions{Task: "g5", User: otherUser, Action: returns.ActionApprove}
	views, errs := groupOf(c, b, []returns.ResumeOptions{approve("g1"), stale, approve("g3"), cancel("g4"), stranger})

	wantErr(t, errs[1], returns.ErrConflict)
	wantErr(t, errs[4], returns.ErrNotFound)
	for _, i := range []int{0, 2, 3} {
		if errs[i] != nil {
			t.Fatalf("decision %d: %v", i, errs[i])
		}
	}
	wantView(t, views[0], returns.StatusDone, returns.StageSubmitted)
	wantView(t, views[2], returns.StatusDone, returns.StageSubmitted)
	wantView(t, views[3], returns.StatusCancelled, returns.StageCancelled)
	if len(views[0].Decisions) != 1 || views[0].Decisions[0].Action != returns.ActionApprove {
		t.Errorf("g1's view: decisions %+v; want its one approval, as resume shows it", views[0].Decisions)
	}
	if len(sizes) != 1 || sizes[0] != 5 {
		t.Errorf("groups committed: %v; want one of 5", sizes)
	}
	for _, task := range []string{"g1", "g3"} {
		wantRecord(t, svc, task, returns.StatusDone, returns.StageSubmitted)
		v, err := svc.Show(b.ctx, task, user)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := svc.Desk().CountApplications(b.ctx, v.Draft.DraftID); n != 1 {
			t.Errorf("%s: %d applications, want 1", task, n)
		}
	}
	wantRecord(t, svc, "g4", returns.StatusCancelled, returns.StageCancelled)
	for _, task := range []string{"g2", "g5"} {
		v, err := svc.Show(b.ctx, task, user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		if len(v.Decisions) > 1 || (task == "g5" && len(v.Decisions) != 0) {
			t.Errorf("%s: decisions %+v; the refused approval must leave none", task, v.Decisions)
		}
	}
}

// Two decisions of one task that arrive together do not share a group:
// the second runs after the first, alone, and is judged against what the
// first left (the same approve again: the application reused).
func TestGroupRunsASecondDecisionOfATaskAfterTheFirst(t *testing.T) {
	svc, b := setupSQLite(t)
	mustStart(t, svc, "d1", "A3001", "size")
	c := svc.NewCommitter(returns.GroupOptions{Wait: time.Hour, Size: 2})
	views, errs := groupOf(c, b, []returns.ResumeOptions{approve("d1"), approve("d1")})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	reused := 0
	for _, v := range views {
		wantView(t, v, returns.StatusDone, returns.StageSubmitted)
		if v.Result.Reused {
			reused++
		}
	}
	if reused != 1 {
		t.Errorf("%d of the two approvals reused the application; want 1", reused)
	}
	if n, _ := svc.Desk().CountApplications(b.ctx, views[0].Draft.DraftID); n != 1 {
		t.Errorf("%d applications, want 1", n)
	}
}

// A store that cannot buffer checkpoints (the in-memory one) gives every
// decision alone, through Resume: a group of one each.
func TestGroupOfOneWithoutABufferingStore(t *testing.T) {
	svc, b := setup(t)
	mustStart(t, svc, "m1", "A3001", "size")
	var sizes []int
	c := svc.NewCommitter(returns.GroupOptions{OnGroup: func(n int) { sizes = append(sizes, n) }})
	v, err := c.Decide(b.ctx, approve("m1"))
	if err != nil {
		t.Fatal(err)
	}
	wantView(t, v, returns.StatusDone, returns.StageSubmitted)
	if len(sizes) != 1 || sizes[0] != 1 {
		t.Errorf("groups: %v; want one of 1", sizes)
	}
}
