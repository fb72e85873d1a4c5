package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Threads returns the id of every thread the store holds, in id order
// (byte order: thread ids are COLLATE "C"), as checkpoints.SQLite.Threads
// does; `assistant verify` reads every run through it.
func (s *Store) Threads(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT thread_id FROM checkpoints.threads ORDER BY thread_id`)
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	// CollectRows closes rows and reports a failed read (rows.Err).
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	return ids, nil
}
