package business

import (
	"context"
	"errors"
	"testing"
	"time"

	"assistant/internal/sqlstore"
)

// TestPreloadOrders checks the orders a batch chunk reads up front
// (PreloadOrders, two statements): inside InTx their Order and
// Eligibility then read nothing and say what they say outside it (an
// eligible order, a final sale, one with an open application), unknown
// and other users' orders stay not found, and an application the
// transaction makes is seen by the next Eligibility of its order.
func TestPreloadOrders(t *testing.T) { forStores(t, testPreloadOrders) }

func testPreloadOrders(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	now := t0.Add(time.Hour)
	ids := []string{"A3001", "A3007", "A3009", "A9999", "B4001"}
	want := map[string]string{}
	for _, id := range ids[:3] {
		o, err := s.Order(ctx, id, "demo-user")
		if err != nil {
			t.Fatal(err)
		}
		if want[id], err = s.Eligibility(ctx, o, now); err != nil {
			t.Fatal(err)
		}
	}
	if want["A3001"] != "" || want["A3007"] != ReasonFinalSale || want["A3009"] != ReasonOpenApplication {
		t.Fatalf("seeded eligibility %v: the seed changed?", want)
	}
	err := s.InTx(ctx, func(tx *Store) error {
		before := sqlstore.Statements()
		if err := tx.PreloadOrders(ctx, "demo-user", ids); err != nil {
			return err
		}
		if n := sqlstore.Statements() - before; n != 2 {
			t.Errorf("PreloadOrders ran %d statements, want 2", n)
		}
		before = sqlstore.Statements()
		for _, id := range ids[:3] {
			o, err := tx.Order(ctx, id, "demo-user")
			if err != nil {
				return err
			}
			if got, err := tx.Eligibility(ctx, o, now); err != nil || got != want[id] {
				t.Errorf("%s in the chunk: %q, %v; want %q", id, got, err, want[id])
			}
		}
		if n := sqlstore.Statements() - before; n != 0 {
			t.Errorf("preloaded orders and their eligibility ran %d statements, want 0", n)
		}
		for _, id := range ids[3:] {
			if _, err := tx.Order(ctx, id, "demo-user"); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s in the chunk: %v, want ErrNotFound", id, err)
			}
		}
		d, _, err := tx.PrepareDraft(ctx, "t1", "A3001", "demo-user", "size", 0, now)
		if err != nil {
			return err
		}
		if _, _, err := tx.Submit(ctx, d.ID, "demo-user", now); err != nil {
			return err
		}
		o, err := tx.Order(ctx, "A3001", "demo-user")
		if err != nil {
			return err
		}
		if got, err := tx.Eligibility(ctx, o, now); err != nil || got != ReasonOpenApplication {
			t.Errorf("A3001 after its application in the chunk: %q, %v; want %q", got, err, ReasonOpenApplication)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
