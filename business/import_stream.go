package business

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

// ImportOrdersNew imports the orders file r into the business file at
// path, which is new and the caller's alone: made by Open (its schema and
// teaching orders) in a data dir that has no name yet and is thrown away
// when this fails (the first import's data dir made aside; docs/orders.md
// "The first import"). now is the wall clock's time (UTC) for the
// report's eligibility.
//
// Where ParseOrders and then ImportOrdersFile check the whole file before
// the first write, this checks r in a goroutine of its own, hands each
// good order to the writer at once, and commits only after the whole
// file was found good (the check's end included: the orders whose rows
// come back after other orders); the transaction runs in
// rollback-journal mode (sqlite.BulkLoad). The rules, the report and
// the errors are ParseOrders' and ImportOrdersFile's; a file's error
// comes first, even when the writer failed on what the check had not yet
// refused. The check's hashes are 32-bit (4 MB for MaxOrdersRows), beside
// the writer's memory.
//
// When the business file cannot be written at all (a full disk before
// the first write, say), r is not read and the error wraps
// ErrImportNotStarted, with no file: the caller may still check r and
// import it the ordinary way, which tells a bad file from a full disk.
//
// It returns the file too whenever the check found it good (nil else),
// its orders spooled: a caller whose new data dir cannot take its name
// after all imports them into the one that has it (ImportOrdersFile)
// without reading r again. The caller closes it. ctx ends both sides (its
// error, nothing committed).
func ImportOrdersNew(ctx context.Context, path string, now time.Time, r io.Reader, opts ParseOptions) (ImportResult, *OrdersFile, error) {
	f, err := newOrdersFile(opts)
	if err != nil {
		return ImportResult{}, nil, err
	}
	var res ImportResult
	var checkErr error
	started := false
	err = sqlite.BulkLoad(ctx, path, func(q sqlstore.Querier) error {
		started = true
		u := &upsert{ctx: ctx, tx: q, q: sqliteQueries, now: now.UTC(), write: true, operator: opts.Operator, file: f,
			res: ImportResult{Changes: []OrderChange{}}}
		var writeErr error
		checkErr, writeErr = u.stream(ctx, f, r)
		if checkErr != nil {
			return checkErr
		}
		if writeErr == nil {
			writeErr = u.writePending(true)
		}
		if writeErr != nil {
			return writeErr
		}
		u.res.Rows, u.res.Orders = f.rows, f.orders
		res = u.res
		if u.res.Refused > 0 {
			return &OwnerError{Lines: u.refused.lines, More: u.refused.more, Needs: u.needs}
		}
		return nil
	})
	if checkErr != nil {
		// The file's own error, as ParseOrders gives it.
		f.Close()
		return ImportResult{}, nil, checkErr
	}
	if !started {
		// The file was not read: the caller may import it otherwise.
		f.Close()
		return ImportResult{}, nil, fmt.Errorf("import orders: %w: %w", ErrImportNotStarted, err)
	}
	var oe *OwnerError
	if errors.As(err, &oe) {
		return res, f, err
	}
	if err != nil {
		return ImportResult{}, f, fmt.Errorf("import orders: %w", endedBy(ctx, err))
	}
	return res, f, nil
}

// ErrImportNotStarted: ImportOrdersNew could not begin its transaction on
// the new business file, and read nothing of the orders file.
var ErrImportNotStarted = errors.New("the import could not start")

// stream runs the check of r (checkFile, 32-bit hashes) in a goroutine and
// decides and queues the orders it hands over here, in batches of
// importBatch, at most importQueue of them waiting. It returns the
// check's error and the writer's first error; after a writer's error the
// rest of the file is still checked (and dropped), so that a bad file is
// refused for what it is, not for what the writer met first.
func (u *upsert) stream(ctx context.Context, f *OrdersFile, r io.Reader) (checkErr, writeErr error) {
	batches := make(chan []*group, importQueue)
	go func() {
		defer close(batches)
		out := batcher{ctx: ctx, ch: batches}
		checkErr = checkFile[uint32](ctx, f, r, func(g *group) error {
			// The check reuses g: the writer gets a copy.
			c := f.newGroup()
			c.order, c.line, c.last = g.order, g.line, g.last
			return out.add(c)
		})
		if checkErr == nil {
			checkErr = out.flush()
		}
	}()
	for b := range batches {
		if writeErr == nil {
			writeErr = u.decide(b)
			continue
		}
		for _, g := range b {
			f.freeGroup(g)
		}
	}
	return checkErr, writeErr
}
