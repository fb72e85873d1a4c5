package business

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"assistant/internal/sqlstore"
)

// TestPreloadTasks checks the rows a decide chunk reads up front
// (PreloadTasks, three statements): inside InTx the trail, the drafts and
// the applications of the preloaded tasks then read nothing, and after
// every kind of write the chunk makes (a decision, an application, a new
// draft version, a submit rolled back) each answer is the one the
// database gives in the same transaction.
func TestPreloadTasks(t *testing.T) { forStores(t, testPreloadTasks) }

func testPreloadTasks(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	now := t0.Add(time.Minute)
	d1, _, err := s.PrepareDraft(ctx, "t1", "A3001", "demo-user", "too small", 300*time.Second, now)
	if err != nil {
		t.Fatal(err)
	}
	d2, _, err := s.PrepareDraft(ctx, "t2", "A3002", "demo-user", "wrong colour", 300*time.Second, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordDecision(ctx, Decision{ID: "dec_t2_reason", TaskID: "t2", By: "demo-user", Action: "reason", At: now, Reason: "wrong colour"}); err != nil {
		t.Fatal(err)
	}
	tasks := []string{"t1", "t2", "t3"} // t3 has nothing
	err = s.InTx(ctx, func(tx *Store) error {
		plain := &Store{h: tx.h, q: tx.q, now: tx.now} // reads the same transaction, no memo
		drafts := []string{d1.ID, d2.ID}
		// same checks that every answer the memo gives is the database's.
		same := func(when string) {
			t.Helper()
			for _, task := range tasks {
				got, err1 := tx.Decisions(ctx, task)
				want, err2 := plain.Decisions(ctx, task)
				if err1 != nil || err2 != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: Decisions(%s) = %v, %v; the database has %v, %v", when, task, got, err1, want, err2)
				}
				ga, err1 := tx.ApplicationByTask(ctx, task)
				wa, err2 := plain.ApplicationByTask(ctx, task)
				if ga != wa || errors.Is(err1, ErrNotFound) != errors.Is(err2, ErrNotFound) {
					t.Errorf("%s: ApplicationByTask(%s) = %+v, %v; the database has %+v, %v", when, task, ga, err1, wa, err2)
				}
			}
			for _, id := range drafts {
				got, err1 := tx.Held(ctx, id, "")
				want, err2 := plain.Held(ctx, id, "")
				if got != want || err1 != nil || err2 != nil {
					t.Errorf("%s: Held(%s) = %+v, %v; the database has %+v, %v", when, id, got, err1, want, err2)
				}
			}
		}
		before := sqlstore.Statements()
		if err := tx.PreloadTasks(ctx, tasks); err != nil {
			return err
		}
		if n := sqlstore.Statements() - before; n != 3 {
			t.Errorf("PreloadTasks ran %d statements, want 3", n)
		}
		before = sqlstore.Statements()
		for _, task := range tasks {
			if _, err := tx.Decisions(ctx, task); err != nil {
				return err
			}
			if _, err := tx.ApplicationByTask(ctx, task); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		for _, id := range drafts {
			if _, err := tx.Held(ctx, id, ""); err != nil {
				return err
			}
		}
		if n := sqlstore.Statements() - before; n != 0 {
			t.Errorf("reads of preloaded tasks ran %d statements, want 0", n)
		}
		same("preloaded")

		// An approval: the decision and the application, in one savepoint.
		a, reused, err := tx.SubmitDecided(ctx, Decision{ID: "dec_t1_approve", TaskID: "t1", By: "demo-user", Action: "approve", DraftID: d1.ID, Version: 1, At: now}, d1.ID, "demo-user", now)
		if err != nil || reused {
			t.Fatalf("SubmitDecided t1: %+v, %v, %v", a, reused, err)
		}
		same("after t1's approval")
		if _, reused, err := tx.Submit(ctx, d1.ID, "demo-user", now); err != nil || !reused {
			t.Errorf("Submit of t1's draft again: reused %v, %v; want the application reused", reused, err)
		}

		// An edit: version 2 of t2's draft supersedes version 1.
		d2v2, _, err := tx.PrepareDraftVersion(ctx, "t2", 2, "A3002", "demo-user", "wrong size", 300*time.Second, now)
		if err != nil {
			t.Fatal(err)
		}
		drafts = append(drafts, d2v2.ID)
		same("after t2's edit")
		if _, _, err := tx.Submit(ctx, d2.ID, "demo-user", now); !errors.Is(err, ErrConflict) {
			t.Errorf("Submit of t2's superseded version 1: %v; want ErrConflict", err)
		}

		// A submit refused with an error that rolls back its savepoint,
		// decision included: another user's draft.
		if _, _, err := tx.SubmitDecided(ctx, Decision{ID: "dec_t2_other", TaskID: "t2", By: "someone", Action: "approve", DraftID: d2v2.ID, Version: 2, At: now}, d2v2.ID, "someone", now); !errors.Is(err, ErrNotFound) {
			t.Errorf("SubmitDecided of another user's draft: %v; want ErrNotFound", err)
		}
		same("after a submit rolled back")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPreloadTasksOutsideTx: outside InTx there is nothing to keep rows
// in; PreloadTasks reads nothing and every read goes to the database.
func TestPreloadTasksOutsideTx(t *testing.T) {
	ctx := context.Background()
	s, _ := newSeeded(t)
	before := sqlstore.Statements()
	if err := s.PreloadTasks(ctx, []string{"t1"}); err != nil {
		t.Fatal(err)
	}
	if n := sqlstore.Statements() - before; n != 0 {
		t.Errorf("PreloadTasks outside InTx ran %d statements, want 0", n)
	}
	if _, _, err := s.PrepareDraft(ctx, "t1", "A3001", "demo-user", "too small", 300*time.Second, t0); err != nil {
		t.Fatal(err)
	}
	if ds, err := s.Decisions(ctx, "t1"); err != nil || len(ds) != 0 || ds == nil {
		t.Errorf("Decisions(t1) = %#v, %v; want an empty, non-nil trail", ds, err)
	}
}

// TestSubmitDecidedInTx checks that SubmitDecided inside a caller's
// transaction (a decide chunk's: no savepoint, submit's checks before any
// write) comes to what it comes to on its own (a savepoint rolled back on
// a refusal): the same error, the same decision kept or not, the same
// application made or not, for each outcome submit has.
func TestSubmitDecidedInTx(t *testing.T) { forStores(t, testSubmitDecidedInTx) }

func testSubmitDecidedInTx(t *testing.T, kind storeKind) {
	now := t0.Add(time.Minute)
	cases := []struct {
		name  string
		order string
		user  string        // who submits: the draft's owner is demo-user
		at    time.Duration // after now
		setup func(t *testing.T, s *Store, d Draft)
		want  error // nil: an application made
	}{
		{name: "made", order: "A3001", user: "demo-user"},
		{name: "reused", order: "A3001", user: "demo-user", setup: func(t *testing.T, s *Store, d Draft) {
			if _, _, err := s.Submit(context.Background(), d.ID, "demo-user", now); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "expired", order: "A3001", user: "demo-user", at: time.Hour, want: ErrDraftExpired},
		{name: "final sale", order: "A3007", user: "demo-user", want: ErrIneligible},
		{name: "open application", order: "A3009", user: "demo-user", want: ErrOpenApplication},
		{name: "another user", order: "A3001", user: "someone", want: ErrNotFound},
		{name: "superseded", order: "A3001", user: "demo-user", want: ErrConflict, setup: func(t *testing.T, s *Store, d Draft) {
			if _, _, err := s.PrepareDraftVersion(context.Background(), d.TaskID, 2, d.OrderID, "demo-user", "edited", 300*time.Second, now); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "decided before", order: "A3001", user: "demo-user", setup: func(t *testing.T, s *Store, d Draft) {
			if err := s.RecordDecision(context.Background(), Decision{ID: "dec_1", TaskID: d.TaskID, By: "demo-user", Action: "approve", DraftID: d.ID, Version: 1, At: now}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	type result struct {
		err          string
		decisions    int
		applications int
		reused       bool
	}
	run := func(t *testing.T, inTx bool, c int) result {
		ctx := context.Background()
		s, _ := newSeededOn(t, kind)
		tc := cases[c]
		d, _, err := s.PrepareDraft(ctx, "t1", tc.order, "demo-user", "reason", 300*time.Second, now)
		if err != nil {
			t.Fatal(err)
		}
		if tc.setup != nil {
			tc.setup(t, s, d)
		}
		dec := Decision{ID: "dec_1", TaskID: "t1", By: tc.user, Action: "approve", DraftID: d.ID, Version: 1, At: now}
		var res result
		submit := func(s *Store) error {
			_, reused, err := s.SubmitDecided(ctx, dec, d.ID, tc.user, now.Add(tc.at))
			res.reused = reused
			switch {
			case err == nil:
			case tc.want != nil && errors.Is(err, tc.want):
				res.err = tc.want.Error()
			default:
				return err
			}
			return nil
		}
		if inTx {
			err = s.InTx(ctx, func(tx *Store) error {
				if err := tx.PreloadTasks(ctx, []string{"t1"}); err != nil {
					return err
				}
				return submit(tx)
			})
		} else {
			err = submit(s)
		}
		if err != nil {
			t.Fatalf("inTx %v: %v", inTx, err)
		}
		ds, err := s.Decisions(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		res.decisions = len(ds)
		if _, err := s.ApplicationByTask(ctx, "t1"); err == nil {
			res.applications = 1
		} else if !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		return res
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			alone, inTx := run(t, false, i), run(t, true, i)
			if alone != inTx {
				t.Errorf("in a transaction %+v, on its own %+v", inTx, alone)
			}
			if wantErr := ""; tc.want != nil {
				wantErr = tc.want.Error()
				if inTx.err != wantErr {
					t.Errorf("error %q, want %q", inTx.err, wantErr)
				}
			}
		})
	}
}

// TestDecisionsOf checks the trails read for many tasks at once: each is
// the one Decisions reads, in the same order, and empty (not nil) for a
// task without decisions or an unknown one, in one statement.
func TestDecisionsOf(t *testing.T) { forStores(t, testDecisionsOf) }

func testDecisionsOf(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	now := t0.Add(time.Minute)
	for i, d := range []Decision{
		{ID: "dec_t2_reason", TaskID: "t2", By: "demo-user", Action: "reason", At: now, Reason: "wrong colour"},
		{ID: "dec_t1_reason", TaskID: "t1", By: "demo-user", Action: "reason", At: now.Add(time.Second), Reason: "too small"},
		{ID: "dec_t2_cancel", TaskID: "t2", By: "demo-user", Action: "cancel", At: now.Add(-time.Second)},
	} {
		if err := s.RecordDecision(ctx, d); err != nil {
			t.Fatalf("decision %d: %v", i, err)
		}
	}
	tasks := []string{"t1", "t2", "t3", "nobody"}
	before := sqlstore.Statements()
	got, err := s.DecisionsOf(ctx, tasks)
	if err != nil {
		t.Fatal(err)
	}
	if n := sqlstore.Statements() - before; n != 1 {
		t.Errorf("DecisionsOf ran %d statements, want 1", n)
	}
	if len(got) != len(tasks) {
		t.Errorf("DecisionsOf gave %d trails, want %d", len(got), len(tasks))
	}
	for _, task := range tasks {
		want, err := s.Decisions(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[task], want) {
			t.Errorf("DecisionsOf: trail of %s = %v; Decisions reads %v", task, got[task], want)
		}
	}
}
