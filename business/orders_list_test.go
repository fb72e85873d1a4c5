package business

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOrdersPage(t *testing.T) {
	t.Parallel()
	forStores(t, testOrdersPage)
}

// testOrdersPage: EachOrderPage gives every order of the user once, by
// order id in byte order on both stores (upper case before lower case),
// in pages of OrdersPageSize, each with Eligibility's code (one query a
// page); another user's orders, whose ids sort between them, never.
func testOrdersPage(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	day := 24 * time.Hour
	var csv strings.Builder
	csv.WriteString("order_id,user,item,delivered_at,final_sale\n")
	const n = 2 * OrdersPageSize
	for i := range n {
		id := fmt.Sprintf("%c%04d", "BbZa"[i%4], i) // B… Z… a… b…: bytes, not a locale's order
		delivered := ""
		switch i % 4 {
		case 0:
			delivered = t0.Add(-2 * day).Format(time.RFC3339)
		case 1:
			delivered = t0.Add(-40 * day).Format(time.RFC3339)
		case 2:
			delivered = t0.Add(-day).Format(time.RFC3339)
		}
		fmt.Fprintf(&csv, "%s,demo-user,Item %d,%s,%v\n", id, i, delivered, i%7 == 0)
		if i%100 == 0 {
			fmt.Fprintf(&csv, "%sx,other-user,Theirs,%s,false\n", id, t0.Add(-day).Format(time.RFC3339))
		}
	}
	if _, err := s.ImportOrders(ctx, strings.NewReader(csv.String()), ParseOptions{Operator: true, Now: t0}); err != nil {
		t.Fatal(err)
	}
	// Pending applications (open), and one reviewed (not open).
	for _, id := range []string{"B0004", "B0008", "B0996", "Z1002"} {
		d := mustPrepare(t, s, "t-"+id, id, time.Hour, t0)
		if _, _, err := s.Submit(ctx, d.ID, "demo-user", t0); err != nil {
			t.Fatal(err)
		}
	}
	mustExec(t, s, `UPDATE applications SET review_status = 'approved' WHERE order_id = 'B0008'`)

	now := t0.Add(time.Minute)
	var got []EligibleOrder
	var pages []int
	err := s.EachOrderPage(ctx, "demo-user", now, func(page []EligibleOrder) error {
		pages = append(pages, len(page))
		got = append(got, page...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{OrdersPageSize, OrdersPageSize, 10}; !slices.Equal(pages, want) { // and the ten teaching orders
		t.Errorf("pages of %v orders, want %v", pages, want)
	}
	ids := make([]string, len(got))
	for i, o := range got {
		ids[i] = o.ID
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("ids not in byte order once each: %v…", ids[:20])
	}
	codes := map[string]string{}
	for _, o := range got {
		if o.User != "demo-user" {
			t.Fatalf("listed %s of %s", o.ID, o.User)
		}
		want, err := s.Order(ctx, o.ID, "demo-user")
		if err != nil {
			t.Fatal(err)
		}
		code, err := s.Eligibility(ctx, want, now)
		if err != nil {
			t.Fatal(err)
		}
		if o.Code != code || o.Item != want.Item || o.FinalSale != want.FinalSale || o.Teaching != want.Teaching ||
			(o.DeliveredAt == nil) != (want.DeliveredAt == nil) || (o.DeliveredAt != nil && !o.DeliveredAt.Equal(*want.DeliveredAt)) {
			t.Errorf("%+v %q, want %+v %q", o.Order, o.Code, want, code)
		}
		codes[o.ID] = o.Code
	}
	for id, want := range map[string]string{
		"B0004": ReasonOpenApplication, "B0008": "", "B0996": ReasonOpenApplication, "Z1002": ReasonOpenApplication,
		"a1003": ReasonNotDelivered, "b0001": ReasonReturnWindowClosed, "B0012": "", "B0028": ReasonFinalSale,
		"A3009": ReasonOpenApplication,
	} {
		if got, ok := codes[id]; !ok || got != want {
			t.Errorf("%s: %q (listed %v), want %q", id, got, ok, want)
		}
	}

	// A page starts after the id given, and no more than limit.
	page, err := s.OrdersPage(ctx, "demo-user", "B0996", 3, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 3 || page[0].ID != "B1000" || page[2].ID != "B1008" || page[0].Code != "" {
		t.Errorf("OrdersPage after B0996: %+v", page)
	}
	if page, err := s.OrdersPage(ctx, "nobody", "", 0, now); err != nil || len(page) != 0 {
		t.Errorf("OrdersPage of a user without orders: %v, %v", page, err)
	}
}
