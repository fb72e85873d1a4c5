package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"assistant/internal/sqlstore"
)

// Eligibility reason codes, returned by Store.Eligibility. They are stable
// strings meant for JSON and tests.
const (
	// ReasonNotDelivered: delivered_at is NULL, or later than the time asked about.
	ReasonNotDelivered = "not_delivered"
	// ReasonReturnWindowClosed: delivered more than ReturnWindow ago.
	ReasonReturnWindowClosed = "return_window_closed"
	// ReasonFinalSale: the item was sold as final sale.
	ReasonFinalSale = "final_sale"
	// ReasonOpenApplication: an application for the order is still pending review.
	ReasonOpenApplication = "open_application"
)

// Order is one purchase a user may want to return.
type Order struct {
	ID          string     `json:"order_id"`
	User        string     `json:"user"`
	Item        string     `json:"item"`
	DeliveredAt *time.Time `json:"delivered_at"` // nil: not delivered yet; UTC
	FinalSale   bool       `json:"final_sale"`
	// Teaching marks an order of the teaching file (testdata/orders.csv),
	// not of a shop's export.
	Teaching bool `json:"teaching"`
}

// Order returns the order orderID of user. It returns ErrNotFound when the
// order is unknown or belongs to another user, so that the existence of other
// users' orders is never revealed (docs/cli.md "Exit codes": 4).
//
// Inside InTx an order found once is kept for the rest of the transaction:
// it holds the write lock, so no other process (an import that updates the
// order, say) can change it meanwhile, and a batch chunk reads the same
// orders again for every row.
func (s *Store) Order(ctx context.Context, orderID, user string) (Order, error) {
	o, err := s.orderIn(ctx, s.h.Q(), orderID, user)
	if err != nil {
		return Order{}, fmt.Errorf("order %s: %w", orderID, err)
	}
	return o, nil
}

// orderMemo keeps the orders read inside one InTx transaction, and
// whether they have an open application; a nil *orderMemo (outside InTx)
// keeps nothing.
type orderMemo struct {
	mu   sync.Mutex
	m    map[[2]string]Order // (order id, user) → order
	open map[[2]string]bool  // (order id, user) → a pending application exists
}

// getOpen returns whether the order has a pending application, ok false
// when not known.
func (m *orderMemo) getOpen(orderID, user string) (open, ok bool) {
	if m == nil {
		return false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	open, ok = m.open[[2]string{orderID, user}]
	return open, ok
}

// forgetOpen drops what is known of the order's applications (one was
// just made).
func (m *orderMemo) forgetOpen(orderID, user string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.open, [2]string{orderID, user})
}

// PreloadOrders reads, inside InTx, user's orders of orderIDs and which of
// them have a pending application, in two statements, and keeps them for
// the rest of the transaction, so that the Order and Eligibility of each
// row of a batch chunk read nothing (a round trip each on PostgreSQL).
// The transaction holds the write lock, so what is read stays true until
// the transaction itself makes an application (SubmitTx forgets that
// order's). An unknown order is not kept: Order reads it again. Outside
// InTx it does nothing.
func (s *Store) PreloadOrders(ctx context.Context, user string, orderIDs []string) error {
	if s.orders == nil || len(orderIDs) == 0 {
		return nil
	}
	args := make([]any, 0, 2+len(orderIDs))
	args = append(args, user, ReviewPending)
	for _, id := range orderIDs {
		args = append(args, id)
	}
	rows, err := s.h.Q().QueryContext(ctx, s.q.ordersOf(len(orderIDs)), append([]any{user}, args[2:]...)...)
	if err != nil {
		return fmt.Errorf("orders of %s: %w", user, err)
	}
	var found []Order
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("orders of %s: %w", user, err)
		}
		found = append(found, o)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("orders of %s: %w", user, err)
	}
	rows, err = s.h.Q().QueryContext(ctx, s.q.openApplicationsOf(len(orderIDs)), args...)
	if err != nil {
		return fmt.Errorf("open applications of %s: %w", user, err)
	}
	open := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("open applications of %s: %w", user, err)
		}
		open[id] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("open applications of %s: %w", user, err)
	}
	m := s.orders
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.open == nil {
		m.open = map[[2]string]bool{}
	}
	for _, o := range found {
		m.m[[2]string{o.ID, user}] = o
		m.open[[2]string{o.ID, user}] = open[o.ID]
	}
	return nil
}

func (m *orderMemo) get(orderID, user string) (Order, bool) {
	if m == nil {
		return Order{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.m[[2]string{orderID, user}]
	return o, ok
}

func (m *orderMemo) put(o Order, user string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[[2]string{o.ID, user}] = o
}

// scanOrder reads one row of an order's columns (queries).
func scanOrder(sc scanner) (Order, error) {
	var (
		o         Order
		delivered sql.NullString
	)
	if err := sc.Scan(&o.ID, &o.User, &o.Item, &delivered, &o.FinalSale, &o.Teaching); err != nil {
		return Order{}, err
	}
	if delivered.Valid {
		t, err := parseTime(delivered.String)
		if err != nil {
			return Order{}, err
		}
		o.DeliveredAt = &t
	}
	return o, nil
}

// Eligibility returns "" when order o may be returned at now, else the first
// reason code that applies, checked in this order: ReasonNotDelivered,
// ReasonReturnWindowClosed (now − delivered_at > ReturnWindow),
// ReasonFinalSale, ReasonOpenApplication (an application for o, of its
// owner, with review_status "pending" exists, whichever task made it). o
// is usually the result of Store.Order; only the open-application rule
// reads the file. It is the one rule of returnability: start, submit,
// orders list and an import's report (not_returnable_now) all use it.
func (s *Store) Eligibility(ctx context.Context, o Order, now time.Time) (string, error) {
	return s.eligibilityTx(ctx, s.h.Q(), o, now)
}

// eligibility is Eligibility on q, a Querier of the database of sq: the
// pool, or a transaction that must see the same file state as the write
// it guards (SubmitTx).
func eligibility(ctx context.Context, q queryer, sq *queries, o Order, now time.Time) (string, error) {
	if code := orderRule(o, now); code != "" {
		return code, nil
	}
	var open bool
	err := q.QueryRowContext(ctx, sq.openApplication, o.User, o.ID, ReviewPending).Scan(&open)
	if err != nil {
		return "", fmt.Errorf("eligibility of order %s: %w", o.ID, err)
	}
	if open {
		return ReasonOpenApplication, nil
	}
	return "", nil
}

// eligibilityTx is eligibility on tx (the pool, or the caller's
// transaction), with whether o has a pending application answered by
// PreloadOrders' rows when they hold o.
func (s *Store) eligibilityTx(ctx context.Context, tx queryer, o Order, now time.Time) (string, error) {
	if code := orderRule(o, now); code != "" {
		return code, nil
	}
	if open, ok := s.orders.getOpen(o.ID, o.User); ok {
		if open {
			return ReasonOpenApplication, nil
		}
		return "", nil
	}
	return eligibility(ctx, tx, s.q, o, now)
}

// EligibilityOf is Eligibility of o at now judged from apps, o's
// applications as OrderApplications read them, instead of a read of its
// own: a report that lists the applications and says whether the order
// can be returned then tells one state, whatever was submitted between
// two reads.
func EligibilityOf(o Order, apps []OrderApplication, now time.Time) string {
	if code := orderRule(o, now); code != "" {
		return code
	}
	for _, a := range apps {
		if a.User == o.User && a.OrderID == o.ID && a.ReviewStatus == ReviewPending {
			return ReasonOpenApplication
		}
	}
	return ""
}

// orderRule returns the first rule of Eligibility that the order itself
// breaks at now (not delivered, window closed, final sale), or "": the
// rules that need no other row.
func orderRule(o Order, now time.Time) string {
	switch {
	case o.DeliveredAt == nil || o.DeliveredAt.After(now):
		return ReasonNotDelivered
	case now.Sub(*o.DeliveredAt) > ReturnWindow:
		return ReasonReturnWindowClosed
	case o.FinalSale:
		return ReasonFinalSale
	}
	return ""
}

// IneligibleError reports a Submit refused because the draft's order may no
// longer be returned: the facts checked when the draft was prepared changed
// while it waited for approval (its return window closed, say). Code is the
// Eligibility reason code. It matches ErrIneligible, and ErrOpenApplication
// when Code is ReasonOpenApplication.
type IneligibleError struct {
	Order string
	Code  string
}

// Error implements the error interface for *IneligibleError.
func (e *IneligibleError) Error() string {
	return fmt.Sprintf("order %s may no longer be returned (%s)", e.Order, e.Code)
}

// Is makes errors.Is match ErrIneligible, and ErrOpenApplication for an
// open application.
func (e *IneligibleError) Is(target error) bool {
	return target == ErrIneligible || (target == ErrOpenApplication && e.Code == ReasonOpenApplication)
}

// orderIn reads the order id of user on q, the pool or the caller's
// transaction (an order is identified by its owner and its id: migration
// 0008): inside InTx from the orders kept for the transaction when it is
// among them, and kept once read. No such order is ErrNotFound.
func (s *Store) orderIn(ctx context.Context, q sqlstore.Querier, id, user string) (Order, error) {
	if o, ok := s.orders.get(id, user); ok {
		return o, nil
	}
	o, err := scanOrder(q.QueryRowContext(ctx, s.q.order, user, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, ErrNotFound
	}
	if err != nil {
		return Order{}, err
	}
	s.orders.put(o, user)
	return o, nil
}
