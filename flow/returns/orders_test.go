package returns_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

// ordersHeader is the header of a shop's orders export.
const ordersHeader = "order_id,user,item,delivered_at,final_sale\n"

// importAs parses file as user (with operator, as the shop's operator) and
// imports it; dry says whether to write nothing.
func importAs(tb testing.TB, svc *returns.Service, b *bundle, file, as string, operator, dry bool) (business.ImportResult, error) {
	tb.Helper()
	f, err := returns.ParseOrders(b.ctx, strings.NewReader(file), business.ParseOptions{User: as, Operator: operator, Now: b.clock.Now()})
	if err != nil {
		return business.ImportResult{}, err
	}
	defer f.Close()
	return svc.ImportOrdersFile(b.ctx, f, business.ImportOptions{DryRun: dry})
}

// orderOf returns demo-user's (or another user's) order id as stored.
func orderOf(tb testing.TB, svc *returns.Service, b *bundle, who, id string) (returns.OrderLine, bool) {
	tb.Helper()
	lines, err := svc.ListOrders(b.ctx, who)
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range lines {
		if l.ID == id {
			return l, true
		}
	}
	return returns.OrderLine{}, false
}

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
			if !l.Teaching {
				t.Errorf("%s: not marked teaching", l.ID)
			}
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
		file := ordersHeader + "C5001,demo-user,Desk chair," + delivered + ",false\n"
		res, err := svc.ImportOrders(b.ctx, strings.NewReader(file))
		if err != nil || res.Added != 1 {
			t.Fatalf("import %+v, %v; want 1 added", res, err)
		}
		res, err = svc.ImportOrders(b.ctx, strings.NewReader(file))
		if err != nil || res.Unchanged != 1 || res.Added+res.Updated != 0 {
			t.Fatalf("again: %+v, %v; want 1 unchanged", res, err)
		}
		wantView(t, mustStart(t, svc, "r1", "C5001", "wobbly"), returns.StatusWaiting, returns.StageDraftReady)
	})

	// day 1 exports C50 undelivered, day 2 C50 delivered
	// and a new C51. The second import updates C50 and adds C51.
	t.Run("DayTwoExportUpdatesDelivery", func(t *testing.T) {
		svc, b := setup(t)
		day2 := b.clock.Now().Add(-24 * time.Hour).Format(time.RFC3339)
		if _, err := importAs(t, svc, b, ordersHeader+"C50,demo-user,Kettle,,false\n", user, false, false); err != nil {
			t.Fatal(err)
		}
		_, err := svc.Start(b.ctx, returns.StartOptions{Task: "early", User: user, Order: "C50", Reason: "r"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := importAs(t, svc, b, ordersHeader+"C50,demo-user,Kettle,"+day2+",false\nC51,demo-user,Toaster,"+day2+",false\n", user, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Added != 1 || res.Updated != 1 || res.Unchanged != 0 || res.Refused != 0 || res.Rows != 2 || res.Orders != 2 {
			t.Fatalf("report %+v, want 1 added, 1 updated", res)
		}
		if c := res.Changes[0]; c.OrderID != "C50" || c.Action != business.ActionUpdated || strings.Join(c.Fields, ",") != "delivered_at" || c.Line != 2 {
			t.Fatalf("change %+v, want C50 updated: delivered_at on line 2", c)
		}
		for _, id := range []string{"C50", "C51"} {
			if l, ok := orderOf(t, svc, b, user, id); !ok || l.Returnable != "" {
				t.Errorf("%s after day 2: %+v (found %v), want returnable", id, l, ok)
			}
		}
		wantView(t, mustStart(t, svc, "late", "C50", "too small"), returns.StatusWaiting, returns.StageDraftReady)
	})

	// An update that affects a task waiting for approval is reported, and
	// the task's submit checks the order again.
	t.Run("UpdateOfAnOrderInFlightIsReportedAndRechecked", func(t *testing.T) {
		svc, b := setup(t)
		delivered := b.clock.Now().Add(-2 * 24 * time.Hour).Format(time.RFC3339)
		if _, err := svc.ImportOrders(b.ctx, strings.NewReader(ordersHeader+"C60,demo-user,Lamp,"+delivered+",false\n")); err != nil {
			t.Fatal(err)
		}
		wantView(t, mustStart(t, svc, "r60", "C60", "broken"), returns.StatusWaiting, returns.StageDraftReady)
		res, err := svc.ImportOrders(b.ctx, strings.NewReader(ordersHeader+"C60,demo-user,Lamp,"+delivered+",true\n"))
		if err != nil {
			t.Fatal(err)
		}
		c := res.Changes[0]
		if res.InFlight != 1 || strings.Join(c.Tasks, ",") != "r60" || c.NotReturnableNow != business.ReasonFinalSale {
			t.Fatalf("report %+v, want r60 in flight and final_sale now", res)
		}
		v := mustResume(t, svc, approve("r60"))
		if v.Status != returns.StatusFailed || v.Error == nil || v.Error.Code != business.ReasonFinalSale {
			t.Fatalf("approve after the update: %+v, want failed final_sale", v)
		}
	})

	t.Run("OwnerNeverChanges", func(t *testing.T) {
		svc, b := setup(t)
		if _, err := svc.ImportOrders(b.ctx, strings.NewReader(ordersHeader+"C70,demo-user,Mug,,false\n")); err != nil {
			t.Fatal(err)
		}
		_, err := svc.ImportOrders(b.ctx, strings.NewReader(ordersHeader+"C71,demo-user,Cup,,false\nC70,other-user,Mug,,false\n"))
		wantErr(t, err, returns.ErrConflict)
		if !strings.Contains(err.Error(), "line 3: order C70") || strings.Contains(err.Error(), "demo-user") {
			t.Errorf("error %q: want line 3 named and the owner not", err)
		}
		if _, ok := orderOf(t, svc, b, user, "C71"); ok {
			t.Error("C71 was imported from a refused file")
		}
	})

	t.Run("DryRunWritesNothing", func(t *testing.T) {
		svc, b := setup(t)
		res, err := importAs(t, svc, b, ordersHeader+"C80,demo-user,Mug,,false\nA3001,demo-user,Trail running shoes (size 42),,false\n", user, false, true)
		if err != nil {
			t.Fatal(err)
		}
		if !res.DryRun || res.Added != 1 || res.Updated != 1 {
			t.Fatalf("dry run %+v, want 1 added and 1 updated", res)
		}
		if _, ok := orderOf(t, svc, b, user, "C80"); ok {
			t.Error("a dry run added C80")
		}
		if l, _ := orderOf(t, svc, b, user, "A3001"); l.DeliveredAt == nil || !l.Teaching {
			t.Errorf("a dry run changed A3001: %+v", l)
		}
	})

	// a real order with a teaching order's id replaces it
	// when no task uses it; one a task uses keeps its owner.
	t.Run("RealOrderReplacesUnusedTeachingOrder", func(t *testing.T) {
		svc, b := setup(t)
		res, err := importAs(t, svc, b, ordersHeader+"A3001,shop-customer,Blender,,false\n", user, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.TeachingReplaced != 1 || res.Changes[0].Action != business.ActionReplacedTeaching {
			t.Fatalf("report %+v, want A3001 replaced", res)
		}
		if _, ok := orderOf(t, svc, b, user, "A3001"); ok {
			t.Error("A3001 is still demo-user's")
		}
		if l, ok := orderOf(t, svc, b, "shop-customer", "A3001"); !ok || l.Teaching || l.Item != "Blender" {
			t.Errorf("A3001 = %+v (found %v), want the shop's Blender", l, ok)
		}
		// A3009's teaching draft and application use it.
		_, err = importAs(t, svc, b, ordersHeader+"A3009,shop-customer,Blender,,false\n", user, true, false)
		wantErr(t, err, returns.ErrConflict)
	})

	// rows of other users need --operator, and the
	// refusal is the same whether such an order exists or not.
	t.Run("OtherUsersRowsNeedOperator", func(t *testing.T) {
		svc, b := setup(t)
		file := ordersHeader + "C90,other-user,Pen,,false\nB4001,demo-user,Leather wallet,,false\nZ404,demo-user,Nothing,,false\n"
		_, err := importAs(t, svc, b, file, otherUser, false, false)
		wantErr(t, err, returns.ErrInvalid)
		msg := err.Error()
		for _, want := range []string{"line 3: order B4001 is of user \"demo-user\"", "line 4: order Z404 is of user \"demo-user\""} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q lacks %q", msg, want)
			}
		}
		if strings.Contains(msg, "exist") || strings.Contains(msg, "stored") || strings.Contains(msg, "line 2") {
			t.Errorf("error %q says more than which rows are another user's", msg)
		}
		if _, ok := orderOf(t, svc, b, otherUser, "C90"); ok {
			t.Error("C90 imported from a refused file")
		}
		res, err := importAs(t, svc, b, file, otherUser, true, false)
		if err != nil || res.Added != 2 || res.Unchanged != 0 {
			t.Fatalf("with operator: %+v, %v; want Z404 and C90 added, B4001 (a teaching order) replaced", res, err)
		}
	})

	// order ids follow the task id rule.
	t.Run("OrderIDsFollowTheTaskIDRule", func(t *testing.T) {
		for name, id := range map[string]string{
			"Newline":   "\"C1\nC2\"",
			"Escape":    "C\x1b[31m1",
			"ZeroWidth": "C\u200b1",
			"TooLong":   strings.Repeat("C", 300),
			"Invalid":   "C\xff1",
			"Space":     "C 1",
			"Slash":     "C/1",
		} {
			t.Run(name, func(t *testing.T) {
				_, err := returns.ParseOrders(context.Background(), strings.NewReader(ordersHeader+id+",demo-user,Pen,,false\n"), business.ParseOptions{User: user})
				wantErr(t, err, returns.ErrInvalid)
				if !strings.Contains(err.Error(), "line 2: ") {
					t.Errorf("error %q does not name line 2", err)
				}
			})
		}
	})

	t.Run("BadFileIsInvalid", func(t *testing.T) {
		svc, b := setup(t)
		for _, file := range []string{"", "order,user\n", ordersHeader, ordersHeader + "C5001,demo-user,Chair,yesterday,false\n"} {
			_, err := returns.ParseOrders(b.ctx, strings.NewReader(file), business.ParseOptions{User: user})
			wantErr(t, err, returns.ErrInvalid)
			_, err = svc.ImportOrders(b.ctx, strings.NewReader(file))
			wantErr(t, err, returns.ErrInvalid)
		}
	})

	t.Run("CancelledImportWritesNothing", func(t *testing.T) {
		svc, b := setup(t)
		var file strings.Builder
		file.WriteString(ordersHeader)
		for i := range 5000 {
			file.WriteString("K" + strconv.Itoa(i) + ",demo-user,Pen,,false\n")
		}
		f, err := returns.ParseOrders(b.ctx, strings.NewReader(file.String()), business.ParseOptions{User: user})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		_, err = svc.ImportOrdersFile(ctx, f, business.ImportOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		lines, _ := svc.ListOrders(b.ctx, user)
		if len(lines) != 10 {
			t.Fatalf("%d orders after a cancelled import, want the 10 seeded", len(lines))
		}
	})
}
