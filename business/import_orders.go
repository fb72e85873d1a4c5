package business

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

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
