package business

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestApprovalsCountAtTheSubmit(t *testing.T) {
	t.Parallel()
	forStores(t, testApprovalsCountAtTheSubmit)
}

// testApprovalsCountAtTheSubmit: the submit of a draft judges again, in
// its transaction, every approval it carries out (ApprovalsCount): one
// that names another version, the requester's of a task that needs two,
// one whose approver holds no grant now (revoked, or never granted)
// refuses the submit with *UncountedError saying why; no application is
// made, and SubmitDecided keeps the decision marked so in the trail.
// The owner's own approval of a task that needs one, and a grantee's,
// count.
func testApprovalsCountAtTheSubmit(t *testing.T, kind storeKind) {
	ctx := context.Background()
	approve := func(id, by string, version int) Decision {
		return Decision{ID: id, TaskID: "t1", By: by, Action: "approve", Version: version, At: t0}
	}
	for _, tc := range []struct {
		name    string
		need    int
		by      string
		version int
		grant   bool // demo-user grants by before the approval
		revoke  bool // and revokes it after
		why     string
	}{
		{"OwnersOwnOfOne", 1, "demo-user", 1, false, false, ""},
		{"GranteeOfOne", 1, "alice", 1, true, false, ""},
		{"GranteeOfTwo", 2, "alice", 1, true, false, ""},
		{"RevokedGrantee", 1, "alice", 1, true, true, "revoked at 2025-03-10T09:00:05Z: alice no longer holds a grant from demo-user"},
		{"NeverGranted", 2, "bob", 1, false, false, "bob holds no grant from demo-user"},
		{"RequesterOfTwo", 2, "demo-user", 1, false, false, "demo-user is the task's requester, and its 2 approvals must come from people other than its requester"},
		{"AnotherVersion", 1, "demo-user", 2, false, false, "it approves version 2 of draft"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			d := mustPrepare(t, s, "t1", "A3001", time.Hour, t0)
			if tc.grant {
				if _, err := s.GrantApprover(ctx, "demo-user", tc.by, "demo-user", t0.Add(time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.revoke {
				if _, err := s.RevokeApprover(ctx, "demo-user", tc.by, "demo-user", t0.Add(5*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			dec := approve("dec-1", tc.by, tc.version)
			dec.DraftID = d.ID
			check := s.ApprovalsCount("t1", "demo-user", tc.need, d.ID, d.Version, []Decision{dec})
			_, _, err := s.SubmitDecided(ctx, dec, d.ID, "demo-user", t0.Add(10*time.Second), check)
			apps, cerr := s.CountApplications(ctx, d.ID)
			if cerr != nil {
				t.Fatal(cerr)
			}
			trail, terr := s.Decisions(ctx, "t1")
			if terr != nil || len(trail) != 1 {
				t.Fatalf("trail = %+v, %v; want the decision once", trail, terr)
			}
			if tc.why == "" {
				if err != nil || apps != 1 || trail[0].NotCounted != "" {
					t.Fatalf("submit = %v, %d applications, mark %q; want submitted, counted", err, apps, trail[0].NotCounted)
				}
				return
			}
			var ue *UncountedError
			if !errors.As(err, &ue) || len(ue.Uncounted) != 1 || !strings.Contains(ue.Uncounted[0].Because, tc.why) {
				t.Fatalf("submit = %v; want *UncountedError saying %q", err, tc.why)
			}
			if apps != 0 {
				t.Errorf("%d applications; want none", apps)
			}
			if !strings.Contains(trail[0].NotCounted, tc.why) {
				t.Errorf("trail mark %q; want %q", trail[0].NotCounted, tc.why)
			}
		})
	}
}

// TestSubmitMarksWhatNoLongerCounts: a submit without a decision of its
// own (the approvals of a task that needs two were recorded when given)
// refused by ApprovalsCount marks, in its commit, only the approvals that
// no longer count, and makes no application; a grant given again does not
// revive a marked approval; once another approval counts, the submit goes
// through.
func TestSubmitMarksWhatNoLongerCounts(t *testing.T) {
	t.Parallel()
	forStores(t, func(t *testing.T, kind storeKind) {
		ctx := context.Background()
		s, _ := newSeededOn(t, kind)
		d := mustPrepare(t, s, "t1", "A3001", time.Hour, t0)
		for _, u := range []string{"alice", "bob", "carol"} {
			if _, err := s.GrantApprover(ctx, "demo-user", u, "demo-user", t0); err != nil {
				t.Fatal(err)
			}
		}
		var ds []Decision
		for i, u := range []string{"alice", "bob"} {
			dec := Decision{ID: "dec-" + u, TaskID: "t1", By: u, Action: "approve", DraftID: d.ID, Version: 1, At: t0.Add(time.Duration(i) * time.Second)}
			if err := s.RecordDecision(ctx, dec); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, dec)
		}
		if _, err := s.RevokeApprover(ctx, "demo-user", "alice", "demo-user", t0.Add(3*time.Second)); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(4*time.Second), s.ApprovalsCount("t1", "demo-user", 2, d.ID, 1, ds))
		var ue *UncountedError
		if !errors.As(err, &ue) || len(ue.Uncounted) != 1 || ue.Uncounted[0].By != "alice" {
			t.Fatalf("submit = %v; want alice's approval not counted", err)
		}
		trail, err := s.Decisions(ctx, "t1")
		if err != nil || len(trail) != 2 || !strings.HasPrefix(trail[0].NotCounted, "revoked at ") || trail[1].NotCounted != "" {
			t.Fatalf("trail = %+v, %v; want alice's marked, bob's not", trail, err)
		}
		if n, _ := s.CountApplications(ctx, d.ID); n != 0 {
			t.Fatalf("%d applications; want none", n)
		}
		// A grant given again does not revive the marked approval.
		if _, err := s.GrantApprover(ctx, "demo-user", "alice", "demo-user", t0.Add(4*time.Second)); err != nil {
			t.Fatal(err)
		}
		_, _, err = s.Submit(ctx, d.ID, "demo-user", t0.Add(4*time.Second), s.ApprovalsCount("t1", "demo-user", 2, d.ID, 1, ds))
		if !errors.As(err, &ue) || len(ue.Uncounted) != 1 || ue.Uncounted[0].Because != trail[0].NotCounted {
			t.Fatalf("submit after alice's grant was given again = %v; want her approval still not counted, as marked", err)
		}
		carol := Decision{ID: "dec-carol", TaskID: "t1", By: "carol", Action: "approve", DraftID: d.ID, Version: 1, At: t0.Add(5 * time.Second)}
		if err := s.RecordDecision(ctx, carol); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(6*time.Second), s.ApprovalsCount("t1", "demo-user", 2, d.ID, 1, []Decision{ds[1], carol})); err != nil {
			t.Fatalf("submit with bob's and carol's approvals = %v", err)
		}
	})
}
