package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// BatchRow is one line of a batch file or of a decide file: the return
// task to run for it (TaskID, OrderID, Reason), or the decision to give a
// task (TaskID, Action, DraftID), and, once the row was handled, what it
// came to (Outcome, ErrorCode, Error).
type BatchRow struct {
	RowNo   int    `json:"row"`  // 1-based position in the file, header excluded
	Line    int    `json:"line"` // line in the file (the header is line 1); 0: unknown, row_no + 1
	TaskID  string `json:"task"`
	OrderID string `json:"order"`
	Reason  string `json:"reason"`
	// Action and DraftID are a decide row's decision; "" in a batch row.
	Action  string `json:"action"`
	DraftID string `json:"draft"`
	// Outcome is "" until the row was handled, then what it came to (the
	// row task's stage, or a refusal: not_found, conflict, …).
	Outcome string `json:"outcome"`
	// ErrorCode and Error say what went wrong with the row; "" when
	// nothing did.
	ErrorCode string `json:"error_code"`
	Error     string `json:"error"`
	// DuplicateOf is the line of the earlier row this one repeats (the
	// same order in a batch, the same task in a decide file); 0 for none.
	DuplicateOf int `json:"duplicate_of"`
}

// FileLine is the row's line in its file: Line, or for a row stored
// without one the line it has in a file with a one-line header and no
// line breaks inside fields.
func (r BatchRow) FileLine() int {
	if r.Line > 0 {
		return r.Line
	}
	return r.RowNo + 1
}

// RowOutcome is what one handled row came to, for RecordRowOutcomes.
type RowOutcome struct {
	RowNo     int
	Outcome   string
	ErrorCode string
	Error     string
}

// CreateBatch records batch task t (kind batch) holding lease l, with its
// rows, in one transaction, with the default draft validity (300 s): see
// CreateBatchTTL. Errors: ErrTaskExists.
func (s *Store) CreateBatch(ctx context.Context, t TaskRecord, l Lease, rows []BatchRow) error {
	return s.CreateBatchTTL(ctx, t, l, 300*time.Second, rows)
}

// CreateBatchTTL records batch task t (kind batch) holding lease l, with
// the draft validity ttl its rows' tasks are started with (whole seconds
// kept) and its rows, in one transaction: a batch never exists without its
// rows. A row whose Outcome is set already (a duplicate, refused before it
// runs) is stored handled. Errors: ErrTaskExists.
func (s *Store) CreateBatchTTL(ctx context.Context, t TaskRecord, l Lease, ttl time.Duration, rows []BatchRow) error {
	return s.createBatch(ctx, t, l, ttl, func(tx *sqlstore.Txn) error {
		for len(rows) > 0 {
			n := min(len(rows), rowsPerInsert)
			if err := s.insertBatchRows(ctx, tx, t.ID, rows[:n]); err != nil {
				return fmt.Errorf("create batch %s rows %d-%d: %w", t.ID, rows[0].RowNo, rows[n-1].RowNo, err)
			}
			rows = rows[n:]
		}
		return nil
	})
}

// createBatch is the transaction of CreateBatchTTL and CreateBatchEach:
// it inserts the task record of batch t (insertBatchTask), then the rows
// that addRows inserts in tx, and commits only when addRows returns nil.
// Errors: insertBatchTask's, addRows' as it returns them, storage errors
// wrapped "create batch ID: …".
func (s *Store) createBatch(ctx context.Context, t TaskRecord, l Lease, ttl time.Duration, addRows func(tx *sqlstore.Txn) error) error {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	defer tx.Rollback()
	if err := s.insertBatchTask(ctx, tx, t, l, ttl); err != nil {
		return err
	}
	if err := addRows(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	return nil
}

// insertBatchTask inserts the task record of batch t (kind batch) in tx,
// holding lease l, with the draft validity ttl (whole seconds kept), as
// createBatch begins. Errors are wrapped "create batch ID: …":
// ErrTaskExists, storage errors.
func (s *Store) insertBatchTask(ctx context.Context, tx sqlstore.Querier, t TaskRecord, l Lease, ttl time.Duration) error {
	now := formatTime(s.now())
	_, err := tx.ExecContext(ctx, s.q.insertBatchTask,
		t.ID, t.User, t.Fingerprint, now, now, KindBatch, int64(ttl/time.Second), l.Owner, l.PID, l.Host, formatTime(l.Until))
	if s.h.IsUniqueViolation(err) {
		return fmt.Errorf("create batch %s: %w", t.ID, ErrTaskExists)
	}
	if err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	return nil
}

// BatchRows returns up to n rows of the batch starting after row number
// after (0 for the first), in row order.
func (s *Store) BatchRows(ctx context.Context, batchID string, after, n int) ([]BatchRow, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.q.batchRows, batchID, after, n)
	if err != nil {
		return nil, fmt.Errorf("rows of batch %s: %w", batchID, err)
	}
	defer rows.Close()
	var out []BatchRow
	for rows.Next() {
		var r BatchRow
		if err := rows.Scan(&r.RowNo, &r.Line, &r.TaskID, &r.OrderID, &r.Reason, &r.Action, &r.DraftID, &r.Outcome, &r.ErrorCode, &r.Error, &r.DuplicateOf); err != nil {
			return nil, fmt.Errorf("rows of batch %s: %w", batchID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// rowsPerInsert bounds the batch rows CreateBatchTTL writes in one
// statement (on PostgreSQL a statement is a round trip to the server):
// twelve parameters a row, far below either database's parameter limit.
const rowsPerInsert = 250

// insertBatchRows inserts rows of batch batchID in one statement.
func (s *Store) insertBatchRows(ctx context.Context, q sqlstore.Querier, batchID string, rows []BatchRow) error {
	args := make([]any, 0, 1+11*len(rows))
	args = append(args, batchID)
	for _, r := range rows {
		args = append(args, r.RowNo, r.Line, r.TaskID, r.OrderID, r.Reason, r.Action, r.DraftID, r.Outcome, r.ErrorCode, r.Error, r.DuplicateOf)
	}
	_, err := q.ExecContext(ctx, s.q.insertBatchRows(len(rows)), args...)
	return err
}

// RecordRowOutcomes stores what each of the handled rows of the batch came
// to, in one UPDATE for up to outcomesPerUpdate rows (on PostgreSQL a
// statement is a round trip to the server). Inside a business transaction
// (New over InTx's Handle) it joins that commit, so a row's outcome is
// stored with the row's own writes. An unknown row is ErrNotFound naming
// the first such row (a row number checked, not ignored); the known rows
// may be written by then, which the caller's transaction rolls back.
func (s *Store) RecordRowOutcomes(ctx context.Context, batchID string, outs []RowOutcome) error {
	for len(outs) > 0 {
		n := min(len(outs), outcomesPerUpdate)
		if err := s.recordOutcomes(ctx, batchID, outs[:n]); err != nil {
			return err
		}
		outs = outs[n:]
	}
	return nil
}

// outcomesPerUpdate bounds the rows RecordRowOutcomes updates in one
// statement: four parameters a row, far below either database's limit.
const outcomesPerUpdate = 250

// recordOutcomes is RecordRowOutcomes for at most outcomesPerUpdate rows,
// in one UPDATE … FROM a VALUES list (queries.recordOutcomes).
func (s *Store) recordOutcomes(ctx context.Context, batchID string, outs []RowOutcome) error {
	args := make([]any, 0, 1+4*len(outs))
	args = append(args, batchID)
	distinct := make(map[int]bool, len(outs))
	for _, o := range outs {
		args = append(args, o.RowNo, o.Outcome, o.ErrorCode, o.Error)
		distinct[o.RowNo] = true
	}
	res, err := s.h.Q().ExecContext(ctx, s.q.recordOutcomes(len(outs)), args...)
	if err != nil {
		return fmt.Errorf("record rows %d-%d of batch %s: %w", outs[0].RowNo, outs[len(outs)-1].RowNo, batchID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("record rows %d-%d of batch %s: %w", outs[0].RowNo, outs[len(outs)-1].RowNo, batchID, err)
	}
	if int(n) == len(distinct) {
		return nil
	}
	for _, o := range outs { // which row is unknown: rare, one read a row
		var one int
		err := s.h.Q().QueryRowContext(ctx, s.q.batchRowExists, batchID, o.RowNo).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("record row %d of batch %s: %w", o.RowNo, batchID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("record row %d of batch %s: %w", o.RowNo, batchID, err)
		}
	}
	return fmt.Errorf("record rows %d-%d of batch %s: %d of %d rows changed", outs[0].RowNo, outs[len(outs)-1].RowNo, batchID, n, len(distinct))
}

// CountBatchRows returns how many rows the batch has.
func (s *Store) CountBatchRows(ctx context.Context, batchID string) (int, error) {
	var n int
	if err := s.h.Q().QueryRowContext(ctx, s.q.countBatchRows, batchID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows of batch %s: %w", batchID, err)
	}
	return n, nil
}

// HeldOrders calls fn with the order of each row of the batch that holds
// its order, in row order: every row but a duplicate (which never runs)
// and a row that ended with an error (an unknown order, a task id taken,
// a failed task), run or still to run. fn returning false ends the walk.
// Errors: the database's, wrapped.
func (s *Store) HeldOrders(ctx context.Context, batchID string, fn func(order string) bool) error {
	rows, err := s.h.Q().QueryContext(ctx, s.q.heldOrders, batchID)
	if err != nil {
		return fmt.Errorf("orders of batch %s: %w", batchID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var order string
		if err := rows.Scan(&order); err != nil {
			return fmt.Errorf("orders of batch %s: %w", batchID, err)
		}
		if !fn(order) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("orders of batch %s: %w", batchID, err)
	}
	return nil
}
