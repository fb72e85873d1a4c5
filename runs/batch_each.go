package runs

import (
	"assistant/internal/sqlstore"
	"context"
	"fmt"
	"time"
)

// CreateBatchEach is CreateBatchTTL with the rows given by each instead of
// a slice: each calls add with every row, in order, and the rows are
// inserted as they come, so that a large file's rows are never all in
// memory at once. Task and rows are one transaction, committed only when
// each returns nil: an error of each (or of add) leaves nothing.
// Errors: ErrTaskExists, each's, storage errors.
func (s *Store) CreateBatchEach(ctx context.Context, t TaskRecord, l Lease, ttl time.Duration, each func(add func(BatchRow) error) error) error {
	return s.createBatch(ctx, t, l, ttl, func(tx *sqlstore.Txn) error {
		stmt, err := tx.PrepareContext(ctx, s.q.insertBatchRow)
		if err != nil {
			return fmt.Errorf("create batch %s: %w", t.ID, err)
		}
		defer stmt.Close()
		return each(func(r BatchRow) error {
			if _, err := stmt.ExecContext(ctx, t.ID, r.RowNo, r.Line, r.TaskID, r.OrderID, r.Reason, r.Action, r.DraftID, r.Outcome, r.ErrorCode, r.Error, r.DuplicateOf); err != nil {
				return fmt.Errorf("create batch %s row %d: %w", t.ID, r.RowNo, err)
			}
			return nil
		})
	})
}
