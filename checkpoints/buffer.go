package checkpoints

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"assistant/flow"
	"assistant/internal/sqlite"
)

var (
	_ flow.Checkpointer = (*Buffer)(nil)
	_ flow.WriteBuffer  = (*Buffer)(nil)
	_ flow.HeadWriter   = (*Buffer)(nil)
	_ BufferBase        = sqliteBase{}
)

// Buffer is a flow.Checkpointer for a batch: Put and PutWrites are kept in
// memory, in the order they were called, and Flush writes them all to the
// store below (its BufferBase: a SQLite store, or the PostgreSQL store of
// checkpoints/postgres) in one durable transaction. Many checkpoints then
// cost one commit (and one fsync) instead of one commit each.
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
// A Buffer over a fenced view of a store (flow.Fencer's Fenced) is fenced
// as the view's own writes are: Flush checks the thread's fence in its
// transaction and, when a newer holder raised it, returns a
// *flow.FencedError and stores nothing.
//
// A Buffer is safe for concurrent use by goroutines. Its methods copy data
// in and out, as Memory's do. The zero value is not ready for use; call
// NewBuffer or NewBufferOver.
type Buffer struct {
	base BufferBase

	mu      sync.Mutex
	order   []string // thread ids, in the order of their first buffered call
	threads map[string]*bufferedThread
	n       int // buffered checkpoints
	// heads holds base's heads read by Preload ("" id: no checkpoint).
	heads map[string]baseHead
}

// BufferBase is the store a Buffer reads from and flushes into: the part
// of a write buffer that differs from store to store. The Buffer keeps
// what is buffered and answers from it; it asks base only for what base
// holds (heads, checkpoints, lists) and hands it everything buffered at
// Flush. Implementations live beside their stores (this package's SQLite,
// checkpoints/postgres). Every method is safe for concurrent use.
type BufferBase interface {
	// Get, List and DeleteThread are flow.Checkpointer's.
	Get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error)
	List(ctx context.Context, threadID string, opts flow.ListOptions) ([]*flow.Checkpoint, error)
	DeleteThread(ctx context.Context, threadID string) error
	// Head returns the id and seq of the thread's head: "" and 0 for a
	// thread without checkpoints.
	Head(ctx context.Context, threadID string) (id string, seq int64, err error)
	// HasCheckpoint reports whether the thread has the checkpoint.
	HasCheckpoint(ctx context.Context, threadID, checkpointID string) (bool, error)
	// HeadCheckpoints returns the head checkpoints, with their pending
	// writes ordered by (TaskID, Kind, Idx), of the threads among
	// threadIDs that have one, read in one snapshot.
	HeadCheckpoints(ctx context.Context, threadIDs []string) (map[string]*flow.Checkpoint, error)
	// WriteBuffered writes threads in one transaction, durable against
	// power loss when it returns nil, or stores nothing. In it, for each
	// thread: its head must be Parent (else a *flow.ConflictError) and
	// moves to its last checkpoint, the first of which must get the Seq it
	// was buffered with (else an error: the thread was made again); every
	// id of AtHead must be the head before it moves (else a
	// *flow.ConflictError); every checkpoint of base that Writes names must
	// exist (else an error wrapping ErrUnknownCheckpoint). A fenced view
	// checks its thread's fence as its own writes do (*flow.FencedError).
	WriteBuffered(ctx context.Context, threads []BufferedThread) error
}

// BufferedThread is what a Buffer flushes of one thread.
type BufferedThread struct {
	ThreadID string
	// Parent is the head in base that the first of Checkpoints continues
	// ("" for a new thread). It means nothing without Checkpoints.
	Parent string
	// Checkpoints are the thread's buffered checkpoints, oldest first,
	// each with its Seq (the first's is one above base's head as the
	// buffer saw it) and without PendingWrites. Shared: not to be changed.
	Checkpoints []*flow.Checkpoint
	// AtHead holds the checkpoints of base that PutWritesAtHead wrote
	// against: each must still be base's head.
	AtHead []string
	// Writes are the buffered pending writes, by checkpoint.
	Writes []BufferedWrites

	rows []checkpointRow // Checkpoints' columns for SQLite, encoded at Put
}

// EncodedJSON returns the Next and Metadata (its writes and waiting) of
// Checkpoints[i] as every store keeps them, encoded and validated by Put:
// JSON text, or nil for a nil Next and for Metadata without writes and
// waiting. A store's flush uses them instead of encoding again.
func (th BufferedThread) EncodedJSON(i int) (next, metadata *string) {
	row := th.rows[i]
	if row.next.Valid {
		next = &row.next.String
	}
	if row.meta.Valid {
		metadata = &row.meta.String
	}
	return next, metadata
}

// BufferedWrites are the buffered pending writes of one checkpoint: a
// later write of a (TaskID, Kind, Idx) has replaced an earlier one, and
// they are ordered by that key. Writes may be empty: the checkpoint must
// exist all the same.
type BufferedWrites struct {
	CheckpointID string
	// Seq is the seq of a buffered checkpoint; 0 for a checkpoint of
	// base, which the store looks up in its transaction.
	Seq    int64
	Writes []flow.Write
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

// bufferedThread is what a thread has in the buffer.
type bufferedThread struct {
	checkpoints []*flow.Checkpoint // oldest first; Seq continues base's head
	rows        []checkpointRow    // checkpoints' columns, encoded (and validated) at Put
	index       map[string]int     // checkpoint id → index in checkpoints
	// writes holds the buffered pending writes by checkpoint id, of a
	// buffered checkpoint or of one in base.
	writes map[string]map[writeKey]flow.Write
	// atHead lists the checkpoints of base that PutWritesAtHead wrote
	// against (Flush stores those writes only while each is base's head).
	atHead []string
}

// NewBuffer returns an empty Buffer over the SQLite store base. base stays
// open and usable; the caller closes it after the last Flush. Flush
// commits durably (sqlite.DurableTx at base's synchronous level).
func NewBuffer(base *SQLite) *Buffer {
	if base == nil {
		return NewBufferOver(nil)
	}
	return NewBufferOver(sqliteBase{base})
}

// NewBufferOver returns an empty Buffer over base, any store's
// BufferBase (nil: every method fails). base stays open and usable.
func NewBufferOver(base BufferBase) *Buffer {
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
	b.order = nil
	b.threads = make(map[string]*bufferedThread)
	b.n = 0
	b.heads = nil
}

// Preload reads base's heads of threadIDs, each with its checkpoint and
// that checkpoint's pending writes, in one read, so that the first Put of
// each, a Get of its head and a PutWritesAtHead need not ask base one by
// one: a chunk of rows that continue existing threads reads their heads
// once, not once per row and call. What it read holds until the next
// Flush or Discard; a head another process moves meanwhile is still
// caught, by Flush's compare-and-set. Errors: reading base.
func (b *Buffer) Preload(ctx context.Context, threadIDs []string) error {
	if b.base == nil {
		return errNoBase
	}
	heads, err := b.base.HeadCheckpoints(ctx, threadIDs)
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
	return b.base.Head(ctx, threadID)
}

// thread returns the buffer's entry for threadID, making it when missing.
func (b *Buffer) thread(threadID string) *bufferedThread {
	th := b.threads[threadID]
	if th == nil {
		th = &bufferedThread{index: make(map[string]int), writes: make(map[string]map[writeKey]flow.Write)}
		b.threads[threadID] = th
		b.order = append(b.order, threadID)
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
	if th != nil {
		if _, dup := th.index[cp.ID]; dup {
			return fmt.Errorf("put checkpoint %s/%s: checkpoint id already in use", cp.ThreadID, cp.ID)
		}
	}
	th = b.thread(cp.ThreadID)
	stored := cloneCheckpoint(cp)
	stored.Seq = headSeq + 1
	th.index[stored.ID] = len(th.checkpoints)
	th.checkpoints = append(th.checkpoints, stored)
	th.rows = append(th.rows, row)
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
	if _, buffered := th.lookup(checkpointID); !buffered {
		if h, ok := b.heads[threadID]; !ok || h.id != checkpointID || h.id == "" {
			ok, err := b.base.HasCheckpoint(ctx, threadID, checkpointID)
			if err != nil {
				return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, err)
			}
			if !ok {
				return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, ErrUnknownCheckpoint)
			}
		}
	}
	mergeWrites(b.thread(threadID).writes, checkpointID, writes)
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
	headID := ""
	stored, buffered := th.lookup("")
	if buffered {
		headID = stored.ID
	} else {
		var err error
		if headID, _, err = b.baseHead(ctx, threadID); err != nil {
			return fmt.Errorf("put writes %s/%s: read head: %w", threadID, checkpointID, err)
		}
	}
	if headID != checkpointID {
		return &flow.ConflictError{ThreadID: threadID, Want: checkpointID, Head: headID}
	}
	th = b.thread(threadID)
	if !buffered && !slices.Contains(th.atHead, checkpointID) {
		th.atHead = append(th.atHead, checkpointID)
	}
	mergeWrites(th.writes, checkpointID, writes)
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
// or id gives (nil, nil). Errors of base are wrapped as base's Get wraps
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
// thread from base at once (base's DeleteThread, its own transaction: not
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
		b.order = slices.DeleteFunc(b.order, func(id string) bool { return id == threadID })
	}
	return b.base.DeleteThread(ctx, threadID)
}

// Flush writes everything buffered to base in one transaction, committed
// durably against power loss, then empties the buffer. In the transaction
// each thread's head is compared with the parent of its first buffered
// checkpoint and moved to its last, once per thread; then checkpoints and
// writes are inserted, a later write of a key replacing an earlier one. If
// another process (or another user of base) moved a thread's head since,
// Flush returns an error wrapping that *flow.ConflictError and stores
// nothing; a PutWrites whose checkpoint in base is gone fails with
// ErrUnknownCheckpoint the same way, and a Buffer over a fenced view whose
// thread a newer holder fenced with a *flow.FencedError. On any error the
// transaction rolls back and the buffer keeps everything, so Flush may be
// tried again (after SQLITE_BUSY, say) or the buffer discarded. An empty
// buffer commits nothing.
func (b *Buffer) Flush(ctx context.Context) error {
	if b.base == nil {
		return errNoBase
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.order) == 0 {
		return nil
	}
	if err := b.base.WriteBuffered(ctx, b.pending()); err != nil {
		return fmt.Errorf("flush %d buffered checkpoints: %w", b.n, err)
	}
	b.reset()
	return nil
}

// pending returns what is buffered, thread by thread in the order of their
// first buffered call: checkpoints oldest first, then the writes of
// buffered checkpoints by seq and those of base's checkpoints by id.
func (b *Buffer) pending() []BufferedThread {
	out := make([]BufferedThread, 0, len(b.order))
	for _, id := range b.order {
		th := b.threads[id]
		bt := BufferedThread{ThreadID: id, Checkpoints: th.checkpoints, AtHead: th.atHead, rows: th.rows}
		if len(th.checkpoints) > 0 {
			bt.Parent = th.checkpoints[0].ParentID
		}
		for cpID, ws := range th.writes {
			bw := BufferedWrites{CheckpointID: cpID, Writes: make([]flow.Write, 0, len(ws))}
			if stored, ok := th.lookup(cpID); ok {
				bw.Seq = stored.Seq
			}
			for _, w := range ws {
				bw.Writes = append(bw.Writes, w)
			}
			slices.SortFunc(bw.Writes, compareWrites)
			bt.Writes = append(bt.Writes, bw)
		}
		slices.SortFunc(bt.Writes, func(x, y BufferedWrites) int {
			if x.Seq != y.Seq {
				if x.Seq == 0 || y.Seq == 0 {
					return int(y.Seq - x.Seq) // base's (0) after buffered ones; only the sign counts
				}
				return int(x.Seq - y.Seq)
			}
			return strings.Compare(x.CheckpointID, y.CheckpointID)
		})
		out = append(out, bt)
	}
	return out
}

// sqliteBase is the BufferBase of a SQLite store.
type sqliteBase struct{ *SQLite }

// Head returns the thread's head, read outside any transaction.
func (s sqliteBase) Head(ctx context.Context, threadID string) (string, int64, error) {
	return s.head(ctx, threadID)
}

// HasCheckpoint reports whether the thread has the checkpoint.
func (s sqliteBase) HasCheckpoint(ctx context.Context, threadID, checkpointID string) (bool, error) {
	return s.hasCheckpoint(ctx, threadID, checkpointID)
}

// HeadCheckpoints reads the heads of threadIDs in one read transaction.
func (s sqliteBase) HeadCheckpoints(ctx context.Context, threadIDs []string) (map[string]*flow.Checkpoint, error) {
	return s.headCheckpoints(ctx, threadIDs)
}

// WriteBuffered writes threads in one write transaction committed durably
// (sqlite.DurableTx at the store's synchronous level); on a fenced view,
// its thread's fence is checked first, in the transaction.
func (s sqliteBase) WriteBuffered(ctx context.Context, threads []BufferedThread) error {
	write := func(tx *sql.Tx) error { return s.writeBuffered(ctx, tx, threads) }
	if s.fence != nil && slices.ContainsFunc(threads, func(th BufferedThread) bool { return th.ThreadID == s.fence.thread }) {
		write = s.checkFence(ctx, s.fence.thread, write)
	}
	return sqlite.DurableTx(ctx, s.db, s.synchronous, write)
}

// writeBuffered writes threads in tx (see BufferBase.WriteBuffered).
func (s *SQLite) writeBuffered(ctx context.Context, tx *sql.Tx, threads []BufferedThread) error {
	// Writes saved at base's head need it to be the head still, checked
	// before any head moves. A thread that also has checkpoints to add
	// after that head needs no read: moveHead moves its head only from
	// th.Parent, in the same statement (a decide row: one read fewer).
	for _, th := range threads {
		for _, id := range th.AtHead {
			if len(th.Checkpoints) > 0 && id == th.Parent {
				continue
			}
			headID, _, err := s.headIn(ctx, tx, th.ThreadID)
			if err != nil {
				return fmt.Errorf("put writes %s/%s: read head: %w", th.ThreadID, id, err)
			}
			if headID != id {
				return &flow.ConflictError{ThreadID: th.ThreadID, Want: id, Head: headID}
			}
		}
	}
	// Heads first, in the order of the threads: a checkpoint row needs its
	// thread's row (foreign key).
	for _, th := range threads {
		if len(th.Checkpoints) == 0 {
			continue
		}
		first, last := th.Checkpoints[0], th.Checkpoints[len(th.Checkpoints)-1]
		seq, err := s.moveHead(ctx, tx, th.ThreadID, th.Parent, last.ID, int64(len(th.Checkpoints)), noFence)
		var ce *flow.ConflictError
		if errors.As(err, &ce) {
			return err
		}
		if err != nil {
			return fmt.Errorf("move head of %s: %w", th.ThreadID, err)
		}
		if seq != first.Seq {
			// The head has the buffered parent's id at another seq: the
			// thread was deleted and made again meanwhile.
			return fmt.Errorf("move head of %s: checkpoint %s would be seq %d, buffered as seq %d: the thread was made again",
				th.ThreadID, first.ID, seq, first.Seq)
		}
	}
	for _, th := range threads {
		for i, cp := range th.Checkpoints {
			if err := s.insertCheckpoint(ctx, tx, cp, cp.Seq, th.rows[i]); err != nil {
				return fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
			}
		}
		for _, bw := range th.Writes {
			var err error
			switch {
			case bw.Seq > 0: // a buffered checkpoint, inserted above
				err = s.upsertWrites(ctx, tx, th.ThreadID, bw.Seq, bw.Writes)
			case len(th.Checkpoints) > 0 && bw.CheckpointID == th.Parent:
				// The head the buffered checkpoints follow, which moveHead
				// found at the seq before the first of them.
				err = s.upsertWrites(ctx, tx, th.ThreadID, th.Checkpoints[0].Seq-1, bw.Writes)
			default:
				err = s.putWrites(ctx, tx, th.ThreadID, bw.CheckpointID, bw.Writes, noFence) // the fence: WriteBuffered
			}
			if err != nil {
				return fmt.Errorf("put writes %s/%s: %w", th.ThreadID, bw.CheckpointID, err)
			}
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
