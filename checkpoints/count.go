package checkpoints

import (
	"context"

	"assistant/internal/sqlite"
)

// CountThreadsReadOnly counts the threads stored in the checkpoint file at
// path without changing it (see sqlite.CountRowsReadOnly): a missing,
// empty or unreadable file counts 0.
func CountThreadsReadOnly(ctx context.Context, path string) (int, error) {
	return sqlite.CountRowsReadOnly(ctx, path, "threads")
}
