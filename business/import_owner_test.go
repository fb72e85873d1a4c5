package business

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// importAs parses file with opts and imports it into s.
func importAs(tb testing.TB, s *Store, file string, opts ParseOptions, dry bool) (ImportResult, error) {
	tb.Helper()
	ctx := context.Background()
	f, err := ParseOrders(ctx, strings.NewReader(file), opts)
	if err != nil {
		return ImportResult{}, err
	}
	defer f.Close()
	return s.ImportOrdersFile(ctx, f, ImportOptions{DryRun: dry})
}

// An import without --operator reads and writes --user's orders only:
// whether the id is unknown, another user's order (the shop's or their
// own), or another user's teaching order (unused or in use), the report,
// its counts and the error are the same, the import adds the order as the
// importing user's own, and the other user's order keeps every field.
// The shop's later import of the id for its owner is not refused.
func TestImportOrdersNoOracle(t *testing.T) {
	t.Parallel()
	const h = "order_id,user,item,delivered_at,final_sale\n"
	ctx := context.Background()
	other := ParseOptions{User: "other-user"}
	operator := ParseOptions{Operator: true}
	tests := []struct {
		name  string
		id    string
		setup func(t *testing.T, s *Store) // makes id exist (or not) for demo-user
	}{
		{name: "Unknown", id: "C63"},
		{name: "ShopOrderOfAnother", id: "C63", setup: func(t *testing.T, s *Store) {
			if _, err := importAs(t, s, h+"C63,demo-user,Mug,2026-11-01T00:00:00Z,false\n", operator, false); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "OwnOrderOfAnother", id: "C63", setup: func(t *testing.T, s *Store) {
			if _, err := importAs(t, s, h+"C63,demo-user,Mug,2026-11-01T00:00:00Z,false\n", ParseOptions{User: "demo-user"}, false); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "TeachingOrderOfAnother", id: "A3001"},
		{name: "TeachingOrderInUseOfAnother", id: "A3001", setup: func(t *testing.T, s *Store) {
			mustPrepare(t, s, "t2", "A3001", time.Hour, t0)
		}},
	}
	var want []string // the first case's answers; every case must give the same
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeeded(t)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			before, beforeErr := s.Order(ctx, tt.id, "demo-user")
			file := h + tt.id + ",other-user,Claimed,2026-11-02T00:00:00Z,false\n"
			var got []string
			for _, dry := range []bool{true, false} {
				res, err := importAs(t, s, file, other, dry)
				if err != nil {
					t.Fatalf("dry run %v: %v", dry, err)
				}
				b, _ := json.Marshal(res)
				got = append(got, strings.ReplaceAll(string(b), tt.id, "ID"))
			}
			if want == nil {
				want = got
			} else if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("reports\n%s\nwant the same as for an unknown id\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !strings.Contains(got[1], `"added":1`) {
				t.Fatalf("report %s, want the order added", got[1])
			}
			after, afterErr := s.Order(ctx, tt.id, "demo-user")
			if (afterErr == nil) != (beforeErr == nil) || !sameOrder(before, after) {
				t.Fatalf("demo-user's %s: %+v, %v before; %+v, %v after", tt.id, before, beforeErr, after, afterErr)
			}
			mine, err := s.Order(ctx, tt.id, "other-user")
			if err != nil || mine.Item != "Claimed" {
				t.Fatalf("other-user's %s: %+v, %v; want its own order", tt.id, mine, err)
			}
			// The shop's import of the id for demo-user is not blocked by
			// other-user's own order.
			if tt.id == "C63" {
				if _, err := importAs(t, s, h+"C63,demo-user,Mug,2026-11-01T00:00:00Z,false\n", operator, false); err != nil {
					t.Fatalf("the shop's import after other-user's: %v", err)
				}
			}
		})
	}
}

// The shop's order ids stay unique: an operator import that gives a
// shop order to another customer is refused whole (exit 3), while a
// user's own order of the same id does not count; an operator import of a
// user's own order makes it the shop's.
func TestImportOrdersShopIDs(t *testing.T) {
	t.Parallel()
	forStores(t, testImportOrdersShopIDs)
}

func testImportOrdersShopIDs(t *testing.T, kind storeKind) {
	const h = "order_id,user,item,delivered_at,final_sale\n"
	ctx := context.Background()
	operator := ParseOptions{Operator: true}
	s, _ := newSeededOn(t, kind)
	if _, err := importAs(t, s, h+"C70,bob,Kettle,,false\n", ParseOptions{User: "bob"}, false); err != nil {
		t.Fatal(err)
	}
	res, err := importAs(t, s, h+"C70,alice,Kettle,,false\nC71,bob,Mug,,false\n", operator, false)
	if err != nil || res.Added != 2 {
		t.Fatalf("operator import beside bob's own C70: %+v, %v; want 2 added", res, err)
	}
	_, err = importAs(t, s, h+"C70,bob,Kettle,,false\n", operator, false)
	var oe *OwnerError
	if !errors.As(err, &oe) || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "line 2: order C70 is stored with another owner") {
		t.Fatalf("err = %v, want an owner change refused", err)
	}
	res, err = importAs(t, s, h+"C72,carol,Pen,,false\n", ParseOptions{User: "carol"}, false)
	if err != nil || res.Added != 1 {
		t.Fatalf("carol's own C72: %+v, %v", res, err)
	}
	res, err = importAs(t, s, h+"C72,carol,Pen,,false\n", operator, false)
	if err != nil || res.Updated != 1 || len(res.Changes) != 1 || strings.Join(res.Changes[0].Fields, ",") != "shop" {
		t.Fatalf("the shop's import of carol's own C72: %+v, %v; want updated: shop", res, err)
	}
	_, err = importAs(t, s, h+"C72,dave,Pen,,false\n", operator, false)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want C72 now the shop's", err)
	}
	// carol's own import may not change the shop's order (orders.md "Who
	// may import"): refused by line, exit 3, nothing written; the same
	// order again is unchanged.
	_, err = importAs(t, s, h+"C72,carol,Red pen,,false\n", ParseOptions{User: "carol"}, false)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "line 2: order C72 is the shop's order") {
		t.Fatalf("carol's update of the shop's C72: %v, want it refused", err)
	}
	if oe := (*OwnerError)(nil); !errors.As(err, &oe) || !slices.Equal(oe.Needs, []Need{NeedOperator}) || strings.Contains(err.Error(), "--") {
		t.Errorf("carol's refused update: %v, want one that needs the operator option, named in the hint only", err)
	}
	if o, err := s.Order(ctx, "C72", "carol"); err != nil || o.Item != "Pen" {
		t.Fatalf("the shop's C72 after carol's refused import: %+v, %v; want Pen", o, err)
	}
	if res, err = importAs(t, s, h+"C72,carol,Pen,,false\n", ParseOptions{User: "carol"}, false); err != nil || res.Unchanged != 1 {
		t.Fatalf("carol's import of the shop's C72 as it is: %+v, %v; want unchanged", res, err)
	}
	_, err = importAs(t, s, h+"C72,dave,Pen,,false\n", operator, false)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want C72 still the shop's after carol's own import", err)
	}
	if o, err := s.Order(ctx, "C70", "bob"); err != nil || o.Item != "Kettle" {
		t.Fatalf("bob's C70: %+v, %v", o, err)
	}
}

// The import report's not_returnable_now is Eligibility's answer: an
// order with an open application is not returnable now, as orders list
// says.
func TestImportOrdersReturnableAsEligibility(t *testing.T) {
	t.Parallel()
	const h = "order_id,user,item,delivered_at,final_sale\n"
	ctx := context.Background()
	s, _ := newSeeded(t)
	delivered := t0.Add(-48 * time.Hour).Format(time.RFC3339Nano)
	if _, err := importAs(t, s, h+"R3004,demo-user,Headphones,"+delivered+",false\n", ParseOptions{User: "demo-user"}, false); err != nil {
		t.Fatal(err)
	}
	d := mustPrepare(t, s, "t4", "R3004", time.Hour, t0)
	if _, _, err := s.Submit(ctx, d.ID, "demo-user", t0); err != nil {
		t.Fatal(err)
	}
	o, err := s.Order(ctx, "R3004", "demo-user")
	if err != nil {
		t.Fatal(err)
	}
	res, err := importAs(t, s, h+"R3004,demo-user,New headphones,"+delivered+",false\n", ParseOptions{User: "demo-user"}, true)
	if err != nil || len(res.Changes) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	o.Item = "New headphones"
	want, err := s.Eligibility(ctx, o, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Changes[0].NotReturnableNow; got != ReasonOpenApplication || got != want {
		t.Fatalf("not_returnable_now %q, Eligibility %q; want %q from both", got, want, ReasonOpenApplication)
	}
}

// An import of more orders than one write takes (importBatch), added and
// stored ones mixed, on both stores: added orders are written by a plain
// INSERT, the others by the upsert, each in full batches and the rest at
// the end; every order reads back as the file has it, and the counts add
// up. The operator's import again makes the user's own orders the shop's.
func TestImportOrdersManyBatches(t *testing.T) {
	t.Parallel()
	forStores(t, func(t *testing.T, kind storeKind) {
		const h = "order_id,user,item,delivered_at,final_sale\n"
		ctx := context.Background()
		s, _ := newSeededOn(t, kind)
		n := 2*importBatch + 37
		var day1, day2 strings.Builder
		day1.WriteString(h)
		day2.WriteString(h)
		for i := range n {
			if i%3 != 0 { // a third is new on day 2
				fmt.Fprintf(&day1, "M%05d,carol,Item %d,,false\n", i, i)
			}
			switch i % 3 {
			case 0, 1: // new, or changed: delivered and final sale
				fmt.Fprintf(&day2, "M%05d,carol,Item %d,2025-03-%02dT10:00:00Z,true\n", i, i, 1+i%28)
			case 2: // unchanged
				fmt.Fprintf(&day2, "M%05d,carol,Item %d,,false\n", i, i)
			}
		}
		carol := ParseOptions{User: "carol"}
		if res, err := importAs(t, s, day1.String(), carol, false); err != nil || res.Added != n-(n+2)/3 {
			t.Fatalf("day 1: %+v, %v", res.Added, err)
		}
		res, err := importAs(t, s, day2.String(), carol, false)
		if err != nil || res.Added != (n+2)/3 || res.Updated != (n+1)/3 || res.Unchanged != n/3 || res.Orders != n {
			t.Fatalf("day 2: added %d, updated %d, unchanged %d, orders %d, %v", res.Added, res.Updated, res.Unchanged, res.Orders, err)
		}
		for i := range n {
			o, err := s.Order(ctx, fmt.Sprintf("M%05d", i), "carol")
			if err != nil {
				t.Fatal(err)
			}
			delivered := o.DeliveredAt != nil && o.DeliveredAt.Day() == 1+i%28
			if o.Item != fmt.Sprintf("Item %d", i) || delivered != (i%3 != 2) || o.FinalSale != (i%3 != 2) {
				t.Fatalf("order %d = %+v", i, o)
			}
		}
		res, err = importAs(t, s, day2.String(), ParseOptions{Operator: true}, false)
		if err != nil || res.Updated != n || res.Changes[0].Fields[0] != "shop" {
			t.Fatalf("the operator's import: updated %d, %v", res.Updated, err)
		}
		if _, err := importAs(t, s, h+"M00001,dave,Pen,,false\n", ParseOptions{Operator: true}, false); !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v, want M00001 the shop's", err)
		}
		// An operator's new orders of one user are the shop's too.
		if res, err := importAs(t, s, h+"N1,dave,Pen,,false\nN2,dave,Ink,,true\n", ParseOptions{Operator: true}, false); err != nil || res.Added != 2 {
			t.Fatalf("the operator's new orders of dave: %+v, %v", res, err)
		}
		if _, err := importAs(t, s, h+"N2,erin,Ink,,true\n", ParseOptions{Operator: true}, false); !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v, want N2 the shop's", err)
		}
	})
}
