package returns_test

import (
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

// ordersHeader is the header of a shop's orders export.
const ordersHeader = "order_id,user,item,delivered_at,final_sale\n"

func TestOrders(t *testing.T) {
	t.Run("ListSaysWhyEachCannotBeReturned", func(t *testing.T) {
		svc, b := setup(t)
		lines, err := svc.ListOrders(b.ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, l := range lines {
			got[l.ID] = l.Returnable
		}
		want := map[string]string{
			"A3001": "", "A3002": "", "A3003": "", "A3004": "", "A3008": "",
			"A3005": business.ReasonReturnWindowClosed, "A3010": business.ReasonReturnWindowClosed,
			"A3006": business.ReasonNotDelivered, "A3007": business.ReasonFinalSale, "A3009": business.ReasonOpenApplication,
		}
		if len(got) != len(want) {
			t.Fatalf("orders %v, want %v", got, want)
		}
		for id, code := range want {
			if got[id] != code {
				t.Errorf("%s: %q, want %q", id, got[id], code)
			}
		}
	})

	t.Run("ImportAddsNewAndKeepsEqualOrders", func(t *testing.T) {
		svc, b := setup(t)
		delivered := b.clock.Now().Add(-2 * 24 * time.Hour).Format(time.RFC3339)
		file := ordersHeader +
			"C5001,demo-user,Desk chair," + delivered + ",false\n" +
			"A3001,demo-user,Trail running shoes (size 42)," + delivered + ",false\n"
		res, err := svc.ImportOrders(b.ctx, strings.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		if res != (business.ImportResult{Imported: 1, Unchanged: 1}) {
			t.Fatalf("import %+v, want 1 imported, 1 unchanged", res)
		}
		wantView(t, mustStart(t, svc, "r1", "C5001", "wobbly"), returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("RowThatChangesAnOrderIsInvalid", func(t *testing.T) {
		svc, b := setup(t)
		file := ordersHeader + "C5001,demo-user,Desk chair,,false\nA3001,demo-user,Other shoes,,false\n"
		_, err := svc.ImportOrders(b.ctx, strings.NewReader(file))
		wantErr(t, err, returns.ErrInvalid)
		lines, _ := svc.ListOrders(b.ctx, user)
		if len(lines) != 10 {
			t.Fatalf("%d orders after a refused import, want the 10 seeded", len(lines))
		}
	})

	t.Run("BadFileIsInvalid", func(t *testing.T) {
		svc, b := setup(t)
		for _, file := range []string{"", "order,user\n", ordersHeader + "C5001,demo-user,Chair,yesterday,false\n"} {
			_, err := returns.ParseOrders(strings.NewReader(file))
			wantErr(t, err, returns.ErrInvalid)
			_, err = svc.ImportOrders(b.ctx, strings.NewReader(file))
			wantErr(t, err, returns.ErrInvalid)
		}
	})

	t.Run("ParsedFileImportsLater", func(t *testing.T) {
		svc, b := setup(t)
		f, err := returns.ParseOrders(strings.NewReader(ordersHeader + "C5001,demo-user,Desk chair,,false\n"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := svc.ImportOrdersFile(b.ctx, f)
		if err != nil || res.Imported != 1 {
			t.Fatalf("import %+v (%v), want 1 imported", res, err)
		}
	})
}
