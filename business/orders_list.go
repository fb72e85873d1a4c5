package business

import (
	"context"
	"fmt"
	"time"
)

// OrdersPageSize is how many orders OrdersPage reads at most by default
// (limit ≤ 0), and EachOrderPage per query: a page is held in memory
// while it is used, so the memory of a listing does not grow with the
// number of orders.
const OrdersPageSize = 1000

// EligibleOrder is an order with its Eligibility code at the time asked
// about: "" when it may be returned, else the first reason code that
// applies.
type EligibleOrder struct {
	Order
	Code string
}

// OrdersPage returns up to limit (OrdersPageSize when limit ≤ 0) of
// user's orders whose order id sorts after after ("" for the first
// page), by order id (bytes: SQLite's BINARY, PostgreSQL's COLLATE "C"),
// each with its Eligibility code at now. It is one query on both stores:
// the orders by their primary key (user, order_id) and the
// open-application rule as a correlated EXISTS on applications' index
// (user, order_id, review_status), instead of one Eligibility query per
// order. Only user's orders are read. Errors are the store's, wrapped as
// "list orders: …".
func (s *Store) OrdersPage(ctx context.Context, user, after string, limit int, now time.Time) ([]EligibleOrder, error) {
	if limit <= 0 {
		limit = OrdersPageSize
	}
	rows, err := s.h.Q().QueryContext(ctx, s.q.ordersPage, ReviewPending, user, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	defer rows.Close()
	out := make([]EligibleOrder, 0, min(limit, OrdersPageSize))
	for rows.Next() {
		var open bool
		o, err := scanOrder(openScanner{rows, &open})
		if err != nil {
			return nil, fmt.Errorf("list orders: %w", err)
		}
		// The rule of Eligibility (and eligibility), in its order.
		code := orderRule(o, now)
		if code == "" && open {
			code = ReasonOpenApplication
		}
		out = append(out, EligibleOrder{Order: o, Code: code})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	return out, nil
}

// openScanner scans a row of an order's columns (scanOrder) followed by
// one more column (the open-application flag) into open.
type openScanner struct {
	sc   scanner
	open *bool
}

// Scan implements scanner: dest are scanOrder's destinations.
func (o openScanner) Scan(dest ...any) error {
	return o.sc.Scan(append(dest, o.open)...)
}

// EachOrderPage calls fn with user's orders, each with its Eligibility
// code at now, by order id, a page (OrdersPageSize orders, OrdersPage)
// at a time, until there are no more or fn returns an error, which it
// returns. Each page is read whole and its query closed before fn is
// called, so fn may use the store; the pages are separate reads (keyset:
// each starts after the last order id of the one before), so no read
// stays open for the whole listing, and an import that commits meanwhile
// may be seen by the later pages only. Memory is one page, whatever the
// number of orders. Errors: OrdersPage's, fn's.
func (s *Store) EachOrderPage(ctx context.Context, user string, now time.Time, fn func([]EligibleOrder) error) error {
	after := ""
	for {
		page, err := s.OrdersPage(ctx, user, after, OrdersPageSize, now)
		if err != nil {
			return err
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if len(page) < OrdersPageSize {
			return nil
		}
		after = page[len(page)-1].ID
	}
}
