package sqlstore

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one schema step: migrations/NNNN_name.sql (SQLite) or
// pgmigrations/NNNN_name.sql (PostgreSQL) of a store.
type Migration struct {
	Version int64
	Name    string
	SQL     string
}

// LoadMigrations reads dir/NNNN_name.sql from fsys, ordered by version, and
// checks the versions run 1, 2, 3 … without gaps.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var migs []Migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", name)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		migs = append(migs, Migration{Version: v, Name: base, SQL: string(b)})
	}
	slices.SortFunc(migs, func(a, b Migration) int { return int(a.Version - b.Version) })
	for i, m := range migs {
		if m.Version != int64(i+1) {
			return nil, fmt.Errorf("migration %s: version %d, want %d", m.Name, m.Version, i+1)
		}
	}
	if len(migs) == 0 {
		return nil, fmt.Errorf("no migrations in %s", dir)
	}
	return migs, nil
}
