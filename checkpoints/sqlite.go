package checkpoints

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"assistant/flow"
	"assistant/internal/sqlite"
	"assistant/internal/sqlstore"
)

// Defaults of OpenSQLite.
const (
	// DefaultBusyTimeout is how long a statement waits for another
	// connection's (or process's) write lock before failing with SQLITE_BUSY.
	DefaultBusyTimeout = sqlite.DefaultBusyTimeout
	// DefaultSynchronous is the PRAGMA synchronous level: NORMAL, so a
	// commit survives a process crash at once and power loss after Sync.
	DefaultSynchronous = sqlite.DefaultSynchronous
	// ApplicationID is stored in the file header (PRAGMA application_id) to
	// mark a checkpoints file of assistant; it spells "ASCP".
	ApplicationID = 0x41534350
)

var (
	_ flow.Checkpointer  = (*SQLite)(nil)
	_ flow.Syncer        = (*SQLite)(nil)
	_ flow.DurableWriter = (*SQLite)(nil)
	_ flow.HeadWriter    = (*SQLite)(nil)
	_ flow.Pruner        = (*SQLite)(nil)
	_ flow.Bufferer      = (*SQLite)(nil)
)

// Refusals of OpenSQLite. Each comes wrapped with the file's path; the file is
// left byte for byte as it was. They are the values of internal/sqlite,
// shared with business, so errors.Is matches through either name.
var (
	// ErrForeignFile: the file is a SQLite database of another program.
	ErrForeignFile = sqlite.ErrForeignFile
	// ErrNewerSchema: the file's schema version is newer than this build knows.
	ErrNewerSchema = sqlite.ErrNewerSchema
	// ErrCorrupt: the file is not a SQLite database, or a damaged or truncated one.
	ErrCorrupt = sqlite.ErrCorrupt
	// ErrReadOnly: the file or its directory cannot be written.
	ErrReadOnly = sqlite.ErrReadOnly
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
	// DurableByCheckpoint is for a process that runs one run and closes
	// the file: a durable Put or PutWrites (a run's last write) commits
	// at NORMAL and is made durable by checkpointing the WAL into the
	// file (sqlite.SyncByCheckpoint), which spares the close one fsync.
	// A process that goes on writing would pay more for it: the WAL's
	// header is synced again at the next write.
	DurableByCheckpoint bool
}

// SQLite is a flow.Checkpointer in one SQLite file, shared safely by
// goroutines and by processes. See the package documentation for the rules
// it keeps and migrations/ for the schema. Open it with OpenSQLite.
type SQLite struct {
	db          *sql.DB
	synchronous string
	stmts       *sqlstore.Stmts
	// byCheckpoint is SQLiteOptions.DurableByCheckpoint.
	byCheckpoint bool
	// fence is set on a view made by Fenced: its writes to fence.thread
	// check the thread's fence first (fence.go).
	fence *threadFence
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
	db, err := sqlite.Open(ctx, path, sqlite.Spec{
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
	return &SQLite{db: db, synchronous: synchronous, stmts: sqlstore.NewStmts(db), byCheckpoint: opts.DurableByCheckpoint}, nil
}

// Close closes the database. Any use of the store after Close fails. On a
// view made by Fenced it does nothing: the store owns the database.
func (s *SQLite) Close() error {
	if s.fence != nil {
		return nil
	}
	return errors.Join(s.stmts.Close(), s.db.Close())
}

// The statements of Put, PutWrites and Get, prepared once (stmtCache).
const (
	sqlHead = `SELECT head_id, head_seq FROM threads WHERE thread_id = ?`
	// sqlAdvanceHead and sqlStartThread are moveHead's compare-and-set in
	// one statement each: the head must be ?5 (a new thread: none), and no
	// fence of the thread may be above ?6 (noFence: none is); the head
	// moves to ?1 at its seq plus ?2, whose new seq is returned. No row:
	// one of the two did not hold, and whyNotMoved tells which.
	sqlAdvanceHead = `UPDATE threads SET head_id = ?1, head_seq = head_seq + ?2, updated_at = ?3
		WHERE thread_id = ?4 AND head_id = ?5
		AND NOT EXISTS (SELECT 1 FROM fences WHERE thread_id = ?4 AND epoch > ?6)
		RETURNING head_seq`
	sqlStartThread = `INSERT INTO threads (thread_id, head_id, head_seq, updated_at)
		SELECT ?4, ?1, ?2, ?3 WHERE ?5 = '' AND NOT EXISTS (SELECT 1 FROM fences WHERE thread_id = ?4 AND epoch > ?6)
		ON CONFLICT (thread_id) DO NOTHING
		RETURNING head_seq`
	// sqlHeadAndFence reads a thread's head and fence in one statement: one
	// row, NULL for what the thread lacks.
	sqlHeadAndFence = `SELECT (SELECT head_id FROM threads WHERE thread_id = ?1),
		(SELECT head_seq FROM threads WHERE thread_id = ?1),
		(SELECT epoch FROM fences WHERE thread_id = ?1)`
	// sqlSeqAndFence reads the seq of checkpoint ?2 of thread ?1 and the
	// thread's fence in one statement: one row, NULL for what is missing.
	sqlSeqAndFence = `SELECT (SELECT seq FROM checkpoints WHERE thread_id = ?1 AND checkpoint_id = ?2),
		(SELECT epoch FROM fences WHERE thread_id = ?1)`
	sqlInsertCheckpoint = `INSERT INTO checkpoints (thread_id, checkpoint_id, seq, step, source, format,
		values_json, next_json, breakpoint, metadata_json, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlSeqOf       = `SELECT seq FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?`
	sqlUpsertWrite = `INSERT INTO writes (thread_id, seq, task_id, kind, idx, node, value_json)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, seq, task_id, kind, idx)
		DO UPDATE SET node = excluded.node, value_json = excluded.value_json`
	// Get's statements: the checkpoint with its writes, one row a write
	// (checkpointWriteRow).
	sqlGetHeadWrites = `SELECT ` + checkpointColumns + `, w.task_id, w.kind, w.idx, w.node, w.value_json
		FROM checkpoints c LEFT JOIN writes w ON w.thread_id = c.thread_id AND w.seq = c.seq
		WHERE c.thread_id = ? AND c.seq = (SELECT head_seq FROM threads WHERE thread_id = ?)
		ORDER BY w.task_id, w.kind, w.idx`
	sqlGetByIDWrites = `SELECT ` + checkpointColumns + `, w.task_id, w.kind, w.idx, w.node, w.value_json
		FROM checkpoints c LEFT JOIN writes w ON w.thread_id = c.thread_id AND w.seq = c.seq
		WHERE c.thread_id = ? AND c.checkpoint_id = ?
		ORDER BY w.task_id, w.kind, w.idx`
)

// checkpointColumns are the columns scanCheckpoint reads, in its order, of
// the table aliased c. The parent is the checkpoint one seq below, unless
// Prune removed it and left its id in pruned_parent_id.
const checkpointColumns = `c.checkpoint_id, c.seq,
	coalesce(c.pruned_parent_id,
	         (SELECT p.checkpoint_id FROM checkpoints p WHERE p.thread_id = c.thread_id AND p.seq = c.seq - 1),
	         ''),
	c.step, c.source, c.format, c.values_json, c.next_json, c.breakpoint, c.metadata_json, c.created_at`

// checkpointColumnCount is how many columns checkpointColumns lists.
const checkpointColumnCount = 11

// The times SQLite stores: int64 Unix nanoseconds reach from 1677-09-21 to
// 2262-04-11.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// checkpointRow is a checkpoint's columns as stored.
type checkpointRow struct {
	values, next, meta sql.NullString
	created            sql.NullInt64 // Unix nanoseconds; NULL for the zero time
}

// encodeCheckpoint validates cp and returns its columns. A non-zero
// CreatedAt outside minTime..maxTime is refused: it has no int64 Unix
// nanoseconds.
func encodeCheckpoint(cp *flow.Checkpoint) (checkpointRow, error) {
	var row checkpointRow
	if err := validateCheckpoint(cp); err != nil {
		return row, err
	}
	if cp.Values != nil {
		row.values = sql.NullString{String: string(cp.Values), Valid: true}
	}
	if cp.Next != nil {
		b, err := json.Marshal(cp.Next)
		if err != nil {
			return row, fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
		}
		row.next = sql.NullString{String: string(b), Valid: true}
	}
	meta, err := encodeMetadata(cp.Metadata)
	if err != nil {
		return row, fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	row.meta = sql.NullString{String: meta, Valid: meta != ""}
	if t := cp.CreatedAt; !t.IsZero() {
		if t.Before(minTime) || t.After(maxTime) {
			return row, fmt.Errorf("put checkpoint %s/%s: created at %s, outside 1677-09-21 to 2262-04-11, the times the store keeps (Unix nanoseconds)",
				cp.ThreadID, cp.ID, t.UTC().Format(time.RFC3339Nano))
		}
		row.created = sql.NullInt64{Int64: t.UnixNano(), Valid: true}
	}
	return row, nil
}

// Put stores cp as the new head of cp.ThreadID in one short transaction and
// sets cp.Seq. cp.ParentID must be the current head's id ("" for a new
// thread), else Put returns a *flow.ConflictError and stores nothing; this
// holds across processes sharing the file. cp.PendingWrites is ignored. A
// Values or Metadata.Writes value that is not JSON, or a non-zero CreatedAt
// outside 1677-09-21 to 2262-04-11 (int64 Unix nanoseconds), is refused
// before anything is stored.
func (s *SQLite) Put(ctx context.Context, cp *flow.Checkpoint) error {
	return s.putCheckpoint(ctx, cp, false)
}

// PutDurable is Put committed durably against power loss, together with
// every earlier commit (flow.DurableWriter): Put and Sync in one commit.
func (s *SQLite) PutDurable(ctx context.Context, cp *flow.Checkpoint) error {
	return s.putCheckpoint(ctx, cp, true)
}

func (s *SQLite) putCheckpoint(ctx context.Context, cp *flow.Checkpoint, durable bool) error {
	row, err := encodeCheckpoint(cp)
	if err != nil {
		return err
	}
	var seq int64
	begin := func(tx *sql.Tx) error {
		var err error
		seq, err = s.put(ctx, tx, cp, row)
		return err
	}
	if err := s.inTx(ctx, durable, begin); err != nil {
		if errors.Is(err, flow.ErrConflict) || errors.Is(err, flow.ErrFenced) {
			return err
		}
		return fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	cp.Seq = seq
	return nil
}

// inTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it;
// with durable, the commit is durable against power loss together with
// every earlier one (sqlite.DurableTx; with byCheckpoint, a commit at the
// pool's level and sqlite.SyncByCheckpoint).
func (s *SQLite) inTx(ctx context.Context, durable bool, fn func(tx *sql.Tx) error) error {
	if durable && !s.byCheckpoint {
		return sqlite.DurableTx(ctx, s.db, s.synchronous, fn)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); durable && errors.Is(err, sqlstore.ErrNothingWritten) {
		return nil
	} else if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil || !durable {
		return err
	}
	return sqlite.SyncByCheckpoint(ctx, s.db, s.synchronous)
}

// put writes cp (encoded as row) as the head in tx, which began with BEGIN
// IMMEDIATE: the head cannot move under it. It returns cp's seq, or a
// *flow.ConflictError when cp.ParentID is not the head.
func (s *SQLite) put(ctx context.Context, tx *sql.Tx, cp *flow.Checkpoint, row checkpointRow) (int64, error) {
	seq, err := s.moveHead(ctx, tx, cp.ThreadID, cp.ParentID, cp.ID, 1, s.fenceEpoch(cp.ThreadID))
	if err != nil {
		return 0, err
	}
	if err := s.insertCheckpoint(ctx, tx, cp, seq, row); err != nil {
		return 0, err
	}
	return seq, nil
}

// moveHead is the compare-and-set of Put, for n new checkpoints at once: in
// tx, the thread's head must be parentID ("" for a new thread) and its
// fence not above fence (noFence: not checked), else it returns a
// *flow.FencedError or a *flow.ConflictError; it then sets the head to id
// at head seq + n and returns the seq of the first new checkpoint (head seq
// + 1). The checkpoints themselves are the caller's to insert, in tx. One
// statement when it succeeds (sqlAdvanceHead, sqlStartThread).
func (s *SQLite) moveHead(ctx context.Context, tx *sql.Tx, threadID, parentID, id string, n, fence int64) (int64, error) {
	query := sqlAdvanceHead
	if parentID == "" {
		query = sqlStartThread
	}
	var newSeq int64
	err := s.stmts.Tx(tx).QueryRowContext(ctx, query, id, n, time.Now().UnixNano(), threadID, parentID, fence).Scan(&newSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, s.whyNotMoved(ctx, tx, threadID, parentID, fence)
	}
	if err != nil {
		return 0, err
	}
	return newSeq - n + 1, nil
}

// whyNotMoved is the error of a head that moveHead did not move: the
// thread's fence above fence (*flow.FencedError), else a head other than
// parentID (*flow.ConflictError), read in tx.
func (s *SQLite) whyNotMoved(ctx context.Context, tx *sql.Tx, threadID, parentID string, fence int64) error {
	if _, err := s.headAt(ctx, tx, threadID, parentID, fence); err != nil {
		return err
	}
	// The head is parentID only if another writer changed it between the
	// statements, which the transaction's write lock rules out: a conflict
	// all the same, never a fork.
	return &flow.ConflictError{ThreadID: threadID, Want: parentID, Head: parentID}
}

// headAt reads the thread's head and fence in tx and returns the head's
// seq when the head is want and no fence is above fence; else a
// *flow.FencedError (the fence first) or a *flow.ConflictError.
func (s *SQLite) headAt(ctx context.Context, tx *sql.Tx, threadID, want string, fence int64) (int64, error) {
	var headID sql.NullString
	var headSeq, cur sql.NullInt64
	if err := s.stmts.Tx(tx).QueryRowContext(ctx, sqlHeadAndFence, threadID).Scan(&headID, &headSeq, &cur); err != nil {
		return 0, err
	}
	if cur.Int64 > fence {
		return 0, &flow.FencedError{ThreadID: threadID, Epoch: fence, Fence: cur.Int64}
	}
	if headID.String != want {
		return 0, &flow.ConflictError{ThreadID: threadID, Want: want, Head: headID.String}
	}
	return headSeq.Int64, nil
}

// insertCheckpoint inserts cp (encoded as row) at seq in tx; the head was
// moved past it by moveHead.
func (s *SQLite) insertCheckpoint(ctx context.Context, tx *sql.Tx, cp *flow.Checkpoint, seq int64, row checkpointRow) error {
	_, err := s.stmts.Tx(tx).ExecContext(ctx, sqlInsertCheckpoint, cp.ThreadID, cp.ID, seq, cp.Metadata.Step, cp.Metadata.Source, cp.Format,
		row.values, row.next, cp.Breakpoint, row.meta, row.created)
	return err
}

// head returns the id and seq of the thread's head, read outside any
// transaction: "" and 0 for a thread without checkpoints.
func (s *SQLite) head(ctx context.Context, threadID string) (string, int64, error) {
	var id string
	var seq int64
	err := s.stmts.QueryRowContext(ctx, sqlHead, threadID).Scan(&id, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	return id, seq, err
}

// hasCheckpoint reports whether the thread has the checkpoint, read outside
// any transaction.
func (s *SQLite) hasCheckpoint(ctx context.Context, threadID, checkpointID string) (bool, error) {
	var seq int64
	err := s.stmts.QueryRowContext(ctx, sqlSeqOf, threadID, checkpointID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// scanCheckpoint reads one row of checkpointColumns.
func scanCheckpoint(threadID string, row interface{ Scan(...any) error }) (*flow.Checkpoint, error) {
	cp := &flow.Checkpoint{ThreadID: threadID}
	var values, next, meta sql.NullString
	var created sql.NullInt64
	if err := row.Scan(&cp.ID, &cp.Seq, &cp.ParentID, &cp.Metadata.Step, &cp.Metadata.Source, &cp.Format,
		&values, &next, &cp.Breakpoint, &meta, &created); err != nil {
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
	// Writes and Waiting; a row converted from schema version 1 in another
	// layout also repeats source and step, with the columns' values.
	if meta.Valid {
		if err := json.Unmarshal([]byte(meta.String), &cp.Metadata); err != nil {
			return nil, fmt.Errorf("checkpoint %s/%s: metadata: %w", threadID, cp.ID, err)
		}
	}
	if created.Valid {
		cp.CreatedAt = time.Unix(0, created.Int64).UTC()
	}
	return cp, nil
}

// Get returns the checkpoint checkpointID of threadID, or the thread's head
// when checkpointID is "", with its pending writes ordered by (TaskID, Kind,
// Idx). Checkpoint and writes come from one statement, one snapshot of the
// file. An unknown thread or id gives (nil, nil).
func (s *SQLite) Get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error) {
	cp, err := s.get(ctx, threadID, checkpointID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", GetContext(threadID, checkpointID), err)
	}
	return cp, nil
}

func (s *SQLite) get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error) {
	// One statement (sqlGetHeadWrites, sqlGetByIDWrites) reads the
	// checkpoint and its writes from one snapshot of the file, without a
	// transaction of its own: a row per write, the first carrying the
	// checkpoint.
	query, args := sqlGetHeadWrites, []any{threadID, threadID}
	if checkpointID != "" {
		query, args = sqlGetByIDWrites, []any{threadID, checkpointID}
	}
	rows, err := s.stmts.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cp *flow.Checkpoint
	for rows.Next() {
		var row checkpointWriteRow
		c, err := row.scan(threadID, rows, cp == nil)
		if err != nil {
			return nil, err
		}
		if cp == nil {
			cp = c
		}
		if w, ok := row.write(); ok {
			cp.PendingWrites = append(cp.PendingWrites, w)
		}
	}
	return cp, rows.Err()
}

// checkpointWriteRow is one row of sqlGetHeadWrites: the checkpoint's
// columns (checkpointColumns), then those of one of its writes, NULL when
// it has none.
type checkpointWriteRow struct {
	task, kind, node, value sql.NullString
	idx                     sql.NullInt64
}

// scan reads the row; with first it returns the checkpoint the row
// carries, else it skips the checkpoint's columns (the same in every row)
// without copying them, and returns nil.
func (w *checkpointWriteRow) scan(threadID string, rows *sql.Rows, first bool) (*flow.Checkpoint, error) {
	if first {
		return scanCheckpoint(threadID, scanFunc(func(dest ...any) error {
			return rows.Scan(append(dest, &w.task, &w.kind, &w.idx, &w.node, &w.value)...)
		}))
	}
	var skip [checkpointColumnCount]sql.RawBytes
	dest := make([]any, 0, checkpointColumnCount+5)
	for i := range skip {
		dest = append(dest, &skip[i])
	}
	return nil, rows.Scan(append(dest, &w.task, &w.kind, &w.idx, &w.node, &w.value)...)
}

// write returns the write the row carries, if any.
func (w *checkpointWriteRow) write() (flow.Write, bool) {
	if !w.task.Valid {
		return flow.Write{}, false
	}
	fw := flow.Write{TaskID: w.task.String, Kind: w.kind.String, Idx: int(w.idx.Int64), Node: w.node.String}
	if w.value.Valid {
		fw.Value = json.RawMessage(w.value.String)
	}
	return fw, true
}

// scanFunc is a Scan method made of a function (scanCheckpoint's row).
type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// PutWrites saves writes against checkpoint checkpointID of threadID in one
// transaction. A write with the same (TaskID, Kind, Idx) as a stored one
// replaces it. An unknown checkpoint gives an error wrapping
// ErrUnknownCheckpoint and stores nothing.
func (s *SQLite) PutWrites(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	return s.putWritesTx(ctx, threadID, checkpointID, writes, false, s.putWrites)
}

// PutWritesDurable is PutWrites committed durably against power loss,
// together with every earlier commit (flow.DurableWriter).
func (s *SQLite) PutWritesDurable(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	return s.putWritesTx(ctx, threadID, checkpointID, writes, true, s.putWrites)
}

// PutWritesAtHead is PutWrites while checkpointID is the thread's head
// (flow.HeadWriter), compared in the same transaction, so across processes
// sharing the file: else it returns a *flow.ConflictError and stores
// nothing.
func (s *SQLite) PutWritesAtHead(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	return s.putWritesTx(ctx, threadID, checkpointID, writes, false, s.putWritesAtHead)
}

// putWritesTx validates writes and saves them with put in one transaction,
// durable as durable says (inTx). A *flow.ConflictError comes back as it
// is; other errors are wrapped with the checkpoint.
func (s *SQLite) putWritesTx(ctx context.Context, threadID, checkpointID string, writes []flow.Write, durable bool,
	put func(ctx context.Context, tx *sql.Tx, threadID, checkpointID string, writes []flow.Write, fence int64) error) error {
	if err := validateWrites(threadID, checkpointID, writes); err != nil {
		return err
	}
	fn := func(tx *sql.Tx) error { return put(ctx, tx, threadID, checkpointID, writes, s.fenceEpoch(threadID)) }
	if err := s.inTx(ctx, durable, fn); err != nil {
		if errors.Is(err, flow.ErrConflict) || errors.Is(err, flow.ErrFenced) {
			return err
		}
		return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, err)
	}
	return nil
}

// putWritesAtHead saves writes in tx against checkpointID, which must be
// the thread's head, else it returns a *flow.ConflictError; a fence of the
// thread above fence is a *flow.FencedError (noFence: not checked). tx
// began with BEGIN IMMEDIATE: the head cannot move before the commit.
func (s *SQLite) putWritesAtHead(ctx context.Context, tx *sql.Tx, threadID, checkpointID string, writes []flow.Write, fence int64) error {
	// The head's seq is the thread's head_seq (moveHead).
	seq, err := s.headAt(ctx, tx, threadID, checkpointID, fence)
	if err != nil {
		return err
	}
	return s.upsertWrites(ctx, tx, threadID, seq, writes)
}

// putWrites saves writes in tx against the checkpoint with id checkpointID,
// or returns ErrUnknownCheckpoint; a fence of the thread above fence is a
// *flow.FencedError (noFence: not checked).
func (s *SQLite) putWrites(ctx context.Context, tx *sql.Tx, threadID, checkpointID string, writes []flow.Write, fence int64) error {
	var seq, cur sql.NullInt64
	if err := s.stmts.Tx(tx).QueryRowContext(ctx, sqlSeqAndFence, threadID, checkpointID).Scan(&seq, &cur); err != nil {
		return err
	}
	if cur.Int64 > fence {
		return &flow.FencedError{ThreadID: threadID, Epoch: fence, Fence: cur.Int64}
	}
	if !seq.Valid {
		return ErrUnknownCheckpoint
	}
	return s.upsertWrites(ctx, tx, threadID, seq.Int64, writes)
}

// upsertWrites saves writes in tx against the checkpoint at seq, which
// exists in tx.
func (s *SQLite) upsertWrites(ctx context.Context, tx *sql.Tx, threadID string, seq int64, writes []flow.Write) error {
	q := s.stmts.Tx(tx)
	for _, w := range writes {
		var value sql.NullString
		if w.Value != nil {
			value = sql.NullString{String: string(w.Value), Valid: true}
		}
		if _, err := q.ExecContext(ctx, sqlUpsertWrite, threadID, seq, w.TaskID, w.Kind, w.Idx, w.Node, value); err != nil {
			return err
		}
	}
	return nil
}

// List returns the thread's checkpoints newest first (by Seq), without
// pending writes, narrowed by opts (all filters combine). An unknown thread,
// or an opts.Before id the thread does not have, gives an empty list.
func (s *SQLite) List(ctx context.Context, threadID string, opts flow.ListOptions) ([]*flow.Checkpoint, error) {
	out, err := s.list(ctx, threadID, opts)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints of %s: %w", threadID, err)
	}
	return out, nil
}

func (s *SQLite) list(ctx context.Context, threadID string, opts flow.ListOptions) ([]*flow.Checkpoint, error) {
	// At most 16 texts, one per combination of filters: each is prepared
	// once.
	q := `SELECT ` + checkpointColumns + ` FROM checkpoints c WHERE c.thread_id = ?`
	args := []any{threadID}
	if opts.Before != "" {
		// An unknown id makes the subquery NULL and the comparison false: no rows.
		q += ` AND c.seq < (SELECT seq FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?)`
		args = append(args, threadID, opts.Before)
	}
	if opts.Source != "" {
		q += ` AND c.source = ?`
		args = append(args, opts.Source)
	}
	if opts.Step != nil {
		q += ` AND c.step = ?`
		args = append(args, *opts.Step)
	}
	q += ` ORDER BY c.seq DESC`
	if opts.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, opts.Limit)
	}
	rows, err := s.stmts.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*flow.Checkpoint
	for rows.Next() {
		cp, err := scanCheckpoint(threadID, rows)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, rows.Err()
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
// transaction at synchronous=FULL (sqlite.Sync): that fsyncs the WAL file,
// which holds every earlier commit's frames too. The engine calls it once at
// the end of each run, before the caller can report what the run did.
func (s *SQLite) Sync(ctx context.Context) error {
	if err := sqlite.Sync(ctx, s.db, s.synchronous); err != nil {
		return fmt.Errorf("sync checkpoints: %w", err)
	}
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// loadMigrations parses migrations/NNNN_name.sql into a list ordered by
// version, checking the versions run 1, 2, 3 … without gaps.
var loadMigrations = sync.OnceValues(func() ([]sqlstore.Migration, error) {
	return sqlstore.LoadMigrations(migrationFiles, "migrations")
})
