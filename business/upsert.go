package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"assistant/internal/sqlstore"
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

// importBatch is how many orders ImportOrdersFile reads with one
// statement, and writes with one: large enough that a million rows take
// few statements, small enough for SQLite's limit on parameters (32,766:
// a batch's write takes 6 per order).
const importBatch = 500

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

// OwnerError refuses an import that would change stored orders it may not
// change: give an order another owner (the owner of an order never
// changes), replace a teaching order that a task uses, or change the
// shop's order without --operator. Lines names the first of them. It
// matches ErrConflict. It does not say who owns an order.
type OwnerError struct {
	Lines []string
	More  int
	// Needs are the import's options that would make the refused
	// changes (NeedOperator for the shop's orders); nil when none would.
	Needs []Need
}

// Error implements the error interface for *OwnerError.
func (e *OwnerError) Error() string {
	more := ""
	if e.More > 0 {
		more = fmt.Sprintf(" (and %d more)", e.More)
	}
	return fmt.Sprintf("orders file would change stored orders that this import may not change; nothing was imported: %s%s", strings.Join(e.Lines, "; "), more)
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
// upsert with these rules (docs/orders.md "Updates", "Who may import"). An
// order is identified by its owner and its id. An import reads and writes
// the orders of the users its rows name only: without ParseOptions.Operator
// that is --user alone, so nothing it reports depends on another user's
// orders. For each order of the file (user U, id X): U's order X not
// stored is added; stored with another item, delivery or final sale flag,
// it is updated (a task in flight for it is reported: its next submit
// checks eligibility again); equal, it is unchanged; a teaching order that
// no task, draft or batch row uses is replaced. An operator import also
// keeps the shop's order ids unique: its orders are the shop's, and a shop
// order X of another customer (a teaching order in use included) refuses
// the whole file with an *OwnerError (ErrConflict), nothing written; an
// unused teaching order X of another user gives way. With opts.DryRun
// nothing is written and the report says what would be. The file is read
// a second time, in batches of importBatch orders; ctx ends it at the next
// batch and nothing is written (its error).
func (s *Store) ImportOrdersFile(ctx context.Context, f *OrdersFile, opts ImportOptions) (ImportResult, error) {
	var res ImportResult
	// The transaction commits durably (sqlstore.Handle.Durable: at
	// synchronous=FULL), so that nothing after the commit, such as a Sync
	// waiting for the write lock another import holds, can fail an import
	// that is stored.
	err := s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		u := &upsert{ctx: ctx, tx: tx, q: s.q, now: s.now().UTC(), write: !opts.DryRun, operator: f.opts.Operator, file: f,
			res: ImportResult{DryRun: opts.DryRun, Changes: []OrderChange{}}}
		rows, orders, err := u.run(f)
		if err == nil {
			err = u.writePending(true)
		}
		if err != nil {
			return err
		}
		u.res.Rows, u.res.Orders = rows, orders
		res = u.res
		if u.res.Refused > 0 && !opts.DryRun {
			return &OwnerError{Lines: u.refused.lines, More: u.refused.more, Needs: u.needs}
		}
		if opts.DryRun {
			return sqlstore.ErrNothingWritten
		}
		return nil
	})
	var oe *OwnerError
	if errors.As(err, &oe) {
		return res, err
	}
	if err != nil {
		return ImportResult{}, fmt.Errorf("import orders: %w", endedBy(ctx, err))
	}
	if s.h.Postgres() && !opts.DryRun && res.Added+res.Updated >= analyzeAfter {
		// The import is stored: new statistics are for the planner only,
		// so a failure here (a lock, a cancel) does not fail it.
		s.analyzeOrders(ctx)
	}
	return res, nil
}

// endedBy is err, the error of an import's transaction, as ctx's error
// when ctx ended first: database/sql rolls a transaction back and closes
// its statements once its context ends, so the statement that runs then
// fails with "sql: statement is closed" or sql.ErrTxDone instead of the
// context's error, and a SIGTERM would read as a storage failure (exit 1,
// not 143). Nothing was committed either way. err is kept
// in the text.
func endedBy(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (then: %v)", ctx.Err(), err)
}

// analyzeAfter is how many orders an import on PostgreSQL adds or
// updates before it refreshes the table's planner statistics (a dry run,
// which writes nothing, never does).
const analyzeAfter = 1000

// analyzeOrders refreshes PostgreSQL's statistics of the orders table
// after a large import, as PostgreSQL's "Populating a Database" advises
// after a bulk load, instead of leaving them to autovacuum's next round
// (up to a minute later). With statistics from before the import the
// planner took a user's orders to be few, and read every one of them
// for a batch chunk's lookup of 100 orders by id (a bitmap scan of the
// user, then the ids as a filter): 19 ms a chunk at 5,000 orders and
// growing with the table, against 0.4 ms by the primary key afterwards.
// ANALYZE reads a sample (30,000 rows at the default statistics
// target), not the table, and takes no lock that blocks reads or
// writes. Its error is dropped: the import it follows is committed.
func (s *Store) analyzeOrders(ctx context.Context) {
	_, _ = s.h.Q().ExecContext(ctx, `ANALYZE orders`)
}

// storedOrder is an order as stored, with whether it is the shop's (its
// id unique among the shop's orders) or a user's own.
type storedOrder struct {
	Order
	shop bool
}

// pendingOrder is an order decided and not yet written.
type pendingOrder struct {
	o    Order
	shop bool // the shop's order (an operator import's)
}

// upsert is one ImportOrdersFile: the orders decided and not yet written,
// and the report so far.
type upsert struct {
	ctx      context.Context
	tx       sqlstore.Querier // the import's transaction
	q        *queries         // the statements of tx's database
	now      time.Time
	write    bool // false: a dry run, or an owner refused (nothing will be committed)
	operator bool // the rows may be of any user (ParseOptions.Operator)
	file     *OrdersFile
	// The orders decided and not yet written: added ones (not stored),
	// and the others (stored: updated, or replacing a teaching order).
	added, changed []pendingOrder
	args           []any                     // a write's arguments, reused
	mine           map[[2]string]storedOrder // storedMine's result, reused
	oneUserFull    string                    // insertOneUser's text of a full batch, once made
	res            ImportResult
	refused        badLines
	needs          []Need // what the refused changes need (OwnerError.Needs)
	// The last delivery time written and its stored text: an export's
	// rows share a few times, and formatting one is a tenth of a write.
	lastAt   *time.Time
	lastArg  any
	readText string // the last stored delivery time read, and it parsed
	readAt   *time.Time
	lastUser string // the user of the last order written, and it as an argument
	userArg  any
}

// run reads the file's orders (f.replay) in a goroutine of its own and decides its
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
		out := batcher{ctx: ctx, ch: batches}
		scanErr = f.replay(ctx, out.add)
		if scanErr == nil {
			scanErr = out.flush()
		}
	}()
	for b := range batches {
		if err == nil {
			if err = u.decide(b); err != nil {
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
	return f.rows, f.orders, nil
}

// batcher gathers a file's orders into batches of importBatch and sends
// each on ch, for the writer; ctx ends a send that waits (its error).
type batcher struct {
	ctx   context.Context
	ch    chan<- []*group
	batch []*group
}

// add adds g, sending the batch once it is full.
func (b *batcher) add(g *group) error {
	if b.batch == nil {
		b.batch = make([]*group, 0, importBatch)
	}
	if b.batch = append(b.batch, g); len(b.batch) < importBatch {
		return nil
	}
	return b.flush()
}

// flush sends the batch under way, if any.
func (b *batcher) flush() error {
	if len(b.batch) == 0 {
		return nil
	}
	select {
	case b.ch <- b.batch:
		b.batch = nil
		return nil
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
}

// decide reads the stored orders of a batch (one statement; an operator
// import one more for the shop's orders of its ids), decides each order
// and queues its write.
func (u *upsert) decide(batch []*group) error {
	if err := u.ctx.Err(); err != nil {
		return err
	}
	mine, err := u.storedMine(batch)
	if err != nil {
		return err
	}
	var shop map[string]storedOrder
	if u.operator {
		if shop, err = u.storedShop(batch); err != nil {
			return err
		}
	}
	for _, g := range batch {
		if err := u.decideOne(g, mine, shop); err != nil {
			return err
		}
		u.file.freeGroup(g)
	}
	return u.writePending(false)
}

// decideOne decides one order of the file: mine holds the stored orders
// of the batch's (user, order id) pairs, shop (an operator import's) the
// shop's orders of its ids, whoever owns them.
func (u *upsert) decideOne(g *group, mine map[[2]string]storedOrder, shop map[string]storedOrder) error {
	o := g.order
	old, ok := mine[[2]string{o.User, o.ID}]
	if other, found := shop[o.ID]; found && other.User != o.User {
		// The shop gave this id to another customer.
		if !other.Teaching {
			u.refuse(g, "is stored with another owner; the owner of an order never changes")
			return nil
		}
		used, err := u.used(other.Order)
		if err != nil {
			return err
		}
		if used {
			u.refuse(g, "is stored with another owner (a teaching order that a task uses); the owner of an order never changes")
			return nil
		}
		// An unused teaching order gives way to the shop's order.
		if u.write {
			if _, err := u.tx.ExecContext(u.ctx, u.q.deleteTeachingOrder, other.User, other.ID); err != nil {
				return fmt.Errorf("replace teaching order %s: %w", other.ID, err)
			}
		}
		prev := other
		if ok {
			prev = old
		}
		return u.replace(g, prev, ActionReplacedTeaching, other.User)
	}
	switch {
	case !ok:
		u.res.Added++
		if u.write {
			u.added = append(u.added, pendingOrder{o: o, shop: u.operator})
		}
		u.note(OrderChange{Line: g.line, OrderID: o.ID, Action: ActionAdded}, false)
	case old.Teaching:
		// A teaching order a task, draft or batch row uses stays as it is:
		// its tasks were made against it (an application of the teaching
		// seed included), and a real order under them would stay open.
		used, err := u.used(old.Order)
		if err != nil {
			return err
		}
		if used && sameFields(old.Order, o) {
			// The file says what is stored: nothing to replace.
			u.res.Unchanged++
			return nil
		}
		if used {
			u.refuse(g, "is a teaching order that a task uses; it is not replaced")
			return nil
		}
		return u.replace(g, old, ActionReplacedTeaching, "")
	case sameOrder(old.Order, o) && (old.shop || !u.operator):
		u.res.Unchanged++
	case old.shop && !u.operator:
		// The shop's order (an --operator import's) is changed by the
		// shop only: a user's own import keeps every field of it.
		u.refuse(g, "is the shop's order, imported by its operator; only the operator's import changes it")
		u.needs = addNeed(u.needs, NeedOperator)
	default:
		return u.replace(g, old, ActionUpdated, "")
	}
	return nil
}

// queue adds a stored order to the writes of a later writePending.
func (u *upsert) queue(o Order) {
	if u.write {
		u.changed = append(u.changed, pendingOrder{o: o, shop: u.operator})
	}
}

// refuse records an order the import may not change (why: what follows
// "order X " in its line). The message names neither the owner nor
// anything else of the stored order.
func (u *upsert) refuse(g *group, why string) {
	u.res.Refused++
	u.write = false
	u.added, u.changed = u.added[:0], u.changed[:0]
	u.refused.add(g.line, fmt.Errorf("order %s %s", g.order.ID, why))
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
// replaced_teaching; fromUser the owner of a teaching order of another
// user that gives way, else "") and reports its tasks in flight and
// whether it could be returned now, by Eligibility's rule.
func (u *upsert) replace(g *group, old storedOrder, action, fromUser string) error {
	o := g.order
	c := OrderChange{Line: g.line, OrderID: o.ID, Action: action, Fields: changedFields(old.Order, o)}
	if fromUser != "" && fromUser != o.User {
		c.Fields = append([]string{"user"}, c.Fields...)
	}
	if u.operator && !old.shop && fromUser == "" {
		c.Fields = append(c.Fields, "shop")
	}
	u.res.Updated++
	if action == ActionReplacedTeaching {
		u.res.TeachingReplaced++
	}
	tasks, err := u.inFlight(o)
	if err != nil {
		return err
	}
	c.Tasks = tasks
	if c.NotReturnableNow, err = eligibility(u.ctx, u.tx, u.q, o, u.now); err != nil {
		return err
	}
	if len(tasks) > 0 {
		u.res.InFlight++
	}
	u.note(c, len(tasks) > 0)
	u.queue(o)
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

// scanStored reads one row of an order's columns with shop (queries). A
// delivery time equal
// to the last one read is not parsed again (the orders of one export share
// a few): it is the same *time.Time, which nothing changes.
func (u *upsert) scanStored(sc scanner) (storedOrder, error) {
	var (
		o         storedOrder
		delivered sql.NullString
	)
	if err := sc.Scan(&o.ID, &o.User, &o.Item, &delivered, &o.FinalSale, &o.Teaching, &o.shop); err != nil {
		return storedOrder{}, err
	}
	if !delivered.Valid {
		return o, nil
	}
	if delivered.String != u.readText || u.readAt == nil {
		t, err := parseTime(delivered.String)
		if err != nil {
			return storedOrder{}, err
		}
		u.readText, u.readAt = delivered.String, &t
	}
	o.DeliveredAt = u.readAt
	return o, nil
}

// storedMine reads the stored orders of the batch's (user, order id)
// pairs. It reads no order of a user the batch does not name. A batch of
// one user (every batch of an import without --operator) is read as the
// range of its ids, one seek and the rows in it, when that range holds
// few other orders (a file sorted by id, the usual export, and a new
// user's file: nothing); else each pair is looked up.
func (u *upsert) storedMine(batch []*group) (map[[2]string]storedOrder, error) {
	// One map serves every batch: made for a full batch once, instead
	// of growing from empty, rehashed several times, in each.
	if u.mine == nil {
		u.mine = make(map[[2]string]storedOrder, importBatch)
	}
	out := u.mine
	clear(out)
	user, lo, hi := batch[0].order.User, batch[0].order.ID, batch[0].order.ID
	for _, g := range batch[1:] {
		if g.order.User != user {
			return out, u.storedPairs(batch, out)
		}
		lo, hi = min(lo, g.order.ID), max(hi, g.order.ID)
	}
	limit := 2 * len(batch)
	rows, err := u.tx.QueryContext(u.ctx, u.q.storedRange, user, lo, hi, limit)
	if err != nil {
		return nil, fmt.Errorf("read stored orders: %w", err)
	}
	n, err := u.scanInto(rows, out)
	if err != nil {
		return nil, err
	}
	if n < limit {
		return out, nil
	}
	// The range holds many orders the batch does not name: an unsorted
	// file. Look the batch's orders up one by one instead.
	clear(out)
	return out, u.storedPairs(batch, out)
}

// storedPairs reads the stored orders of the batch's (user, order id)
// pairs into out with one statement: the pairs padded with ("", ""),
// which no order has, so one prepared statement serves every batch.
func (u *upsert) storedPairs(batch []*group, out map[[2]string]storedOrder) error {
	args := make([]any, 0, 2*importBatch)
	for i := range importBatch {
		if i < len(batch) {
			args = append(args, batch[i].order.User, batch[i].order.ID)
		} else {
			args = append(args, "", "")
		}
	}
	rows, err := u.tx.QueryContext(u.ctx, u.q.storedPairs(), args...)
	if err != nil {
		return fmt.Errorf("read stored orders: %w", err)
	}
	_, err = u.scanInto(rows, out)
	return err
}

// scanInto reads rows of scanStored's columns into out, by (user, order
// id), closes them and returns how many there were.
func (u *upsert) scanInto(rows *sql.Rows, out map[[2]string]storedOrder) (int, error) {
	defer rows.Close()
	n := 0
	for rows.Next() {
		o, err := u.scanStored(rows)
		if err != nil {
			return 0, fmt.Errorf("read stored orders: %w", err)
		}
		out[[2]string{o.User, o.ID}] = o
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read stored orders: %w", err)
	}
	return n, nil
}

// storedShop reads the shop's orders (at most one per id) of the batch's
// order ids, whoever owns them: an operator import's view.
func (u *upsert) storedShop(batch []*group) (map[string]storedOrder, error) {
	args := make([]any, importBatch)
	for i := range args {
		args[i] = ""
		if i < len(batch) {
			args[i] = batch[i].order.ID
		}
	}
	rows, err := u.tx.QueryContext(u.ctx, u.q.storedShop(), args...)
	if err != nil {
		return nil, fmt.Errorf("read stored orders: %w", err)
	}
	defer rows.Close()
	out := make(map[string]storedOrder)
	for rows.Next() {
		o, err := u.scanStored(rows)
		if err != nil {
			return nil, fmt.Errorf("read stored orders: %w", err)
		}
		out[o.ID] = o
	}
	return out, rows.Err()
}

// writePending writes the queued orders of each kind once importBatch
// of them wait, or all of them when final: importBatch at a time with one
// statement each (a full batch's statement is prepared once), and the
// rest with one more. Added orders are written by queries.insertOrders,
// the others by queries.upsertOrders. A written order is the shop's when an operator import
// writes it, else the user's own (a teaching order it replaces included);
// a written order is no teaching order. (One JSON
// argument per batch, read with json_each, took twice the time of binding
// each value; numbered parameters, to bind a batch's one user once, cost
// the driver a string per parameter.)
func (u *upsert) writePending(final bool) error {
	if !u.write {
		u.added, u.changed = u.added[:0], u.changed[:0]
		return nil
	}
	var err error
	if final || len(u.added) >= importBatch {
		if u.added, err = u.writeAdded(u.added); err != nil {
			return err
		}
	}
	if final || len(u.changed) >= importBatch {
		if u.changed, err = u.writeOrders(u.changed, u.q.upsertOrders); err != nil {
			return err
		}
	}
	return nil
}

// writeAdded writes orders that are not stored (insertOrders), and
// returns orders emptied for reuse. A chunk of one user's orders (every
// chunk of an import without --operator) binds the user once
// (insertOneUser): a sixth fewer arguments, whose conversion and binding
// is a fifth of a fresh import's time.
func (u *upsert) writeAdded(orders []pendingOrder) ([]pendingOrder, error) {
	for done := 0; done < len(orders); {
		n := min(len(orders)-done, importBatch)
		chunk := orders[done : done+n]
		one := true
		for _, p := range chunk[1:] {
			one = one && p.o.User == chunk[0].o.User
		}
		var err error
		if one {
			err = u.writeOneUser(chunk)
		} else {
			_, err = u.writeOrders(chunk, u.q.insertOrders)
		}
		if err != nil {
			return orders, err
		}
		done += n
	}
	clear(orders)
	return orders[:0], nil
}

// writeOneUser writes orders of one user that are not stored, at most
// importBatch, with one insertOneUser statement.
func (u *upsert) writeOneUser(orders []pendingOrder) error {
	args := u.args[:0]
	for _, p := range orders {
		args = append(args, p.o.ID, p.o.Item, u.deliveredArg(p.o), flag(p.o.FinalSale))
	}
	args = append(args, orders[0].o.User)
	stmt := u.oneUserFull
	if len(orders) != importBatch || stmt == "" {
		stmt = u.q.insertOneUser(len(orders), u.operator)
		if len(orders) == importBatch {
			u.oneUserFull = stmt
		}
	}
	_, err := u.tx.ExecContext(u.ctx, stmt, args...)
	clear(args) // keep no strings of the file alive
	u.args = args[:0]
	if err != nil {
		return fmt.Errorf("write orders: %w", err)
	}
	return nil
}

// writeOrders writes orders with the statements of stmt (the statement
// that writes n orders) and returns orders emptied for reuse.
func (u *upsert) writeOrders(orders []pendingOrder, stmt func(n int) string) ([]pendingOrder, error) {
	for done := 0; done < len(orders); {
		n := min(len(orders)-done, importBatch)
		args := u.args[:0]
		for _, p := range orders[done : done+n] {
			if p.o.User != u.lastUser || u.userArg == nil {
				u.lastUser, u.userArg = p.o.User, p.o.User // boxed once per run of one user
			}
			args = append(args, u.userArg, p.o.ID, p.o.Item, u.deliveredArg(p.o), flag(p.o.FinalSale), flag(p.shop))
		}
		_, err := u.tx.ExecContext(u.ctx, stmt(n), args...)
		clear(args) // keep no strings of the file alive
		u.args = args[:0]
		if err != nil {
			return orders, fmt.Errorf("write orders: %w", err)
		}
		done += n
	}
	clear(orders)
	return orders[:0], nil
}

// inFlight returns the tasks in flight for an order (at most ten).
func (u *upsert) inFlight(o Order) ([]string, error) {
	rows, err := u.tx.QueryContext(u.ctx, u.q.inFlight, o.User, o.ID)
	if err != nil {
		return nil, fmt.Errorf("tasks of order %s: %w", o.ID, err)
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

// used reports whether any task, draft or batch row of the order's owner
// names the order.
func (u *upsert) used(o Order) (bool, error) {
	var used bool
	err := u.tx.QueryRowContext(u.ctx, u.q.orderUsed,
		o.User, o.ID, o.User, o.ID, o.User, o.ID).Scan(&used)
	if err != nil {
		return false, fmt.Errorf("uses of order %s: %w", o.ID, err)
	}
	return used, nil
}

// deliveredArg is an order's delivered_at as stored (nil: NULL, not
// delivered), formatted, and made an argument, once for each run of rows
// that share the time.
func (u *upsert) deliveredArg(o Order) any {
	if o.DeliveredAt == nil {
		return nil
	}
	if o.DeliveredAt != u.lastAt {
		u.lastAt, u.lastArg = o.DeliveredAt, formatTime(*o.DeliveredAt)
	}
	return u.lastArg
}

// sameOrder reports whether a stored order equals the file's: same owner,
// item, delivery and final sale flag, and not a teaching order.
// sameFields reports whether b says of an order what a says, its
// teaching mark aside: a file's row is never a teaching order.
func sameFields(a, b Order) bool {
	a.Teaching, b.Teaching = false, false
	return sameOrder(a, b)
}

func sameOrder(a, b Order) bool {
	return a.ID == b.ID && a.User == b.User && a.Item == b.Item && a.FinalSale == b.FinalSale &&
		a.Teaching == b.Teaching && sameTime(a.DeliveredAt, b.DeliveredAt)
}
