package business

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"assistant/internal/sqlstore"
)

// TestSubmitChecksEligibilityAgain: the facts a draft was prepared on may
// change while it waits for approval; Submit refuses, writes nothing and
// names the rule, unless the draft's application exists already.
func TestSubmitChecksEligibilityAgain(t *testing.T) {
	t.Parallel()
	forStores(t, testSubmitChecksEligibilityAgain)
}

func testSubmitChecksEligibilityAgain(t *testing.T, kind storeKind) {
	ctx := context.Background()
	day := 24 * time.Hour
	tests := []struct {
		name  string
		order string
		at    time.Duration // after t0, when Submit runs
		setup func(t *testing.T, s *Store)
		want  string // reason code, "" = submitted
	}{
		// A3008 was delivered 29 days before t0.
		{name: "WindowStillOpen", order: "A3008", at: day - time.Minute},
		{name: "WindowClosedWhileWaiting", order: "A3008", at: day + time.Minute, want: ReasonReturnWindowClosed},
		{name: "OtherTaskSubmittedFirst", order: "A3003", at: time.Minute, want: ReasonOpenApplication,
			setup: func(t *testing.T, s *Store) {
				d := mustPrepare(t, s, "first", "A3003", time.Hour, t0)
				if _, _, err := s.Submit(ctx, d.ID, "demo-user", t0); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			d := mustPrepare(t, s, "late", tt.order, 7*day, t0)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			before, _ := s.CountApplications(ctx, "")
			a, _, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(tt.at))
			if tt.want == "" {
				if err != nil || a.DraftID != d.ID {
					t.Fatalf("Submit = %+v, %v; want an application", a, err)
				}
				return
			}
			var ie *IneligibleError
			if !errors.As(err, &ie) || ie.Code != tt.want || !errors.Is(err, ErrIneligible) {
				t.Fatalf("err = %v, want *IneligibleError %s", err, tt.want)
			}
			if errors.Is(err, ErrOpenApplication) != (tt.want == ReasonOpenApplication) {
				t.Errorf("errors.Is(err, ErrOpenApplication) = %v for %s", !(tt.want == ReasonOpenApplication), tt.want)
			}
			if after, _ := s.CountApplications(ctx, ""); after != before {
				t.Errorf("applications %d → %d, want none made", before, after)
			}
		})
	}

	t.Run("ExistingApplicationWinsOverClosedWindow", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		d := mustPrepare(t, s, "late", "A3008", 7*day, t0)
		a, _, err := s.Submit(ctx, d.ID, "demo-user", t0)
		if err != nil {
			t.Fatal(err)
		}
		again, reused, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(3*day))
		if err != nil || !reused || again.ID != a.ID {
			t.Fatalf("Submit after the window closed = %+v reused=%v err=%v, want %s reused", again, reused, err, a.ID)
		}
	})
}

// TestSubmitChecksComeBeforeExpiryAndEligibility: a caller's check that
// refuses (a stop committed first) is the submit's answer even when the
// draft has expired or its order can no longer be returned, so that a
// stopped run is refused, not ended failed.
func TestSubmitChecksComeBeforeExpiryAndEligibility(t *testing.T) {
	t.Parallel()
	forStores(t, testSubmitChecksComeBeforeExpiryAndEligibility)
}

func testSubmitChecksComeBeforeExpiryAndEligibility(t *testing.T, kind storeKind) {
	ctx := context.Background()
	day := 24 * time.Hour
	stopped := errors.New("the run no longer holds the task")
	refuse := func(context.Context, sqlstore.Querier) error { return stopped }
	for _, tt := range []struct {
		name  string
		order string
		ttl   time.Duration
		at    time.Duration
	}{
		{"Expired", "A3003", time.Hour, 2 * time.Hour},
		{"WindowClosed", "A3008", 7 * day, day + time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			d := mustPrepare(t, s, "stopped", tt.order, tt.ttl, t0)
			before, _ := s.CountApplications(ctx, "")
			_, _, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(tt.at), refuse)
			if !errors.Is(err, stopped) {
				t.Fatalf("Submit = %v, want the check's refusal first", err)
			}
			if after, _ := s.CountApplications(ctx, ""); after != before {
				t.Errorf("applications %d → %d, want none made", before, after)
			}
		})
	}
}

func TestApplicationLookups(t *testing.T) {
	t.Parallel()
	forStores(t, testApplicationLookups)
}

func testApplicationLookups(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	d := mustPrepare(t, s, "return-25", "A3003", time.Hour, t0)
	mustPrepare(t, s, "drafted-only", "A3001", time.Hour, t0)
	a, _, err := s.Submit(ctx, d.ID, "demo-user", t0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		get  func() (Application, error)
		want string // application id, "" = ErrNotFound
	}{
		{"ByTask", func() (Application, error) { return s.ApplicationByTask(ctx, "return-25") }, a.ID},
		{"ByTaskDraftWithoutApplication", func() (Application, error) { return s.ApplicationByTask(ctx, "drafted-only") }, ""},
		{"ByTaskUnknown", func() (Application, error) { return s.ApplicationByTask(ctx, "nope") }, ""},
		{"ByID", func() (Application, error) { return s.Application(ctx, a.ID) }, a.ID},
		{"ByIDUnknown", func() (Application, error) { return s.Application(ctx, "app_nope") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.get()
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("err = %v, want ErrNotFound", err)
				}
				return
			}
			if err != nil || got != a {
				t.Fatalf("got %+v, %v; want %+v", got, err, a)
			}
		})
	}

	t.Run("ByTaskIsIndexed", func(t *testing.T) {
		if kind != sqliteStore {
			t.Skip("SQLite's query plan")
		}
		plan := queryPlan(t, s, `SELECT a.application_id FROM drafts d JOIN applications a ON a.draft_id = d.draft_id WHERE d.task_id = ?`, "x")
		for _, want := range []string{"USING INDEX sqlite_autoindex_drafts", "USING INDEX sqlite_autoindex_applications"} {
			if !contains(plan, want) {
				t.Errorf("plan %q lacks %q", plan, want)
			}
		}
	})
}

// queryPlan returns SQLite's query plan of q, its details joined by "; ".
func queryPlan(tb testing.TB, s *Store, q string, args ...any) string {
	tb.Helper()
	rows, err := s.DB().Query(`EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			tb.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestHeld(t *testing.T) {
	t.Parallel()
	forStores(t, testHeld)
}

func testHeld(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	d := mustPrepare(t, s, "t", "A3003", time.Hour, t0)
	a, _, err := s.Submit(ctx, d.ID, "demo-user", t0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		draft, app string
		want       HeldRows
	}{
		{"Draft", d.ID, "", HeldRows{DraftFound: true, DraftTask: "t", DraftUser: "demo-user"}},
		{"DraftMissing", "d_nope", "", HeldRows{}},
		{"Both", d.ID, a.ID, HeldRows{DraftFound: true, DraftTask: "t", DraftUser: "demo-user", ApplicationFound: true, ApplicationDraft: d.ID, ApplicationUser: "demo-user"}},
		{"ApplicationMissing", d.ID, "app_nope", HeldRows{DraftFound: true, DraftTask: "t", DraftUser: "demo-user"}},
		{"ApplicationOnly", "", a.ID, HeldRows{ApplicationFound: true, ApplicationDraft: d.ID, ApplicationUser: "demo-user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Held(ctx, tt.draft, tt.app)
			if err != nil || got != tt.want {
				t.Fatalf("Held = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
