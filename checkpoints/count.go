package checkpoints

import (
	"context"

	"assistant/internal/sqlitedb"
)

// CountThreadsReadOnly counts the threads stored in the checkpoint file at
// path without changing it (see sqlitedb.CountRowsReadOnly): a missing,
// empty or unreadable file counts 0.
func CountThreadsReadOnly(ctx context.Context, path string) (int, error) {
	return sqlitedb.CountRowsReadOnly(ctx, path, "threads")
}
