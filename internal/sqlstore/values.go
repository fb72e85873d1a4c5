package sqlstore

import (
	"database/sql"
	"fmt"
	"time"
)

// TimeLayout is how the stores write times: RFC 3339 with a fixed
// nine-digit fraction, always in UTC. Fixed width keeps text order equal to
// time order in SQL (ORDER BY created_at); time.RFC3339Nano trims zeros and
// would not.
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// FormatTime renders t for storage: UTC, TimeLayout.
func FormatTime(t time.Time) string {
	return t.UTC().Format(TimeLayout)
}

// ParseTime reads a stored time back (any RFC 3339 form), in UTC.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}

// RowsChanged turns an Exec result into errNone when no row matched the
// guard: a guarded update that changed nothing is never ignored. errNone is
// the caller's conflict sentinel.
func RowsChanged(res sql.Result, err, errNone error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return errNone
	}
	return nil
}
