package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CountRowsReadOnly counts the rows of table in the SQLite file at path
// without changing it: a read-only open, no migration, no WAL switch. A
// missing or empty file counts 0, and so does a file that cannot be read as
// having that table: the normal Open reports what is wrong with it. table
// must be a constant of the caller's schema, never input.
func CountRowsReadOnly(ctx context.Context, path, table string) (int, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() == 0) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("count %s in %s: %w", table, path, err)
	}
	db, err := sql.Open("sqlite", DSN(path, "mode=ro", "_pragma=busy_timeout(5000)"))
	if err != nil {
		return 0, fmt.Errorf("count %s in %s: %w", table, path, err)
	}
	defer db.Close()
	var n int
	// The table name cannot be a bound parameter; it is a constant.
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		return 0, nil
	}
	return n, nil
}
