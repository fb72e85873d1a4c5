package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"assistant/internal/pgdb"
	"github.com/jackc/pgx/v5/pgxpool"

	"assistant/checkpoints"
)

// Refusals of Open. Each matches (errors.Is) its SQLite twin in package
// checkpoints too, so a caller maps both stores' refusals with one check.
// Nothing in the database was changed when Open returns one.
var (
	// ErrNewerSchema: the schema was migrated by a newer build (errors.Is
	// checkpoints.ErrNewerSchema).
	ErrNewerSchema error = &refusal{
		msg:  "written by a newer version of assistant (the database is left unchanged)",
		twin: checkpoints.ErrNewerSchema,
	}
	// ErrForeignSchema: a schema named checkpoints exists that this
	// program did not make (errors.Is checkpoints.ErrForeignFile).
	ErrForeignSchema error = &refusal{
		msg: "schema " + Schema + " exists but was not made by assistant (it has no " + Schema +
			".schema_version; the database is left unchanged)",
		twin: checkpoints.ErrForeignFile,
	}
)

// refusal is an error of Open that also matches its SQLite twin.
type refusal struct {
	msg  string
	twin error
}

// Error implements the error interface.
func (r *refusal) Error() string { return r.msg }

// Is makes errors.Is(err, twin) and errors.Is(err, pgdb.ErrSchemaRefused)
// true.
func (r *refusal) Is(target error) bool { return target == r.twin || target == pgdb.ErrSchemaRefused }

// migrationLock is the key of the transaction-level advisory lock every
// migration holds, so that processes opening the store at once migrate
// one after the other: "ASCP", the SQLite file's application id, then 1.
const migrationLock int64 = 0x41534350_00000001

// migration is one file of migrations/: NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// loadMigrations parses migrations/NNNN_name.sql into a list ordered by
// version, checking the versions run 1, 2, 3 … without gaps.
var loadMigrations = sync.OnceValues(func() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var migs []migration
	for i, name := range names { // fs.Glob returns them sorted
		base := strings.TrimSuffix(path.Base(name), ".sql")
		num, label, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d as NNNN_name.sql", name, i+1)
		}
		text, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		migs = append(migs, migration{version: v, name: label, sql: string(text)})
	}
	return migs, nil
})

// SchemaVersion is the newest schema this build knows: the number of
// migrations.
func SchemaVersion() int {
	migs, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(migs)
}

// querier is what schemaVersion reads with: the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// schemaVersion returns the version of the store's schema in the
// database: 0 when there is no schema checkpoints. A schema of that name
// without a version gives ErrForeignSchema; a version above latest gives
// ErrNewerSchema. It only reads.
func schemaVersion(ctx context.Context, q querier, latest int) (int, error) {
	var schema, table bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
		to_regclass($2) IS NOT NULL`, Schema, Schema+".schema_version").Scan(&schema, &table); err != nil {
		return 0, err
	}
	if !schema {
		return 0, nil
	}
	if !table {
		return 0, ErrForeignSchema
	}
	var v int
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+Schema+`.schema_version`).Scan(&v); err != nil {
		return 0, err
	}
	switch {
	case v == 0:
		return 0, ErrForeignSchema
	case v > latest:
		return v, fmt.Errorf("schema %s is at version %d, this build knows %d: %w", Schema, v, latest, ErrNewerSchema)
	}
	return v, nil
}

// migrate brings the store's schema to the newest version, each migration
// in a transaction of its own that holds the advisory lock migrationLock,
// so two processes migrating at once apply each migration once. It
// refuses a newer or foreign schema (ErrNewerSchema, ErrForeignSchema)
// before writing anything. A schema already at the newest version costs
// one read and takes no lock.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	migs, err := loadMigrations()
	if err != nil {
		return err
	}
	v, err := schemaVersion(ctx, pool, len(migs))
	if err != nil || v == len(migs) {
		return err
	}
	for {
		done, err := migrateOne(ctx, pool, migs)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the migration after the schema's version, read under
// the lock, in one transaction, and reports done when there was none left.
func migrateOne(ctx context.Context, pool *pgxpool.Pool, migs []migration) (done bool, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	// Another process may hold it and be migrating: wait, then read the
	// version it left.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return false, err
	}
	v, err := schemaVersion(ctx, tx, len(migs))
	if err != nil {
		return false, err
	}
	if v == len(migs) {
		return true, tx.Commit(ctx)
	}
	m := migs[v]
	// No arguments: pgx sends it as one simple query, so a file may hold
	// many statements.
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+Schema+`.schema_version (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
		return false, fmt.Errorf("migration %d (%s): record the version: %w", m.version, m.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
	}
	return m.version == len(migs), nil
}
