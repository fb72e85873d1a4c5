package business

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestOrder(t *testing.T) {
	t.Parallel()
	forStores(t, testOrder)
}

func testOrder(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)

	tests := []struct {
		name, order, user string
		wantErr           error
		wantItem          string
	}{
		{"OwnOrder", "A3003", "demo-user", nil, "运动鞋 42码"},
		{"OtherUsersOrderLooksUnknown", "B4001", "demo-user", ErrNotFound, ""},
		{"UnknownOrder", "Z9999", "demo-user", ErrNotFound, ""},
		{"OtherUserOwnsIt", "B4002", "other-user", nil, "Yoga mat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := s.Order(ctx, tt.order, tt.user)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (o.Item != tt.wantItem || o.User != tt.user || o.ID != tt.order) {
				t.Errorf("order = %+v", o)
			}
		})
	}

	t.Run("NotDeliveredHasNilTime", func(t *testing.T) {
		o, err := s.Order(ctx, "A3006", "demo-user")
		if err != nil {
			t.Fatal(err)
		}
		if o.DeliveredAt != nil {
			t.Errorf("DeliveredAt = %v, want nil", o.DeliveredAt)
		}
	})
}

func TestEligibility(t *testing.T) {
	t.Parallel()
	forStores(t, testEligibility)
}

func testEligibility(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	day := 24 * time.Hour

	// The teaching orders at the moment the file was created.
	seeded := []struct {
		order, user, want string
	}{
		{"A3001", "demo-user", ""},
		{"A3002", "demo-user", ""},
		{"A3003", "demo-user", ""},
		{"A3004", "demo-user", ""},
		{"A3005", "demo-user", ReasonReturnWindowClosed},
		{"A3006", "demo-user", ReasonNotDelivered},
		{"A3007", "demo-user", ReasonFinalSale},
		{"A3008", "demo-user", ""},
		{"A3009", "demo-user", ReasonOpenApplication},
		{"A3010", "demo-user", ReasonReturnWindowClosed},
		{"B4001", "other-user", ""},
		{"B4002", "other-user", ""},
	}
	for _, tt := range seeded {
		t.Run("Seed"+tt.order, func(t *testing.T) {
			o, err := s.Order(ctx, tt.order, tt.user)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Eligibility(ctx, o, t0)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Eligibility(%s) = %q, want %q", tt.order, got, tt.want)
			}
		})
	}

	// Each rule at its edges, on orders built in memory (IDs not in the file,
	// so only the open-application rule reads it and finds nothing).
	at := func(d time.Duration) *time.Time { v := t0.Add(-d); return &v }
	edges := []struct {
		name string
		o    Order
		want string
	}{
		{"DeliveredJustNow", Order{ID: "X1", DeliveredAt: at(0)}, ""},
		{"ExactlyWindowAgo", Order{ID: "X2", DeliveredAt: at(ReturnWindow)}, ""},
		{"OneNanosecondPastWindow", Order{ID: "X3", DeliveredAt: at(ReturnWindow + time.Nanosecond)}, ReasonReturnWindowClosed},
		{"DeliveredInTheFuture", Order{ID: "X4", DeliveredAt: at(-day)}, ReasonNotDelivered},
		{"NotDelivered", Order{ID: "X5"}, ReasonNotDelivered},
		{"NotDeliveredBeatsFinalSale", Order{ID: "X6", FinalSale: true}, ReasonNotDelivered},
		{"WindowBeatsFinalSale", Order{ID: "X7", DeliveredAt: at(40 * day), FinalSale: true}, ReasonReturnWindowClosed},
		{"FinalSale", Order{ID: "X8", DeliveredAt: at(day), FinalSale: true}, ReasonFinalSale},
	}
	for _, tt := range edges {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Eligibility(ctx, tt.o, t0)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Eligibility = %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("SubmittedOrderHasOpenApplication", func(t *testing.T) {
		o, err := s.Order(ctx, "A3004", "demo-user")
		if err != nil {
			t.Fatal(err)
		}
		d := mustPrepare(t, s, "return-a3004", "A3004", time.Minute, t0)
		if got, _ := s.Eligibility(ctx, o, t0); got != "" {
			t.Fatalf("a draft alone makes the order %q, want eligible", got)
		}
		if _, _, err := s.Submit(ctx, d.ID, "demo-user", t0); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Eligibility(ctx, o, t0); got != ReasonOpenApplication {
			t.Errorf("after submit: %q, want %q", got, ReasonOpenApplication)
		}
		mustExec(t, s, "UPDATE applications SET review_status = 'approved' WHERE draft_id = '"+d.ID+"'")
		if got, _ := s.Eligibility(ctx, o, t0); got != "" {
			t.Errorf("after review: %q, want eligible", got)
		}
	})
}
