package business

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPrepareDraft(t *testing.T) {
	t.Parallel()
	forStores(t, testPrepareDraft)
}

func testPrepareDraft(t *testing.T, kind storeKind) {
	ctx := context.Background()

	t.Run("CreatesThenReusesWithoutRefreshingExpiry", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		d, reused, err := s.PrepareDraft(ctx, "return-25", "A3003", "demo-user", "size", time.Minute, t0)
		if err != nil || reused {
			t.Fatalf("first PrepareDraft: reused=%v err=%v", reused, err)
		}
		if !strings.HasPrefix(d.ID, "d_") || d.TaskID != "return-25" || d.OrderID != "A3003" || d.User != "demo-user" || d.Reason != "size" {
			t.Errorf("draft = %+v", d)
		}
		if !d.CreatedAt.Equal(t0) || !d.ExpiresAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("created %v expires %v, want %v and a minute later", d.CreatedAt, d.ExpiresAt, t0)
		}

		later := t0.Add(10 * time.Minute) // after expiry: still reused, not refreshed
		again, reused, err := s.PrepareDraft(ctx, "return-25", "A3003", "demo-user", "size", time.Hour, later)
		if err != nil || !reused {
			t.Fatalf("second PrepareDraft: reused=%v err=%v", reused, err)
		}
		if again != d {
			t.Errorf("second draft = %+v, want %+v", again, d)
		}
		stored, err := s.DraftByTask(ctx, "return-25")
		if err != nil || stored != d {
			t.Errorf("DraftByTask = %+v, %v; want %+v", stored, err, d)
		}
		byID, err := s.Draft(ctx, d.ID)
		if err != nil || byID != d {
			t.Errorf("Draft = %+v, %v; want %+v", byID, err, d)
		}
		if n := count(t, s, "SELECT count(*) FROM drafts WHERE task_id = 'return-25'"); n != 1 {
			t.Errorf("drafts of the task = %d, want 1", n)
		}
	})

	t.Run("ZeroTTLMeansDefault", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		d := mustPrepare(t, s, "return-1", "A3001", 0, t0)
		if got := d.ExpiresAt.Sub(d.CreatedAt); got != DefaultDraftTTL {
			t.Errorf("ttl = %v, want %v", got, DefaultDraftTTL)
		}
	})

	refusals := []struct {
		name         string
		task, order  string
		user, reason string
		want         error
	}{
		{"UnknownOrder", "return-2", "Z9999", "demo-user", "size", ErrNotFound},
		{"OtherUsersOrder", "return-2", "B4001", "demo-user", "size", ErrNotFound},
		{"TaskOfAnotherUser", "taken", "B4002", "other-user", "size", ErrNotFound},
		{"SameTaskOtherOrder", "taken", "A3001", "demo-user", "size", ErrConflict},
		{"SameTaskOtherReason", "taken", "A3003", "demo-user", "colour", ErrConflict},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustPrepare(t, s, "taken", "A3003", time.Minute, t0)
			_, _, err := s.PrepareDraft(ctx, tt.task, tt.order, tt.user, tt.reason, time.Minute, t0)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if n := count(t, s, "SELECT count(*) FROM drafts WHERE task_id != 'seed-A3009'"); n != 1 {
				t.Errorf("drafts = %d, want only the first one", n)
			}
		})
	}

	t.Run("UnknownTaskNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if _, err := s.DraftByTask(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("DraftByTask: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Draft(ctx, "d_nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Draft: err = %v, want ErrNotFound", err)
		}
	})
}

func TestSubmit(t *testing.T) {
	forStores(t, testSubmit)
}

func testSubmit(t *testing.T, kind storeKind) {
	ctx := context.Background()
	const ttl = 5 * time.Minute
	setup := func(t *testing.T) (*Store, Draft) {
		t.Helper()
		s, _ := newSeededOn(t, kind)
		return s, mustPrepare(t, s, "return-25", "A3003", ttl, t0)
	}

	t.Run("OnceThenReusedWithSameID", func(t *testing.T) {
		s, d := setup(t)
		a, reused, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(time.Minute))
		if err != nil || reused {
			t.Fatalf("first Submit: reused=%v err=%v", reused, err)
		}
		if !strings.HasPrefix(a.ID, "app_") || a.DraftID != d.ID || a.OrderID != "A3003" ||
			a.User != "demo-user" || a.ReviewStatus != ReviewPending || !a.CreatedAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("application = %+v", a)
		}
		again, reused, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(2*time.Minute))
		if err != nil || !reused || again != a {
			t.Fatalf("second Submit = %+v reused=%v err=%v, want %+v reused", again, reused, err, a)
		}
		if got, err := s.ApplicationByDraft(ctx, d.ID); err != nil || got != a {
			t.Errorf("ApplicationByDraft = %+v, %v", got, err)
		}
		if n, _ := s.CountApplications(ctx, d.ID); n != 1 {
			t.Errorf("applications of the draft = %d, want 1", n)
		}
		if n, _ := s.CountApplications(ctx, ""); n != 2 { // plus the seeded A3009
			t.Errorf("all applications = %d, want 2", n)
		}
	})

	for _, tt := range []struct {
		name string
		at   time.Duration
	}{
		{"ExpiredAtExactlyExpiresAt", ttl},
		{"ExpiredLater", ttl + time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, d := setup(t)
			_, _, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(tt.at))
			if !errors.Is(err, ErrDraftExpired) {
				t.Fatalf("err = %v, want ErrDraftExpired", err)
			}
			if n, _ := s.CountApplications(ctx, d.ID); n != 0 {
				t.Errorf("applications = %d, want 0", n)
			}
			if got, _ := s.DraftByTask(ctx, "return-25"); got != d {
				t.Errorf("draft changed: %+v, want %+v", got, d)
			}
		})
	}

	t.Run("ExistingApplicationReturnedAfterExpiry", func(t *testing.T) {
		s, d := setup(t)
		a, _, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(ttl-time.Nanosecond))
		if err != nil {
			t.Fatal(err)
		}
		again, reused, err := s.Submit(ctx, d.ID, "demo-user", t0.Add(24*time.Hour))
		if err != nil || !reused || again.ID != a.ID {
			t.Fatalf("Submit after expiry = %+v reused=%v err=%v, want %s reused", again, reused, err, a.ID)
		}
	})

	t.Run("OtherUserNotFound", func(t *testing.T) {
		s, d := setup(t)
		if _, _, err := s.Submit(ctx, d.ID, "other-user", t0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("before submit: err = %v, want ErrNotFound", err)
		}
		if n, _ := s.CountApplications(ctx, d.ID); n != 0 {
			t.Fatalf("applications = %d, want 0", n)
		}
		if _, _, err := s.Submit(ctx, d.ID, "demo-user", t0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Submit(ctx, d.ID, "other-user", t0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("after submit: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("UnknownDraftNotFound", func(t *testing.T) {
		s, _ := setup(t)
		if _, _, err := s.Submit(ctx, "d_nope", "demo-user", t0); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})

	t.Run("SubmitTxJoinsCallerTransaction", func(t *testing.T) {
		s, d := setup(t)
		tx, err := s.h.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.SubmitTx(ctx, tx, d.ID, "demo-user", t0); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.CountApplications(ctx, d.ID); n != 0 {
			t.Errorf("applications after rollback = %d, want 0", n)
		}
	})

	t.Run("ConcurrentSubmitsMakeOneApplication", func(t *testing.T) {
		s, d := setup(t)
		raceForOneRow(t, 20, func(int) (string, bool, error) {
			a, reused, err := s.Submit(ctx, d.ID, "demo-user", t0)
			return a.ID, !reused, err
		})
		if got, _ := s.CountApplications(ctx, d.ID); got != 1 {
			t.Errorf("applications = %d, want 1", got)
		}
	})
}
