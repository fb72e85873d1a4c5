package runs

import (
	"context"
	"fmt"

	"assistant/internal/sqlitedb"
)

// BatchRow is one line of a batch file: the return task to run for it.
type BatchRow struct {
	RowNo   int    `json:"row"` // 1-based position in the file, header excluded
	TaskID  string `json:"task"`
	OrderID string `json:"order"`
	Reason  string `json:"reason"`
}

// CreateBatch records batch task t (kind batch) holding lease l, with its
// rows, in one transaction: a batch never exists without its rows.
// Errors: ErrTaskExists.
func (s *Store) CreateBatch(ctx context.Context, t TaskRecord, l Lease, rows []BatchRow) error {
	tx, err := s.h.Begin(ctx)
	if err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	defer tx.Rollback()
	now := formatTime(s.now())
	_, err = tx.ExecContext(ctx,
		`INSERT INTO tasks (`+taskColumns+`, kind, lease_owner, lease_pid, lease_host, lease_until, lease_epoch)
		 VALUES (?, ?, '', '', ?, 'running', '', ?, ?, ?, ?, ?, ?, ?, 1)`,
		t.ID, t.User, t.Fingerprint, now, now, KindBatch, l.Owner, l.PID, l.Host, formatTime(l.Until))
	if sqlitedb.IsUniqueViolation(err) {
		return fmt.Errorf("create batch %s: %w", t.ID, ErrTaskExists)
	}
	if err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO batch_rows (batch_id, row_no, task_id, order_id, reason) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, t.ID, r.RowNo, r.TaskID, r.OrderID, r.Reason); err != nil {
			return fmt.Errorf("create batch %s row %d: %w", t.ID, r.RowNo, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create batch %s: %w", t.ID, err)
	}
	return nil
}

// BatchRows returns up to n rows of the batch starting after row number
// after (0 for the first), in row order.
func (s *Store) BatchRows(ctx context.Context, batchID string, after, n int) ([]BatchRow, error) {
	rows, err := s.h.Q().QueryContext(ctx,
		`SELECT row_no, task_id, order_id, reason FROM batch_rows WHERE batch_id = ? AND row_no > ? ORDER BY row_no LIMIT ?`,
		batchID, after, n)
	if err != nil {
		return nil, fmt.Errorf("rows of batch %s: %w", batchID, err)
	}
	defer rows.Close()
	var out []BatchRow
	for rows.Next() {
		var r BatchRow
		if err := rows.Scan(&r.RowNo, &r.TaskID, &r.OrderID, &r.Reason); err != nil {
			return nil, fmt.Errorf("rows of batch %s: %w", batchID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// CountBatchRows returns how many rows the batch has.
func (s *Store) CountBatchRows(ctx context.Context, batchID string) (int, error) {
	var n int
	if err := s.h.Q().QueryRowContext(ctx, `SELECT count(*) FROM batch_rows WHERE batch_id = ?`, batchID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows of batch %s: %w", batchID, err)
	}
	return n, nil
}
