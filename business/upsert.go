package business

import (
	"context"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

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
