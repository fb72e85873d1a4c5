package checkpoints

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"assistant/flow"
	"assistant/internal/sqlitedb"
)

var (
	_ flow.Checkpointer = (*Buffer)(nil)
	_ flow.WriteBuffer  = (*Buffer)(nil)
	_ flow.HeadWriter   = (*Buffer)(nil)
)

// Buffer is a flow.Checkpointer for a batch: Put and PutWrites are kept in
// memory, in the order they were called, and Flush writes them all to a
// SQLite store in one durable transaction. Many checkpoints then cost one
// commit and one fsync instead of one commit each.
//
//	buf := checkpoints.NewBuffer(store)
//	… run many threads with buf as their Checkpointer …
//	if err := buf.Flush(ctx); err != nil { … } // or buf.Discard()
//
// Until Flush, a Buffer behaves as a store holding base plus what it
// buffered: Put is a compare-and-set against the thread's head in base, or
// its newest buffered checkpoint (else a *flow.ConflictError); PutWrites
// needs a checkpoint that is buffered or in base (else ErrUnknownCheckpoint);
// Get and List see base and the buffered checkpoints, which are newer than
// every checkpoint of base. A checkpoint id already used by an older
// checkpoint of the thread in base is only found by Flush, which then fails.
//
// What is buffered is in this process only and dies with it. A Buffer is
// deliberately not a flow.Syncer or flow.DurableWriter: nothing it holds is
// durable, or visible to another process, before Flush returns nil.
//
// A Buffer is safe for concurrent use by goroutines. Its methods copy data
// in and out, as Memory's do. The zero value is not ready for use; call
// NewBuffer.
type Buffer struct {
	base *SQLite

	mu      sync.Mutex
	ops     []bufferedOp // every Put and PutWrites, in call order
	threads map[string]*bufferedThread
	n       int // buffered checkpoints
	// heads holds base's heads read by Preload ("" id: no checkpoint).
	heads map[string]baseHead
}

// baseHead is a thread's head in base as Preload read it.
type baseHead struct {
	id  string
	seq int64
	// cp is the head checkpoint with its pending writes, as Preload read
	// it (nil for a thread without one): a Get of the head of a thread
	// with nothing buffered returns a copy instead of asking base.
	cp *flow.Checkpoint
}

// bufferedOp is one buffered call: a Put when cp is set, else a PutWrites.
type bufferedOp struct {
	cp  *flow.Checkpoint // the stored copy, Seq set
	row checkpointRow    // cp's columns, encoded (and validated) at Put

	threadID, checkpointID string
	seq                    int64        // of a buffered checkpoint; 0: one in base, looked up at Flush
	writes                 []flow.Write // copies
	// atHead marks a PutWritesAtHead against a checkpoint of base: Flush
	// stores it only while that checkpoint is still base's head.
	atHead bool
}

// bufferedThread is what a thread has in the buffer.
type bufferedThread struct {
	checkpoints []*flow.Checkpoint // oldest first; Seq continues base's head
	index       map[string]int     // checkpoint id → index in checkpoints
	// writes holds the buffered pending writes by checkpoint id, of a
	// buffered checkpoint or of one in base.
	writes map[string]map[writeKey]flow.Write
}

// NewBuffer returns an empty Buffer over base. base stays open and usable;
// the caller closes it after the last Flush.
func NewBuffer(base *SQLite) *Buffer {
	return &Buffer{base: base, threads: make(map[string]*bufferedThread)}
}

// NewBuffer returns an empty Buffer over s (flow.Bufferer), as the
// function NewBuffer does: a caller that holds s as a flow.Checkpointer
// finds it by type assertion.
func (s *SQLite) NewBuffer() flow.WriteBuffer {
	return NewBuffer(s)
}

// errNoBase is returned by every method of a Buffer made with a nil store.
var errNoBase = errors.New("checkpoint buffer without a store: NewBuffer(nil)")

// Len returns how many checkpoints are buffered (Put since the last Flush
// or Discard); buffered PutWrites are not counted.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// Discard drops everything buffered. base is not touched.
func (b *Buffer) Discard() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reset()
}

func (b *Buffer) reset() {
	b.ops = nil
	b.threads = make(map[string]*bufferedThread)
	b.n = 0
	b.heads = nil
}

// Preload reads base's heads of threadIDs, each with its checkpoint and
// that checkpoint's pending writes, in one read transaction, so that the
// first Put of each, a Get of its head and a PutWritesAtHead need not ask
// base one by one: a chunk of rows that continue existing threads reads
// their heads once, not once per row and call. What it read holds until
// the next Flush or Discard; a head another process moves meanwhile is
// still caught, by Flush's compare-and-set. Errors: reading base.
func (b *Buffer) Preload(ctx context.Context, threadIDs []string) error {
	if b.base == nil {
		return errNoBase
	}
	heads, err := b.base.headCheckpoints(ctx, threadIDs)
	if err != nil {
		return fmt.Errorf("preload heads: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.heads == nil {
		b.heads = make(map[string]baseHead, len(threadIDs))
	}
	for _, id := range threadIDs {
		h := baseHead{}
		if cp := heads[id]; cp != nil {
			h = baseHead{id: cp.ID, seq: cp.Seq, cp: cp}
		}
		b.heads[id] = h // zero: no checkpoint
	}
	return nil
}

// baseHead returns threadID's head in base: preloaded, or read now.
func (b *Buffer) baseHead(ctx context.Context, threadID string) (string, int64, error) {
	if h, ok := b.heads[threadID]; ok {
		return h.id, h.seq, nil
	}
	return b.base.head(ctx, threadID)
}

// thread returns the buffer's entry for threadID, making it when missing.
func (b *Buffer) thread(threadID string) *bufferedThread {
	th := b.threads[threadID]
	if th == nil {
		th = &bufferedThread{index: make(map[string]int), writes: make(map[string]map[writeKey]flow.Write)}
		b.threads[threadID] = th
	}
	return th
}

// Put buffers a copy of cp as the new head of cp.ThreadID and sets cp.Seq.
// cp.ParentID must be the id of the thread's newest buffered checkpoint or,
// when none is buffered, of its head in base ("" for a new thread), else Put
// returns a *flow.ConflictError and buffers nothing. cp is validated as
// SQLite.Put validates it (JSON fields, CreatedAt range); a checkpoint id
// the buffer already holds for the thread is refused. cp.PendingWrites is
// ignored. Errors reading base's head are wrapped with the checkpoint.
func (b *Buffer) Put(ctx context.Context, cp *flow.Checkpoint) error {
	if b.base == nil {
		return errNoBase
	}
	row, err := encodeCheckpoint(cp)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()

	th := b.threads[cp.ThreadID]
	var headID string
	var headSeq int64
	if th != nil && len(th.checkpoints) > 0 {
		last := th.checkpoints[len(th.checkpoints)-1]
		headID, headSeq = last.ID, last.Seq
	} else if headID, headSeq, err = b.baseHead(ctx, cp.ThreadID); err != nil {
		return fmt.Errorf("put checkpoint %s/%s: read head: %w", cp.ThreadID, cp.ID, err)
	}
	if headID != cp.ParentID {
		return &flow.ConflictError{ThreadID: cp.ThreadID, Want: cp.ParentID, Head: headID}
	}
	th = b.thread(cp.ThreadID)
	if _, dup := th.index[cp.ID]; dup {
		return fmt.Errorf("put checkpoint %s/%s: checkpoint id already in use", cp.ThreadID, cp.ID)
	}
	stored := cloneCheckpoint(cp)
	stored.Seq = headSeq + 1
	th.index[stored.ID] = len(th.checkpoints)
	th.checkpoints = append(th.checkpoints, stored)
	b.ops = append(b.ops, bufferedOp{cp: stored, row: row})
	b.n++
	cp.Seq = stored.Seq
	return nil
}

// PutWrites buffers copies of writes against checkpoint checkpointID of
// threadID, which must be buffered or in base: else the error wraps
// ErrUnknownCheckpoint and nothing is buffered. A write with the same
// (TaskID, Kind, Idx) as an earlier one of that checkpoint replaces it.
func (b *Buffer) PutWrites(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	if b.base == nil {
		return errNoBase
	}
	if err := validateWrites(threadID, checkpointID, writes); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()

	th := b.threads[threadID]
	var seq int64
	if stored, buffered := th.lookup(checkpointID); buffered {
		seq = stored.Seq
	} else if h, ok := b.heads[threadID]; !ok || h.id != checkpointID || h.id == "" {
		ok, err := b.base.hasCheckpoint(ctx, threadID, checkpointID)
		if err != nil {
			return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, err)
		}
		if !ok {
			return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, ErrUnknownCheckpoint)
		}
	}
	copies := mergeWrites(b.thread(threadID).writes, checkpointID, writes)
	b.ops = append(b.ops, bufferedOp{threadID: threadID, checkpointID: checkpointID, seq: seq, writes: copies})
	return nil
}

// PutWritesAtHead buffers writes as PutWrites does, only while
// checkpointID is the thread's head as the buffer sees it (its newest
// buffered checkpoint, else base's head, preloaded or read now): else it
// returns a *flow.ConflictError (Want: checkpointID; Head: the head found)
// and buffers nothing (flow.HeadWriter). Writes against a checkpoint of
// base are checked again by Flush, in its transaction: if base's head moved
// meanwhile, Flush fails with that *flow.ConflictError and stores nothing.
func (b *Buffer) PutWritesAtHead(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	if b.base == nil {
		return errNoBase
	}
	if err := validateWrites(threadID, checkpointID, writes); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()

	th := b.threads[threadID]
	var seq int64
	headID := ""
	if stored, buffered := th.lookup(""); buffered {
		headID, seq = stored.ID, stored.Seq
	} else {
		var err error
		if headID, _, err = b.baseHead(ctx, threadID); err != nil {
			return fmt.Errorf("put writes %s/%s: read head: %w", threadID, checkpointID, err)
		}
	}
	if headID != checkpointID {
		return &flow.ConflictError{ThreadID: threadID, Want: checkpointID, Head: headID}
	}
	copies := mergeWrites(b.thread(threadID).writes, checkpointID, writes)
	b.ops = append(b.ops, bufferedOp{threadID: threadID, checkpointID: checkpointID, seq: seq, writes: copies, atHead: seq == 0})
	return nil
}

// lookup returns the buffered checkpoint with id checkpointID, or the newest
// buffered one when checkpointID is "". th may be nil.
func (th *bufferedThread) lookup(checkpointID string) (*flow.Checkpoint, bool) {
	if th == nil || len(th.checkpoints) == 0 {
		return nil, false
	}
	if checkpointID == "" {
		return th.checkpoints[len(th.checkpoints)-1], true
	}
	i, ok := th.index[checkpointID]
	if !ok {
		return nil, false
	}
	return th.checkpoints[i], true
}

// Get returns a copy of the checkpoint checkpointID of threadID, or of the
// thread's head when checkpointID is "", buffered or from base, with its
// pending writes (base's and the buffered ones, a buffered write replacing
// base's of the same key) ordered by (TaskID, Kind, Idx). An unknown thread
// or id gives (nil, nil). Errors of base are wrapped as SQLite.Get wraps
// them.
func (b *Buffer) Get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error) {
	if b.base == nil {
		return nil, errNoBase
	}
	b.mu.Lock()
	defer b.mu.Unlock()

	th := b.threads[threadID]
	var cp *flow.Checkpoint
	if stored, ok := th.lookup(checkpointID); ok {
		cp = cloneCheckpoint(stored)
	} else if h, ok := b.heads[threadID]; ok && (checkpointID == "" || checkpointID == h.id) {
		if h.cp == nil {
			return nil, nil // preloaded: no checkpoint in base
		}
		cp = cloneCheckpoint(h.cp)
		for _, w := range h.cp.PendingWrites {
			cp.PendingWrites = append(cp.PendingWrites, cloneWrite(w))
		}
	} else {
		var err error
		if cp, err = b.base.Get(ctx, threadID, checkpointID); err != nil || cp == nil {
			return nil, err
		}
	}
	if th == nil || len(th.writes[cp.ID]) == 0 {
		return cp, nil
	}
	ws := th.writes[cp.ID]
	merged := slices.DeleteFunc(cp.PendingWrites, func(w flow.Write) bool {
		_, replaced := ws[writeKey{w.TaskID, w.Kind, w.Idx}]
		return replaced
	})
	for _, w := range ws {
		merged = append(merged, cloneWrite(w))
	}
	slices.SortFunc(merged, compareWrites)
	cp.PendingWrites = merged
	return cp, nil
}

// List returns copies of the thread's checkpoints newest first (by Seq):
// the buffered ones, then base's, without pending writes, narrowed by opts
// as SQLite.List narrows them. An unknown thread, or an opts.Before id that
// is neither buffered nor in base, gives an empty list.
func (b *Buffer) List(ctx context.Context, threadID string, opts flow.ListOptions) ([]*flow.Checkpoint, error) {
	if b.base == nil {
		return nil, errNoBase
	}
	b.mu.Lock()
	defer b.mu.Unlock()

	out, baseOpts, full := b.threads[threadID].list(opts)
	if full {
		return out, nil
	}
	more, err := b.base.List(ctx, threadID, baseOpts)
	if err != nil {
		return nil, err
	}
	return append(out, more...), nil
}

// list returns copies of the buffered checkpoints that opts selects, newest
// first; the options that select the rest from base, whose checkpoints are
// all older than the buffered ones; and full, true when opts.Limit is
// reached so base need not be asked. th may be nil.
func (th *bufferedThread) list(opts flow.ListOptions) (out []*flow.Checkpoint, baseOpts flow.ListOptions, full bool) {
	baseOpts = opts
	end := 0 // exclusive
	if th != nil {
		end = len(th.checkpoints)
	}
	if opts.Before != "" {
		end = 0 // in base, or nowhere: base decides
		if stored, ok := th.lookup(opts.Before); ok {
			end = th.index[stored.ID]
			baseOpts.Before = "" // every checkpoint of base is older
		}
	}
	for i := end - 1; i >= 0 && (opts.Limit <= 0 || len(out) < opts.Limit); i-- {
		if cp := th.checkpoints[i]; matches(cp, opts) {
			out = append(out, cloneCheckpoint(cp))
		}
	}
	if opts.Limit > 0 {
		if len(out) == opts.Limit {
			return out, baseOpts, true
		}
		baseOpts.Limit = opts.Limit - len(out)
	}
	return out, baseOpts, false
}

// DeleteThread drops what is buffered for the thread, then deletes the
// thread from base at once (SQLite.DeleteThread, its own transaction: not
// part of the next Flush). Other threads' buffered entries stay. Deleting
// a thread that does not exist is a no-op.
func (b *Buffer) DeleteThread(ctx context.Context, threadID string) error {
	if b.base == nil {
		return errNoBase
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.heads, threadID) // its preloaded head is gone with it
	if th := b.threads[threadID]; th != nil {
		b.n -= len(th.checkpoints)
		delete(b.threads, threadID)
		b.ops = slices.DeleteFunc(b.ops, func(op bufferedOp) bool {
			return op.threadID == threadID || (op.cp != nil && op.cp.ThreadID == threadID)
		})
	}
	return b.base.DeleteThread(ctx, threadID)
}

// Flush writes everything buffered to base in one write transaction,
// committed durably against power loss (sqlitedb.DurableTx at base's
// synchronous level), then empties the buffer. In the transaction each
// thread's head is compared with the parent of its first buffered
// checkpoint and moved to its last, once per thread; then checkpoints and
// writes are inserted in call order, so a later write of a key replaces an
// earlier one. If another process (or another user of base) moved a
// thread's head since, Flush returns an error wrapping that
// *flow.ConflictError and stores nothing; a PutWrites whose checkpoint in
// base is gone fails with ErrUnknownCheckpoint the same way. On any error
// the transaction rolls back and the buffer keeps everything, so Flush may
// be tried again (after SQLITE_BUSY, say) or the buffer discarded. An empty
// buffer commits nothing.
func (b *Buffer) Flush(ctx context.Context) error {
	if b.base == nil {
		return errNoBase
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ops) == 0 {
		return nil
	}
	err := sqlitedb.DurableTx(ctx, b.base.db, b.base.synchronous, func(tx *sql.Tx) error {
		return b.write(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("flush %d buffered checkpoints: %w", b.n, err)
	}
	b.reset()
	return nil
}

// write writes the buffer in tx (see Flush).
func (b *Buffer) write(ctx context.Context, tx *sql.Tx) error {
	// Writes saved at base's head need it to be the head still, checked
	// before any head moves.
	for _, op := range b.ops {
		if !op.atHead {
			continue
		}
		headID, _, err := b.base.headIn(ctx, tx, op.threadID)
		if err != nil {
			return fmt.Errorf("put writes %s/%s: read head: %w", op.threadID, op.checkpointID, err)
		}
		if headID != op.checkpointID {
			return &flow.ConflictError{ThreadID: op.threadID, Want: op.checkpointID, Head: headID}
		}
	}
	// Heads first, in the order of each thread's first buffered checkpoint:
	// a checkpoint row needs its thread's row (foreign key).
	moved := make(map[string]bool, len(b.threads))
	for _, op := range b.ops {
		if op.cp == nil || moved[op.cp.ThreadID] {
			continue
		}
		moved[op.cp.ThreadID] = true
		cps := b.threads[op.cp.ThreadID].checkpoints
		first, last := cps[0], cps[len(cps)-1]
		seq, err := b.base.moveHead(ctx, tx, first.ThreadID, first.ParentID, last.ID, int64(len(cps)))
		var ce *flow.ConflictError
		if errors.As(err, &ce) {
			return err
		}
		if err != nil {
			return fmt.Errorf("move head of %s: %w", first.ThreadID, err)
		}
		if seq != first.Seq {
			// The head has the buffered parent's id at another seq: the
			// thread was deleted and made again meanwhile.
			return fmt.Errorf("move head of %s: checkpoint %s would be seq %d, buffered as seq %d: the thread was made again",
				first.ThreadID, first.ID, seq, first.Seq)
		}
	}
	for _, op := range b.ops {
		var err error
		switch {
		case op.cp != nil:
			if err = b.base.insertCheckpoint(ctx, tx, op.cp, op.cp.Seq, op.row); err != nil {
				return fmt.Errorf("put checkpoint %s/%s: %w", op.cp.ThreadID, op.cp.ID, err)
			}
			continue
		case op.seq > 0: // a buffered checkpoint, inserted above
			err = b.base.upsertWrites(ctx, tx, op.threadID, op.seq, op.writes)
		default:
			err = b.base.putWrites(ctx, tx, op.threadID, op.checkpointID, op.writes)
		}
		if err != nil {
			return fmt.Errorf("put writes %s/%s: %w", op.threadID, op.checkpointID, err)
		}
	}
	return nil
}

// headIn is threadID's head in tx ("" and 0 for a thread without one).
func (s *SQLite) headIn(ctx context.Context, tx *sql.Tx, threadID string) (string, int64, error) {
	var id string
	var seq int64
	err := s.stmts.Tx(tx).QueryRowContext(ctx, sqlHead, threadID).Scan(&id, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	return id, seq, err
}

// Reading the heads of many threads at once (Buffer.Preload): the ids go
// in as one JSON array (json_each), so each statement is the same for any
// number of them.
const (
	sqlHeadCheckpoints = `SELECT c.thread_id, ` + checkpointColumns + ` FROM threads t
		JOIN checkpoints c ON c.thread_id = t.thread_id AND c.seq = t.head_seq
		WHERE t.thread_id IN (SELECT value FROM json_each(?))`
	sqlHeadWrites = `SELECT w.thread_id, w.task_id, w.kind, w.idx, w.node, w.value_json FROM threads t
		JOIN writes w ON w.thread_id = t.thread_id AND w.seq = t.head_seq
		WHERE t.thread_id IN (SELECT value FROM json_each(?))
		ORDER BY w.thread_id, w.task_id, w.kind, w.idx`
)

// headCheckpoints returns the head checkpoints, with their pending writes,
// of the threads among threadIDs that have one, read in one read
// transaction outside any write transaction.
func (s *SQLite) headCheckpoints(ctx context.Context, threadIDs []string) (map[string]*flow.Checkpoint, error) {
	ids, err := json.Marshal(threadIDs)
	if err != nil {
		return nil, err
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // plain BEGIN: readers do not take the write lock
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	q := s.stmts.Tx(tx)
	out := make(map[string]*flow.Checkpoint, len(threadIDs))
	rows, err := q.QueryContext(ctx, sqlHeadCheckpoints, string(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		cp, err := scanCheckpoint("", threadRow{rows, &id})
		if err != nil {
			return nil, err
		}
		cp.ThreadID = id
		out[id] = cp
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	ws, err := q.QueryContext(ctx, sqlHeadWrites, string(ids))
	if err != nil {
		return nil, err
	}
	defer ws.Close()
	for ws.Next() {
		var id string
		var w flow.Write
		var value sql.NullString
		if err := ws.Scan(&id, &w.TaskID, &w.Kind, &w.Idx, &w.Node, &value); err != nil {
			return nil, err
		}
		if value.Valid {
			w.Value = json.RawMessage(value.String)
		}
		if cp := out[id]; cp != nil {
			cp.PendingWrites = append(cp.PendingWrites, w)
		}
	}
	return out, ws.Err()
}

// threadRow scans a row whose first column is the thread id into id and
// the rest into what Scan is given.
type threadRow struct {
	rows *sql.Rows
	id   *string
}

// Scan scans the thread id, then dest.
func (r threadRow) Scan(dest ...any) error {
	return r.rows.Scan(append([]any{r.id}, dest...)...)
}
