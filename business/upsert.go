package business

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"
	"time"

	"assistant/internal/sqlitedb"
)

// Actions of an OrderChange.
const (
	// ActionAdded: the order was not stored.
	ActionAdded = "added"
	// ActionUpdated: the stored order had another item, delivery or final
	// sale flag.
	ActionUpdated = "updated"
	// ActionReplacedTeaching: a teaching order that no task, draft or
	// batch row uses gave way to the shop's order of the same id.
	ActionReplacedTeaching = "replaced_teaching"
	// ActionRefused: the stored order has another owner; the owner of an
	// order never changes (the import is refused, exit 3).
	ActionRefused = "refused"
)

// importBatch is how many orders ImportOrdersFile reads and writes with
// one statement each: large enough that a million rows take few
// statements, small enough for SQLite's limit on parameters (32,766).
const importBatch = 200

// importQueue is how many batches may wait between the goroutine that
// reads the file and the one that writes (ImportOrdersFile).
const importQueue = 4

// ImportResult is the report of an import (docs/orders.md "Report"). The
// counts are of orders; a line-item export has more rows than orders.
type ImportResult struct {
	DryRun    bool `json:"dry_run"` // nothing was written
	Rows      int  `json:"rows"`    // data rows of the file
	Orders    int  `json:"orders"`  // orders of the file (its rows merged)
	Added     int  `json:"added"`
	Updated   int  `json:"updated"` // replaced teaching orders included
	Unchanged int  `json:"unchanged"`
	Refused   int  `json:"refused"` // orders whose owner would change
	// TeachingReplaced counts the teaching orders replaced (of Updated).
	TeachingReplaced int `json:"teaching_replaced"`
	// InFlight counts the updated orders a task in flight (running,
	// waiting or interrupted) is for: its next submit checks the order's
	// eligibility again.
	InFlight int `json:"in_flight"`
	// Changes lists the first MaxReportedChanges orders that were not
	// unchanged, in file order (refused ones and those with tasks in
	// flight first); MoreChanges counts the others.
	Changes     []OrderChange `json:"changes"`
	MoreChanges int           `json:"more_changes"`
}

// OrderChange is one order an import adds, updates or refuses.
type OrderChange struct {
	Line    int    `json:"line"` // first line of the order in the file
	OrderID string `json:"order_id"`
	Action  string `json:"action"` // Action* constants
	// Fields are the columns that change (item, delivered_at, final_sale);
	// [] for an added or refused order.
	Fields []string `json:"fields"`
	// Tasks are the ids of tasks in flight for the order (at most ten).
	Tasks []string `json:"tasks_in_flight"`
	// NotReturnableNow is the reason code start would give for the order
	// once changed ("" when it can be returned), for an updated order.
	NotReturnableNow string `json:"not_returnable_now"`
}

// OwnerError refuses an import that would give orders another owner: the
// owner of an order never changes. Lines names the first of them. It
// matches ErrConflict. It does not say who owns an order.
type OwnerError struct {
	Lines []string
	More  int
}

// Error implements the error interface for *OwnerError.
func (e *OwnerError) Error() string {
	more := ""
	if e.More > 0 {
		more = fmt.Sprintf(" (and %d more)", e.More)
	}
	return fmt.Sprintf("orders file would change the owner of stored orders, which never changes; none was imported: %s%s", strings.Join(e.Lines, "; "), more)
}

// Is makes errors.Is match ErrConflict.
func (e *OwnerError) Is(target error) bool { return target == ErrConflict }

// ImportOptions says how ImportOrdersFile writes.
type ImportOptions struct {
	// DryRun reports what the import would do and writes nothing.
	DryRun bool
}

// ImportOrders parses r (ParseOrders with opts) and imports it
// (ImportOrdersFile).
func (s *Store) ImportOrders(ctx context.Context, r io.Reader, opts ParseOptions) (ImportResult, error) {
	f, err := ParseOrders(ctx, r, opts)
	if err != nil {
		return ImportResult{}, err
	}
	defer f.Close()
	return s.ImportOrdersFile(ctx, f, ImportOptions{})
}

// ImportOrdersFile writes the orders of f, in one transaction, as an
// upsert with these rules (docs/orders.md "Updates"): an order not stored
// is added; a stored one with another item, delivery or final sale flag is
// updated (a task in flight for it is reported: its next submit checks
// eligibility again); an equal one is unchanged; a teaching order that no
// task, draft or batch row uses is replaced, whoever owned it; a stored
// order of another owner is refused. Any refused order refuses the whole
// file with an *OwnerError (ErrConflict) and nothing is written. With
// opts.DryRun nothing is written either and the report says what would
// be. The file is read a second time, in batches of importBatch orders;
// ctx ends it at the next batch and nothing is written (its error).
func (s *Store) ImportOrdersFile(ctx context.Context, f *OrdersFile, opts ImportOptions) (ImportResult, error) {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return ImportResult{}, fmt.Errorf("import orders: %w", err)
	}
	defer tx.Rollback()
	u := &upsert{ctx: ctx, q: tx, now: s.now, write: !opts.DryRun,
		res: ImportResult{DryRun: opts.DryRun, Changes: []OrderChange{}}}
	rows, orders, err := u.run(f)
	if err != nil {
		return ImportResult{}, fmt.Errorf("import orders: %w", err)
	}
	u.res.Rows, u.res.Orders = rows, orders
	if u.res.Refused > 0 && !opts.DryRun {
		return u.res, &OwnerError{Lines: u.refused.lines, More: u.refused.more}
	}
	if opts.DryRun {
		return u.res, nil
	}
	if err := tx.Commit(); err != nil {
		return ImportResult{}, fmt.Errorf("import orders: %w", err)
	}
	return u.res, nil
}

// upsert is one ImportOrdersFile: the batch of orders read but not yet
// written, and the report so far.
type upsert struct {
	ctx     context.Context
	q       sqlitedb.Querier
	now     timeNow
	write   bool // false: a dry run, or an owner refused (nothing will be committed)
	batch   []*group
	res     ImportResult
	refused badLines
}

// run reads the file (f.scan) in a goroutine of its own and writes its
// orders here, batch by batch, so that reading the next batch and writing
// this one overlap; at most importQueue batches wait between the two, so
// memory does not grow with the file. It returns the file's rows and
// orders, or the first error of either side (the other stops).
func (u *upsert) run(f *OrdersFile) (rows, orders int, err error) {
	ctx, cancel := context.WithCancel(u.ctx)
	defer cancel()
	batches := make(chan []*group, importQueue)
	var scanErr error
	go func() {
		defer close(batches)
		batch := make([]*group, 0, importBatch)
		send := func() error {
			select {
			case batches <- batch:
				batch = make([]*group, 0, importBatch)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		rows, orders, scanErr = f.scan(ctx, func(g *group) error {
			if batch = append(batch, g); len(batch) < importBatch {
				return nil
			}
			return send()
		})
		if scanErr == nil && len(batch) > 0 {
			scanErr = send()
		}
	}()
	for b := range batches {
		if err == nil {
			u.batch = b
			if err = u.flush(); err != nil {
				cancel() // the reader stops; the loop drains what it sent
			}
		}
	}
	if err != nil {
		return 0, 0, err
	}
	if scanErr != nil {
		return 0, 0, scanErr
	}
	return rows, orders, nil
}

// flush reads the stored orders of the batch with one statement, decides
// each, and writes the new ones with one statement and each update with
// one.
func (u *upsert) flush() error {
	if len(u.batch) == 0 {
		return nil
	}
	if err := u.ctx.Err(); err != nil {
		return err
	}
	stored, err := u.stored()
	if err != nil {
		return err
	}
	var add []Order
	for _, g := range u.batch {
		o := g.order
		old, ok := stored[o.ID]
		switch {
		case !ok:
			u.res.Added++
			add = append(add, o)
			u.note(OrderChange{Line: g.line, OrderID: o.ID, Action: ActionAdded}, false)
		case old.Teaching:
			used, err := u.used(o.ID)
			if err != nil {
				return err
			}
			if !used {
				if err := u.replace(g, old, ActionReplacedTeaching); err != nil {
					return err
				}
				continue
			}
			if old.User != o.User {
				u.refuse(g, " (a teaching order that a task uses)")
				continue
			}
			if err := u.replace(g, old, ActionUpdated); err != nil {
				return err
			}
		case old.User != o.User:
			u.refuse(g, "")
		case sameOrder(old, o):
			u.res.Unchanged++
		default:
			if err := u.replace(g, old, ActionUpdated); err != nil {
				return err
			}
		}
	}
	if err := u.insert(add); err != nil {
		return err
	}
	u.batch = u.batch[:0]
	return nil
}

// refuse records an order whose owner would change. The message names
// neither the owner nor anything else of the stored order.
func (u *upsert) refuse(g *group, note string) {
	u.res.Refused++
	u.write = false
	u.refused.add(g.line, fmt.Errorf("order %s is stored with another owner%s; the owner of an order never changes", g.order.ID, note))
	u.note(OrderChange{Line: g.line, OrderID: g.order.ID, Action: ActionRefused}, true)
}

// note adds a change to the report: the first MaxReportedChanges, where
// an important one (refused, or with tasks in flight) takes the place of
// the last plain one once the list is full.
func (u *upsert) note(c OrderChange, important bool) {
	if c.Fields == nil {
		c.Fields = []string{}
	}
	if c.Tasks == nil {
		c.Tasks = []string{}
	}
	if len(u.res.Changes) < MaxReportedChanges {
		u.res.Changes = append(u.res.Changes, c)
		return
	}
	u.res.MoreChanges++
	if !important {
		return
	}
	for i := len(u.res.Changes) - 1; i >= 0; i-- {
		old := u.res.Changes[i]
		if old.Action != ActionRefused && len(old.Tasks) == 0 {
			copy(u.res.Changes[i:], u.res.Changes[i+1:])
			u.res.Changes[len(u.res.Changes)-1] = c
			return
		}
	}
}

// replace updates a stored order to the file's (action: updated or
// replaced_teaching) and reports its tasks in flight.
func (u *upsert) replace(g *group, old Order, action string) error {
	o := g.order
	c := OrderChange{Line: g.line, OrderID: o.ID, Action: action, Fields: changedFields(old, o)}
	u.res.Updated++
	if action == ActionReplacedTeaching {
		u.res.TeachingReplaced++
		if old.User != o.User {
			c.Fields = append([]string{"user"}, c.Fields...)
		}
	}
	tasks, err := u.inFlight(o.ID)
	if err != nil {
		return err
	}
	c.Tasks = tasks
	c.NotReturnableNow = orderRule(o, u.now())
	if len(tasks) > 0 {
		u.res.InFlight++
	}
	u.note(c, len(tasks) > 0)
	if !u.write {
		return nil
	}
	_, err = u.q.ExecContext(u.ctx,
		`UPDATE orders SET user = ?, item = ?, delivered_at = ?, final_sale = ?, teaching = 0 WHERE order_id = ? AND user = ?`,
		o.User, o.Item, deliveredArg(o), o.FinalSale, o.ID, old.User)
	if err != nil {
		return fmt.Errorf("update order %s: %w", o.ID, err)
	}
	return nil
}

// changedFields names the columns in which o differs from old.
func changedFields(old, o Order) []string {
	var f []string
	if old.Item != o.Item {
		f = append(f, "item")
	}
	if !sameTime(old.DeliveredAt, o.DeliveredAt) {
		f = append(f, "delivered_at")
	}
	if old.FinalSale != o.FinalSale {
		f = append(f, "final_sale")
	}
	return f
}

// stored reads the stored orders of the batch, by id, with one statement
// (the id list padded with "", which no order has, so one prepared
// statement serves every batch).
func (u *upsert) stored() (map[string]Order, error) {
	args := make([]any, importBatch)
	for i := range args {
		args[i] = ""
		if i < len(u.batch) {
			args[i] = u.batch[i].order.ID
		}
	}
	rows, err := u.q.QueryContext(u.ctx, `SELECT `+orderColumns+` FROM orders WHERE order_id IN (`+placeholders(importBatch, 1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read stored orders: %w", err)
	}
	defer rows.Close()
	out := make(map[string]Order, len(u.batch))
	for rows.Next() {
		o, err := scanOrder(rows)
		if err != nil {
			return nil, fmt.Errorf("read stored orders: %w", err)
		}
		out[o.ID] = o
	}
	return out, rows.Err()
}

// insert adds orders with one statement (a full batch's is prepared once).
func (u *upsert) insert(orders []Order) error {
	if !u.write || len(orders) == 0 {
		return nil
	}
	args := make([]any, 0, 5*len(orders))
	for _, o := range orders {
		args = append(args, o.ID, o.User, o.Item, deliveredArg(o), o.FinalSale)
	}
	_, err := u.q.ExecContext(u.ctx,
		`INSERT INTO orders (order_id, user, item, delivered_at, final_sale) VALUES `+placeholders(len(orders), 5), args...)
	if err != nil {
		return fmt.Errorf("add orders: %w", err)
	}
	return nil
}

// inFlight returns the tasks in flight for an order (at most ten).
func (u *upsert) inFlight(orderID string) ([]string, error) {
	rows, err := u.q.QueryContext(u.ctx,
		`SELECT task_id FROM tasks WHERE order_id = ? AND status IN ('running', 'waiting', 'interrupted') ORDER BY task_id LIMIT 10`, orderID)
	if err != nil {
		return nil, fmt.Errorf("tasks of order %s: %w", orderID, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// used reports whether any task, draft or batch row names the order.
func (u *upsert) used(orderID string) (bool, error) {
	var used bool
	err := u.q.QueryRowContext(u.ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE order_id = ?)
		OR EXISTS (SELECT 1 FROM drafts WHERE order_id = ?)
		OR EXISTS (SELECT 1 FROM batch_rows WHERE order_id = ?)`, orderID, orderID, orderID).Scan(&used)
	if err != nil {
		return false, fmt.Errorf("uses of order %s: %w", orderID, err)
	}
	return used, nil
}

// placeholders is n groups of width '?' each: "(?, ?), (?, ?)" for
// width 2, "?, ?" for width 1.
func placeholders(n, width int) string {
	one := strings.TrimSuffix(strings.Repeat("?, ", width), ", ")
	if width > 1 {
		one = "(" + one + ")"
	}
	return strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

// deliveredArg is an order's delivered_at as stored (NULL: not delivered).
func deliveredArg(o Order) sql.NullString {
	if o.DeliveredAt == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(*o.DeliveredAt), Valid: true}
}

// sameOrder reports whether a stored order equals the file's: same owner,
// item, delivery and final sale flag, and not a teaching order.
func sameOrder(a, b Order) bool {
	return a.ID == b.ID && a.User == b.User && a.Item == b.Item && a.FinalSale == b.FinalSale &&
		a.Teaching == b.Teaching && sameTime(a.DeliveredAt, b.DeliveredAt)
}

// timeNow is a clock.
type timeNow = func() time.Time
