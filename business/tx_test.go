package business

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestInTxOrderMemo checks the orders kept inside InTx: a second read gives
// the same order, another user's order stays not found, and an order
// imported in the same transaction after a read found none is found.
func TestInTxOrderMemo(t *testing.T) {
	t.Parallel()
	forStores(t, testInTxOrderMemo)
}

func testInTxOrderMemo(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	err := s.InTx(ctx, func(tx *Store) error {
		first, err := tx.Order(ctx, "A3001", "demo-user")
		if err != nil {
			return err
		}
		again, err := tx.Order(ctx, "A3001", "demo-user")
		if err != nil || again != first {
			t.Errorf("second read = %+v, %v; want %+v", again, err, first)
		}
		if _, err := tx.Order(ctx, "B4001", "demo-user"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another user's order: %v, want ErrNotFound", err)
		}
		if _, err := tx.Order(ctx, "A9999", "demo-user"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown order: %v, want ErrNotFound", err)
		}
		csv := "order_id,user,item,delivered_at,final_sale\nA9999,demo-user,New item,2025-03-01T00:00:00Z,false\n"
		if _, err := tx.ImportOrders(ctx, strings.NewReader(csv), ParseOptions{Operator: true}); err != nil {
			return err
		}
		if o, err := tx.Order(ctx, "A9999", "demo-user"); err != nil || o.Item != "New item" {
			t.Errorf("read after an import in the transaction = %+v, %v; want the imported order", o, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
