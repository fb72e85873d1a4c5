package business

import (
	"database/sql"
	"fmt"
)

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
