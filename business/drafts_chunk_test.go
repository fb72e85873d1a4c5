package business

import (
	"context"
	"errors"
	"testing"
	"time"

	"assistant/internal/sqlstore"
)

// TestPrepareDraftInTx checks a first draft prepared inside a chunk's
// transaction (InTx), which runs without a savepoint of its own: a new
// draft is one statement (a round trip on PostgreSQL), the cases that
// write nothing are told apart as outside a chunk (the same draft again
// is reused, another reason is ErrConflict, an unknown order or another
// user's is ErrNotFound), none of them spoils the transaction, which goes
// on and commits what it made.
func TestPrepareDraftInTx(t *testing.T) { forStores(t, testPrepareDraftInTx) }

func testPrepareDraftInTx(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	seeded := count(t, s, `SELECT count(*) FROM drafts`)
	var first Draft
	err := s.InTx(ctx, func(tx *Store) error {
		before := sqlstore.Statements()
		d, reused, err := tx.PrepareDraft(ctx, "t1", "A3001", "demo-user", "size", 0, now)
		if err != nil || reused {
			t.Fatalf("new draft: %+v, reused %v, %v", d, reused, err)
		}
		if n := sqlstore.Statements() - before; n != 1 {
			t.Errorf("a new draft in a chunk ran %d statements, want 1", n)
		}
		first = d
		again, reused, err := tx.PrepareDraft(ctx, "t1", "A3001", "demo-user", "size", 0, now.Add(time.Minute))
		if err != nil || !reused || again.ID != d.ID {
			t.Errorf("same draft again: %+v, reused %v, %v; want draft %s reused", again, reused, err, d.ID)
		}
		cases := []struct {
			name, task, order, user, reason string
			want                            error
		}{
			{"other reason", "t1", "A3001", "demo-user", "colour", ErrConflict},
			{"other order", "t1", "A3002", "demo-user", "size", ErrConflict},
			{"unknown order", "t2", "A9999", "demo-user", "size", ErrNotFound},
			{"another user's order", "t3", "B4001", "demo-user", "size", ErrNotFound},
			{"another user's draft", "t1", "A3001", "other-user", "size", ErrNotFound},
		}
		for _, c := range cases {
			if _, _, err := tx.PrepareDraft(ctx, c.task, c.order, c.user, c.reason, 0, now); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		_, _, err = tx.PrepareDraft(ctx, "t4", "A3002", "demo-user", "size", 0, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM drafts`) - seeded; n != 2 {
		t.Errorf("%d new drafts after the commit, want 2 (t1 and t4)", n)
	}
	if d, err := s.Draft(ctx, first.ID); err != nil || d.TaskID != "t1" || d.Version != 1 {
		t.Errorf("draft %s after the commit: %+v, %v", first.ID, d, err)
	}
}
