package postgres

import (
	"context"
	"fmt"
)

// Threads returns the id of every thread the store holds, in id order
// (byte order: thread ids are COLLATE "C"), as checkpoints.SQLite.Threads
// does; `assistant verify` reads every run through it.
func (s *Store) Threads(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT thread_id FROM checkpoints.threads ORDER BY thread_id`)
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list threads: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	return ids, nil
}
