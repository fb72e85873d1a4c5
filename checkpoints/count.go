package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CountThreadsReadOnly counts the threads stored in the checkpoint file at
// path without changing it (a read-only open, no migration, no WAL switch).
// A missing or empty file, or one that is not a readable checkpoint file,
// counts 0: the normal open reports what is wrong with it.
func CountThreadsReadOnly(ctx context.Context, path string) (int, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() == 0) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("count threads in %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return 0, fmt.Errorf("count threads in %s: %w", path, err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM threads`).Scan(&n); err != nil {
		return 0, nil
	}
	return n, nil
}
