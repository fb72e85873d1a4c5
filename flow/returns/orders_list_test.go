package returns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

// TestEachOrderManyOrders lists 20,000 orders of demo-user (a mix of
// returnable, not delivered, window closed and final sale ones, beside
// other-user's orders whose ids sort between them) through the streaming
// API, with tasks that make some orders not returnable (an open
// application) or inconsistent (a submission whose application the
// business file lost, a draft it lost; the second of two tasks of an
// order), on page boundaries too. The list is the old per-order rule's:
// every order of demo-user by order id, each with Store.Eligibility's
// code, inconsistent when returnable and a task of it is (show says so).
func TestEachOrderManyOrders(t *testing.T) {
	svc, b := setup(t)
	now := b.clock.Now()
	day := 24 * time.Hour
	var csv strings.Builder
	csv.WriteString(ordersHeader)
	const n = 20000
	for i := range n {
		switch i % 5 {
		case 0, 4:
			fmt.Fprintf(&csv, "L%05d,%s,Item %d,%s,false\n", i, user, i, now.Add(-2*day).Format(time.RFC3339))
		case 1:
			fmt.Fprintf(&csv, "L%05d,%s,Item %d,,false\n", i, user, i)
		case 2:
			fmt.Fprintf(&csv, "L%05d,%s,Item %d,%s,false\n", i, user, i, now.Add(-40*day).Format(time.RFC3339))
		case 3:
			fmt.Fprintf(&csv, "L%05d,%s,Item %d,%s,true\n", i, user, i, now.Add(-day).Format(time.RFC3339))
		}
		if i%1000 == 0 {
			fmt.Fprintf(&csv, "L%05dx,%s,Theirs %d,%s,false\n", i, otherUser, i, now.Add(-2*day).Format(time.RFC3339))
		}
	}
	if _, err := svc.ImportOrders(b.ctx, strings.NewReader(csv.String())); err != nil {
		t.Fatal(err)
	}
	dropApplication := func(task string) {
		execDesk(t, svc, `DELETE FROM applications WHERE draft_id IN (SELECT draft_id FROM drafts WHERE task_id = '`+task+`')`)
	}
	// An open application: not returnable.
	mustStart(t, svc, "ta", "L00000", "size")
	mustResume(t, svc, approve("ta"))
	// Submitted, then the business file lost the application: inconsistent
	// (the last order of the first page).
	mustStart(t, svc, "tb", "L00989", "size")
	mustResume(t, svc, approve("tb"))
	dropApplication("tb")
	// A draft the business file lost: inconsistent (the second page's first).
	mustStart(t, svc, "tc", "L00990", "size")
	execDesk(t, svc, `DELETE FROM drafts WHERE task_id = 'tc'`)
	// Waiting and cancelled tasks: still returnable.
	mustStart(t, svc, "td", "L01004", "size")
	mustStart(t, svc, "te", "L05000", "size")
	mustResume(t, svc, cancel("te"))
	// Two tasks of the last order: the first consistent, the second not.
	mustStart(t, svc, "tf1", "L19999", "size")
	mustResume(t, svc, cancel("tf1"))
	mustStart(t, svc, "tf2", "L19999", "size")
	mustResume(t, svc, approve("tf2"))
	dropApplication("tf2")
	// An inconsistent task of an order that became final sale: final_sale.
	mustStart(t, svc, "tg", "L07000", "size")
	mustResume(t, svc, approve("tg"))
	dropApplication("tg")
	if _, err := svc.ImportOrders(b.ctx, strings.NewReader(ordersHeader+fmt.Sprintf("L07000,%s,Item 7000,%s,true\n", user, now.Add(-2*day).Format(time.RFC3339)))); err != nil {
		t.Fatal(err)
	}
	// Another user's inconsistent task: nothing of it in demo-user's list.
	if _, err := svc.Start(b.ctx, returns.StartOptions{Task: "th", User: otherUser, Order: "L01000x", Reason: "size"}); err != nil {
		t.Fatal(err)
	}
	mustResume(t, svc, returns.ResumeOptions{Task: "th", User: otherUser, Action: returns.ActionApprove})
	dropApplication("th")

	// The old rule, one order at a time.
	want := oldOrderList(b.ctx, t, svc, user, b.clock.Now().UTC().Truncate(time.Millisecond))
	if len(want) != n+10 { // and the ten teaching orders
		t.Fatalf("the old rule lists %d orders, want %d", len(want), n+10)
	}
	for id, code := range map[string]string{
		"L00000": business.ReasonOpenApplication, "L00989": returns.CodeInconsistent, "L00990": returns.CodeInconsistent,
		"L01004": "", "L05000": "", "L19999": returns.CodeInconsistent, "L07000": business.ReasonFinalSale,
		"L00001": business.ReasonNotDelivered, "L00002": business.ReasonReturnWindowClosed, "L00003": business.ReasonFinalSale, "L00004": "",
	} {
		if got := want[indexOf(want, id)].Returnable; got != code {
			t.Errorf("the old rule: %s %q, want %q", id, got, code)
		}
	}

	var got []returns.OrderLine
	err := svc.EachOrder(b.ctx, user, func(l returns.OrderLine) error {
		got = append(got, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("EachOrder gave %d orders, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] && !sameLine(got[i], want[i]) {
			t.Fatalf("order %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	list, err := svc.ListOrders(b.ctx, user)
	if err != nil || len(list) != len(want) {
		t.Fatalf("ListOrders: %d orders, %v; want %d", len(list), err, len(want))
	}

	// fn's error ends the listing at once and is returned.
	stop := errors.New("stop")
	calls := 0
	err = svc.EachOrder(b.ctx, user, func(returns.OrderLine) error {
		calls++
		if calls == business.OrdersPageSize+3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != business.OrdersPageSize+3 {
		t.Fatalf("EachOrder after fn's error: %v, %d calls; want stop after %d", err, calls, business.OrdersPageSize+3)
	}
}

// sameLine compares two lines with their delivery times by value.
func sameLine(a, b returns.OrderLine) bool {
	if (a.DeliveredAt == nil) != (b.DeliveredAt == nil) || (a.DeliveredAt != nil && !a.DeliveredAt.Equal(*b.DeliveredAt)) {
		return false
	}
	a.DeliveredAt, b.DeliveredAt = nil, nil
	return a == b
}

// indexOf returns the index of order id in lines, or -1.
func indexOf(lines []returns.OrderLine, id string) int {
	for i, l := range lines {
		if l.ID == id {
			return i
		}
	}
	return -1
}

// oldOrderList is orders list as it was before it streamed: every order
// of user by order id, each with Store.Eligibility at now (one query each), and
// inconsistent when that says returnable and a task of the order (not a
// batch) is one show refuses as inconsistent.
func oldOrderList(ctx context.Context, tb testing.TB, svc *returns.Service, user string, now time.Time) []returns.OrderLine {
	tb.Helper()
	rows, err := svc.Desk().DB().QueryContext(ctx, `SELECT order_id FROM orders WHERE user = ? ORDER BY order_id`, user)
	if err != nil {
		tb.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	tasks, err := svc.Runs().ListTasks(ctx, user, "")
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]returns.OrderLine, 0, len(ids))
	for _, id := range ids {
		o, err := svc.Desk().Order(ctx, id, user)
		if err != nil {
			tb.Fatal(err)
		}
		code, err := svc.Desk().Eligibility(ctx, o, now)
		if err != nil {
			tb.Fatal(err)
		}
		if code == "" {
			for _, task := range tasks {
				if task.OrderID != id {
					continue
				}
				if _, err := svc.Show(ctx, task.ID, user); errors.Is(err, returns.ErrInconsistent) {
					code = returns.CodeInconsistent
					break
				}
			}
		}
		out = append(out, returns.OrderLine{Order: o, Returnable: code})
	}
	return out
}
