package postgres

import (
	"context"
	"fmt"
)

// DataDirID returns the data dir identity the schema checkpoints carries
// (a UUID, made by migration 0002). The business store in the same
// database is opened with it (business.Options.DataDirID), so a business
// schema that belongs to another checkpoint schema is refused, as for the
// SQLite files of a data dir. Errors: reading it.
func (s *Store) DataDirID(ctx context.Context) (string, error) {
	var id string
	if err := s.pool.QueryRow(ctx, `SELECT id FROM checkpoints.data_dir WHERE one = 1`).Scan(&id); err != nil {
		return "", fmt.Errorf("checkpoints on postgres: data dir identity: %w", err)
	}
	return id, nil
}
