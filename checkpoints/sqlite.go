package checkpoints

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"assistant/flow"
	"assistant/internal/sqlitedb"
)

// Defaults of OpenSQLite.
const (
	// DefaultBusyTimeout is how long a statement waits for another
	// connection's (or process's) write lock before failing with SQLITE_BUSY.
	DefaultBusyTimeout = sqlitedb.DefaultBusyTimeout
	// DefaultSynchronous is the PRAGMA synchronous level: NORMAL, so a
	// commit survives a process crash at once and power loss after Sync.
	DefaultSynchronous = sqlitedb.DefaultSynchronous
	// ApplicationID is stored in the file header (PRAGMA application_id) to
	// mark a checkpoints file of assistant; it spells "ASCP".
	ApplicationID = 0x41534350
)

var (
	_ flow.Checkpointer  = (*SQLite)(nil)
	_ flow.Syncer        = (*SQLite)(nil)
	_ flow.DurableWriter = (*SQLite)(nil)
)

// Refusals of OpenSQLite. Each comes wrapped with the file's path; the file is
// left byte for byte as it was. They are the values of internal/sqlitedb,
// shared with business, so errors.Is matches through either name.
var (
	// ErrForeignFile: the file is a SQLite database of another program.
	ErrForeignFile = sqlitedb.ErrForeignFile
	// ErrNewerSchema: the file's schema version is newer than this build knows.
	ErrNewerSchema = sqlitedb.ErrNewerSchema
	// ErrCorrupt: the file is not a SQLite database, or a damaged or truncated one.
	ErrCorrupt = sqlitedb.ErrCorrupt
	// ErrReadOnly: the file or its directory cannot be written.
	ErrReadOnly = sqlitedb.ErrReadOnly
)

// SQLiteOptions configure OpenSQLite. The zero value opens an existing file
// with the defaults.
type SQLiteOptions struct {
	// Synchronous is "NORMAL" (the default when "") or "FULL". With NORMAL a
	// commit survives a process crash but maybe not a power loss until Sync;
	// with FULL every commit fsyncs.
	Synchronous string
	// Create makes the file (mode 0600) when it is missing. Without it a
	// missing file is an error wrapping fs.ErrNotExist. The directory must
	// exist either way.
	Create bool
	// BusyTimeout overrides DefaultBusyTimeout when positive. SQLite counts
	// it in whole milliseconds.
	BusyTimeout time.Duration
}

// SQLite is a flow.Checkpointer in one SQLite file, shared safely by
// goroutines and by processes. See the package documentation for the rules
// it keeps and migrations/ for the schema. Open it with OpenSQLite.
type SQLite struct {
	db          *sql.DB
	synchronous string
}

// OpenSQLite opens (or, with opts.Create, creates) the checkpoints file at
// path and migrates it to the newest schema, each migration in its own
// transaction. Before changing anything it inspects an existing non-empty
// file read-only and refuses, leaving its bytes unchanged, a file that is not
// a SQLite database (ErrCorrupt), belongs to another program
// (ErrForeignFile) or has a newer schema (ErrNewerSchema). Every error is
// wrapped as "open checkpoints PATH: …". The caller must Close the store.
func OpenSQLite(ctx context.Context, path string, opts SQLiteOptions) (*SQLite, error) {
	s, err := openSQLite(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open checkpoints %s: %w", path, err)
	}
	return s, nil
}

func openSQLite(ctx context.Context, path string, opts SQLiteOptions) (*SQLite, error) {
	migs, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	db, err := sqlitedb.Open(ctx, path, sqlitedb.Spec{
		ApplicationID: ApplicationID,
		Migrations:    migs,
		Create:        opts.Create,
		Synchronous:   opts.Synchronous,
		BusyTimeout:   opts.BusyTimeout,
	})
	if err != nil {
		return nil, err
	}
	synchronous := strings.ToUpper(opts.Synchronous)
	if synchronous == "" {
		synchronous = DefaultSynchronous
	}
	return &SQLite{db: db, synchronous: synchronous}, nil
}

// Close closes the database. Any use of the store after Close fails.
func (s *SQLite) Close() error {
	return s.db.Close()
}

// Put stores cp as the new head of cp.ThreadID in one short transaction and
// sets cp.Seq. cp.ParentID must be the current head's id ("" for a new
// thread), else Put returns a *flow.ConflictError and stores nothing; this
// holds across processes sharing the file. cp.PendingWrites is ignored.
func (s *SQLite) Put(ctx context.Context, cp *flow.Checkpoint) error {
	return s.putCheckpoint(ctx, cp, false)
}

// PutDurable is Put committed durably against power loss, together with
// every earlier commit (flow.DurableWriter): Put and Sync in one commit.
func (s *SQLite) PutDurable(ctx context.Context, cp *flow.Checkpoint) error {
	return s.putCheckpoint(ctx, cp, true)
}

func (s *SQLite) putCheckpoint(ctx context.Context, cp *flow.Checkpoint, durable bool) error {
	if err := validateCheckpoint(cp); err != nil {
		return err
	}
	var values, next sql.NullString
	if cp.Values != nil {
		values = sql.NullString{String: string(cp.Values), Valid: true}
	}
	if cp.Next != nil {
		b, err := json.Marshal(cp.Next)
		if err != nil {
			return fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
		}
		next = sql.NullString{String: string(b), Valid: true}
	}
	meta, err := encodeMetadata(cp.Metadata)
	if err != nil {
		return fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}

	var seq int64
	begin := func(tx *sql.Tx) error {
		var err error
		seq, err = s.put(ctx, tx, cp, values, next, meta)
		return err
	}
	if durable {
		err = sqlitedb.DurableTx(ctx, s.db, s.synchronous, begin)
	} else {
		err = s.inTx(ctx, begin)
	}
	if err != nil {
		var ce *flow.ConflictError
		if errors.As(err, &ce) {
			return err
		}
		return fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	cp.Seq = seq
	return nil
}

// inTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it.
func (s *SQLite) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// put writes cp as the head in tx, which began with BEGIN IMMEDIATE: the
// head cannot move under it.
func (s *SQLite) put(ctx context.Context, tx *sql.Tx, cp *flow.Checkpoint, values, next sql.NullString, meta string) (int64, error) {
	var err error
	var head string
	var headSeq int64
	err = tx.QueryRowContext(ctx,
		`SELECT head_id, head_seq FROM threads WHERE thread_id = ?`, cp.ThreadID).Scan(&head, &headSeq)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	conflict := &flow.ConflictError{ThreadID: cp.ThreadID, Want: cp.ParentID, Head: head}
	if head != cp.ParentID {
		return 0, conflict
	}
	seq := headSeq + 1
	now := time.Now().UTC().Format(time.RFC3339Nano)

	// The guards repeat the compare in SQL, so a head that moved anyway (a
	// transaction that did not take the write lock at BEGIN) changes no row
	// and is reported as a conflict rather than forking the thread.
	var res sql.Result
	if headSeq == 0 {
		res, err = tx.ExecContext(ctx,
			`INSERT INTO threads (thread_id, head_id, head_seq, updated_at) VALUES (?, ?, ?, ?)
			 ON CONFLICT (thread_id) DO NOTHING`,
			cp.ThreadID, cp.ID, seq, now)
	} else {
		res, err = tx.ExecContext(ctx,
			`UPDATE threads SET head_id = ?, head_seq = ?, updated_at = ?
			 WHERE thread_id = ? AND head_id = ? AND head_seq = ?`,
			cp.ID, seq, now, cp.ThreadID, head, headSeq)
	}
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n != 1 {
		return 0, conflict
	}

	_, err = tx.ExecContext(ctx,
		`INSERT INTO checkpoints (thread_id, checkpoint_id, seq, parent_id, step, source, format,
		                          values_json, next_json, breakpoint, metadata_json, created_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		cp.ThreadID, cp.ID, seq, cp.ParentID, cp.Metadata.Step, cp.Metadata.Source, cp.Format,
		values, next, cp.Breakpoint, meta, cp.CreatedAt.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return 0, err
	}
	return seq, nil
}

// checkpointColumns are the columns scanCheckpoint reads, in its order.
const checkpointColumns = `checkpoint_id, seq, parent_id, format, values_json, next_json,
	breakpoint, metadata_json, created_at`

// scanCheckpoint reads one row of checkpointColumns.
func scanCheckpoint(threadID string, row interface{ Scan(...any) error }) (*flow.Checkpoint, error) {
	cp := &flow.Checkpoint{ThreadID: threadID}
	var values, next sql.NullString
	var meta, created string
	if err := row.Scan(&cp.ID, &cp.Seq, &cp.ParentID, &cp.Format, &values, &next,
		&cp.Breakpoint, &meta, &created); err != nil {
		return nil, err
	}
	if values.Valid {
		cp.Values = json.RawMessage(values.String)
	}
	if next.Valid {
		if err := json.Unmarshal([]byte(next.String), &cp.Next); err != nil {
			return nil, fmt.Errorf("checkpoint %s/%s: next: %w", threadID, cp.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(meta), &cp.Metadata); err != nil {
		return nil, fmt.Errorf("checkpoint %s/%s: metadata: %w", threadID, cp.ID, err)
	}
	t, err := time.Parse(time.RFC3339Nano, created)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s/%s: created_at: %w", threadID, cp.ID, err)
	}
	cp.CreatedAt = t.UTC()
	return cp, nil
}

// Get returns the checkpoint checkpointID of threadID, or the thread's head
// when checkpointID is "", with its pending writes ordered by (TaskID, Kind,
// Idx). Checkpoint and writes come from one read transaction. An unknown
// thread or id gives (nil, nil).
func (s *SQLite) Get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error) {
	cp, err := s.get(ctx, threadID, checkpointID)
	if err != nil {
		return nil, fmt.Errorf("get checkpoint %s/%s: %w", threadID, checkpointID, err)
	}
	return cp, nil
}

func (s *SQLite) get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // plain BEGIN: readers do not take the write lock
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()

	var row *sql.Row
	if checkpointID == "" {
		row = tx.QueryRowContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints
			WHERE thread_id = ? AND seq = (SELECT head_seq FROM threads WHERE thread_id = ?)`,
			threadID, threadID)
	} else {
		row = tx.QueryRowContext(ctx, `SELECT `+checkpointColumns+` FROM checkpoints
			WHERE thread_id = ? AND checkpoint_id = ?`, threadID, checkpointID)
	}
	cp, err := scanCheckpoint(threadID, row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}

	rows, err := tx.QueryContext(ctx, `SELECT task_id, kind, idx, node, value_json FROM writes
		WHERE thread_id = ? AND checkpoint_id = ? ORDER BY task_id, kind, idx`, threadID, cp.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var w flow.Write
		var value sql.NullString
		if err := rows.Scan(&w.TaskID, &w.Kind, &w.Idx, &w.Node, &value); err != nil {
			return nil, err
		}
		if value.Valid {
			w.Value = json.RawMessage(value.String)
		}
		cp.PendingWrites = append(cp.PendingWrites, w)
	}
	return cp, rows.Err()
}

// PutWrites saves writes against checkpoint checkpointID of threadID in one
// transaction. A write with the same (TaskID, Kind, Idx) as a stored one
// replaces it. An unknown checkpoint gives an error wrapping
// ErrUnknownCheckpoint and stores nothing.
func (s *SQLite) PutWrites(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	return s.putWritesTx(ctx, threadID, checkpointID, writes, false)
}

// PutWritesDurable is PutWrites committed durably against power loss,
// together with every earlier commit (flow.DurableWriter).
func (s *SQLite) PutWritesDurable(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	return s.putWritesTx(ctx, threadID, checkpointID, writes, true)
}

func (s *SQLite) putWritesTx(ctx context.Context, threadID, checkpointID string, writes []flow.Write, durable bool) error {
	if err := validateWrites(threadID, checkpointID, writes); err != nil {
		return err
	}
	fn := func(tx *sql.Tx) error { return s.putWrites(ctx, tx, threadID, checkpointID, writes) }
	var err error
	if durable {
		err = sqlitedb.DurableTx(ctx, s.db, s.synchronous, fn)
	} else {
		err = s.inTx(ctx, fn)
	}
	if err != nil {
		return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, err)
	}
	return nil
}

func (s *SQLite) putWrites(ctx context.Context, tx *sql.Tx, threadID, checkpointID string, writes []flow.Write) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?`,
		threadID, checkpointID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrUnknownCheckpoint
	}
	if err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx,
		`INSERT INTO writes (thread_id, checkpoint_id, task_id, kind, idx, node, value_json)
		 VALUES (?, ?, ?, ?, ?, ?, ?)
		 ON CONFLICT (thread_id, checkpoint_id, task_id, kind, idx)
		 DO UPDATE SET node = excluded.node, value_json = excluded.value_json`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, w := range writes {
		var value sql.NullString
		if w.Value != nil {
			value = sql.NullString{String: string(w.Value), Valid: true}
		}
		if _, err := stmt.ExecContext(ctx, threadID, checkpointID, w.TaskID, w.Kind, w.Idx, w.Node, value); err != nil {
			return err
		}
	}
	return nil
}

// List returns the thread's checkpoints newest first (by Seq), without
// pending writes, narrowed by opts (all filters combine). An unknown thread,
// or an opts.Before id the thread does not have, gives an empty list.
func (s *SQLite) List(ctx context.Context, threadID string, opts flow.ListOptions) ([]*flow.Checkpoint, error) {
	q := `SELECT ` + checkpointColumns + ` FROM checkpoints WHERE thread_id = ?`
	args := []any{threadID}
	if opts.Before != "" {
		// An unknown id makes the subquery NULL and the comparison false: no rows.
		q += ` AND seq < (SELECT seq FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?)`
		args = append(args, threadID, opts.Before)
	}
	if opts.Source != "" {
		q += ` AND source = ?`
		args = append(args, opts.Source)
	}
	if opts.Step != nil {
		q += ` AND step = ?`
		args = append(args, *opts.Step)
	}
	q += ` ORDER BY seq DESC`
	if opts.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, opts.Limit)
	}

	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints of %s: %w", threadID, err)
	}
	defer rows.Close()
	var out []*flow.Checkpoint
	for rows.Next() {
		cp, err := scanCheckpoint(threadID, rows)
		if err != nil {
			return nil, fmt.Errorf("list checkpoints of %s: %w", threadID, err)
		}
		out = append(out, cp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list checkpoints of %s: %w", threadID, err)
	}
	return out, nil
}

// DeleteThread removes the thread's pending writes, checkpoints and head in
// one transaction and touches no other thread. Deleting a thread that does
// not exist is a no-op.
func (s *SQLite) DeleteThread(ctx context.Context, threadID string) error {
	if err := s.deleteThread(ctx, threadID); err != nil {
		return fmt.Errorf("delete thread %s: %w", threadID, err)
	}
	return nil
}

func (s *SQLite) deleteThread(ctx context.Context, threadID string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Children first: foreign keys are on.
	for _, q := range []string{
		`DELETE FROM writes WHERE thread_id = ?`,
		`DELETE FROM checkpoints WHERE thread_id = ?`,
		`DELETE FROM threads WHERE thread_id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, q, threadID); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Sync makes every earlier Put and PutWrites durable against power loss.
//
// With synchronous=FULL each commit already fsyncs the WAL, so Sync does
// nothing. With NORMAL (the default), Sync commits one small write
// transaction at synchronous=FULL (sqlitedb.Sync): that fsyncs the WAL file,
// which holds every earlier commit's frames too. The engine calls it once at
// the end of each run, before the caller can report what the run did.
func (s *SQLite) Sync(ctx context.Context) error {
	if err := sqlitedb.Sync(ctx, s.db, s.synchronous); err != nil {
		return fmt.Errorf("sync checkpoints: %w", err)
	}
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// loadMigrations parses migrations/NNNN_name.sql into a list ordered by
// version, checking the versions run 1, 2, 3 … without gaps.
var loadMigrations = sync.OnceValues(func() ([]sqlitedb.Migration, error) {
	return sqlitedb.LoadMigrations(migrationFiles, "migrations")
})
