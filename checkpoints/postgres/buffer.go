package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"assistant/checkpoints"
	"assistant/flow"
)

var (
	_ flow.Bufferer          = (*Store)(nil)
	_ checkpoints.BufferBase = bufferBase{}
)

// NewBuffer returns an empty write buffer over s (flow.Bufferer): a
// *checkpoints.Buffer, which keeps Put and PutWrites in memory, whose
// Flush writes them all to the server in one transaction with a handful
// of set-based statements (bufferBase.WriteBuffered). A buffer made from a
// fenced view (Fenced) is fenced as the view's writes are.
func (s *Store) NewBuffer() flow.WriteBuffer {
	return checkpoints.NewBufferOver(bufferBase{s})
}

// bufferBase is the checkpoints.BufferBase of a Store.
type bufferBase struct{ *Store }

// The statements of a buffer. Arrays carry any number of rows, so each is
// one statement, prepared once per session, for a chunk of any size.
const (
	sqlHead = `SELECT head_id, head_seq FROM checkpoints.threads WHERE thread_id = $1`
	// sqlHeadCheckpoints reads the head checkpoints of many threads with
	// their pending writes (Preload), in one statement: one snapshot.
	sqlHeadCheckpoints = `SELECT c.thread_id, ` + checkpointColumns + `, w.task_ids, w.kinds, w.idxs, w.nodes, w.vals
	FROM unnest($1::text[]) AS u (thread_id)
	JOIN checkpoints.threads t ON t.thread_id = u.thread_id
	JOIN checkpoints.checkpoints c ON c.thread_id = t.thread_id AND c.seq = t.head_seq
	` + sqlPendingWrites

	// sqlLockThreads locks the rows of the threads a flush writes to, in
	// the order of their ids, and reads their heads: every flusher locks
	// in that one order, so two never wait for each other in a circle.
	// NO KEY UPDATE is the lock an UPDATE of the head takes: a Put waits
	// for the flush, a PutWrites (KEY SHARE of its checkpoint) does not.
	sqlLockThreads = `SELECT t.thread_id, t.head_id, t.head_seq
	FROM unnest($1::text[]) AS u (thread_id) JOIN checkpoints.threads t ON t.thread_id = u.thread_id
	ORDER BY t.thread_id FOR NO KEY UPDATE OF t`
	// sqlNewThreads starts the threads whose first checkpoint is
	// buffered, in the order of their ids, and returns the ids of those it
	// made: a thread another writer started meanwhile is not among them.
	sqlNewThreads = `INSERT INTO checkpoints.threads (thread_id, head_id, head_seq)
	SELECT u.thread_id, u.head_id, u.head_seq
	FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u (thread_id, head_id, head_seq)
	ORDER BY u.thread_id
	ON CONFLICT (thread_id) DO NOTHING
	RETURNING thread_id`
	// sqlLockCheckpoints reads the seqs of checkpoints already stored that
	// buffered writes name, locked KEY SHARE (as PutWrites locks them):
	// not deleted before the commit.
	sqlLockCheckpoints = `SELECT c.thread_id, c.checkpoint_id, c.seq
	FROM checkpoints.checkpoints c
	JOIN unnest($1::text[], $2::text[]) AS u (thread_id, checkpoint_id)
	  ON c.thread_id = u.thread_id AND c.checkpoint_id = u.checkpoint_id
	ORDER BY c.thread_id, c.seq FOR KEY SHARE OF c`
	// sqlMoveHeads moves the heads of continued threads, each guarded by
	// the head it continues (locked by sqlLockThreads already).
	sqlMoveHeads = `UPDATE checkpoints.threads t SET head_id = u.head_id, head_seq = u.head_seq, updated_at = now()
	FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS u (thread_id, parent_id, head_id, head_seq, n)
	WHERE t.thread_id = u.thread_id AND t.head_id = u.parent_id AND t.head_seq = u.head_seq - u.n`
	sqlInsertCheckpoints = `INSERT INTO checkpoints.checkpoints (thread_id, checkpoint_id, seq, step, source, format,
		values_json, next_json, breakpoint, metadata_json, created_at)
	SELECT u.thread_id, u.checkpoint_id, u.seq, u.step, u.source, u.format,
		u.values_json::json, u.next_json::json, u.breakpoint, u.metadata_json::json, u.created_at
	FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::bigint[],
		$7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[])
	  AS u (thread_id, checkpoint_id, seq, step, source, format, values_json, next_json, breakpoint, metadata_json, created_at)`
	// sqlUpsertBufferedWrites saves the writes, one row per key (the
	// buffer merged them), in key order: write rows are locked last and in
	// one order.
	sqlUpsertBufferedWrites = `INSERT INTO checkpoints.writes (thread_id, seq, task_id, kind, idx, node, value_json)
	SELECT u.thread_id, u.seq, u.task_id, u.kind, u.idx, u.node, u.value::json
	FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[])
	  AS u (thread_id, seq, task_id, kind, idx, node, value)
	ORDER BY 1, 2, 3, 4, 5
	ON CONFLICT (thread_id, seq, task_id, kind, idx)
	DO UPDATE SET node = excluded.node, value_json = excluded.value_json`
)

// Head returns the thread's head ("" and 0 for a thread without one).
func (b bufferBase) Head(ctx context.Context, threadID string) (string, int64, error) {
	var id string
	var seq int64
	err := b.pool.QueryRow(ctx, sqlHead, threadID).Scan(&id, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, nil
	}
	return id, seq, err
}

// HasCheckpoint reports whether the thread has the checkpoint.
func (b bufferBase) HasCheckpoint(ctx context.Context, threadID, checkpointID string) (bool, error) {
	var ok bool
	err := b.pool.QueryRow(ctx, sqlHasCheckpoint, threadID, checkpointID).Scan(&ok)
	return ok, err
}

// HeadCheckpoints reads the heads of threadIDs, with their pending
// writes, in one statement.
func (b bufferBase) HeadCheckpoints(ctx context.Context, threadIDs []string) (map[string]*flow.Checkpoint, error) {
	rows, err := b.pool.Query(ctx, sqlHeadCheckpoints, threadIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]*flow.Checkpoint, len(threadIDs))
	for rows.Next() {
		var id string
		cp, err := scanCheckpoint("", threadRow{rows, &id}, true)
		if err != nil {
			return nil, err
		}
		cp.ThreadID = id
		out[id] = cp
	}
	return out, rows.Err()
}

// threadRow scans a row whose first column is the thread id into id and
// the rest into what Scan is given.
type threadRow struct {
	rows pgx.Rows
	id   *string
}

// Scan scans the thread id, then dest.
func (r threadRow) Scan(dest ...any) error {
	return r.rows.Scan(append([]any{r.id}, dest...)...)
}

// WriteBuffered writes threads in one transaction of four round trips
// (BEGIN, the locks, the writes, COMMIT), whatever their number: the
// rows of each table go in as arrays (unnest). Locks are taken in the
// store's order: the threads' rows (by id), then the checkpoints that
// buffered writes name, then the write rows (by key). Every commit of the
// store is durable when it returns (synchronous_commit = on).
func (b bufferBase) WriteBuffered(ctx context.Context, threads []checkpoints.BufferedThread) error {
	f := planFlush(threads)
	return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if err := b.lock(ctx, tx, f); err != nil {
			return err
		}
		return f.write(ctx, tx)
	})
}

// flush is a buffer's content as the statements' arrays.
type flush struct {
	threads []checkpoints.BufferedThread
	ids     []string // every thread, sorted
	// The threads whose first checkpoint is buffered, and the continued
	// ones: id, parent, new head and its seq, number of checkpoints.
	newIDs, newHeads                   []string
	newSeqs                            []int64
	movedIDs, movedParents, movedHeads []string
	movedSeqs, movedN                  []int64
	// Checkpoints, column by column.
	cpThreads, cpIDs, cpSources, cpBreakpoints []string
	cpSeqs, cpSteps, cpFormats                 []int64
	cpValues, cpNexts, cpMetas                 []*string
	cpCreated                                  []*int64
	// Checkpoints already stored that buffered writes name.
	baseThreads, baseIDs []string
	// Writes, column by column; wSeqs is 0 for a write against a checkpoint
	// of base until lock reads its seq (wBase: index in baseThreads).
	wThreads, wTasks, wKinds, wNodes []string
	wSeqs, wIdxs                     []int64
	wValues                          []*string
	wBase                            []int
}

// planFlush turns threads into the arrays of the flush's statements.
func planFlush(threads []checkpoints.BufferedThread) *flush {
	var nThreads, nCheckpoints, nBase, nWrites int
	for _, th := range threads {
		nThreads++
		nCheckpoints += len(th.Checkpoints)
		for _, bw := range th.Writes {
			if bw.Seq == 0 {
				nBase++
			}
			nWrites += len(bw.Writes)
		}
	}
	f := &flush{threads: threads, ids: make([]string, 0, nThreads)}
	f.cpThreads, f.cpIDs, f.cpSources, f.cpBreakpoints = make([]string, 0, nCheckpoints), make([]string, 0, nCheckpoints), make([]string, 0, nCheckpoints), make([]string, 0, nCheckpoints)
	f.cpSeqs, f.cpSteps, f.cpFormats = make([]int64, 0, nCheckpoints), make([]int64, 0, nCheckpoints), make([]int64, 0, nCheckpoints)
	f.cpValues, f.cpNexts, f.cpMetas = make([]*string, 0, nCheckpoints), make([]*string, 0, nCheckpoints), make([]*string, 0, nCheckpoints)
	f.cpCreated = make([]*int64, 0, nCheckpoints)
	f.baseThreads, f.baseIDs = make([]string, 0, nBase), make([]string, 0, nBase)
	f.wThreads, f.wTasks, f.wKinds, f.wNodes = make([]string, 0, nWrites), make([]string, 0, nWrites), make([]string, 0, nWrites), make([]string, 0, nWrites)
	f.wSeqs, f.wIdxs, f.wValues, f.wBase = make([]int64, 0, nWrites), make([]int64, 0, nWrites), make([]*string, 0, nWrites), make([]int, 0, nWrites)
	for _, th := range threads {
		f.ids = append(f.ids, th.ThreadID)
		if n := len(th.Checkpoints); n > 0 {
			last := th.Checkpoints[n-1]
			if th.Parent == "" {
				f.newIDs, f.newHeads, f.newSeqs = append(f.newIDs, th.ThreadID), append(f.newHeads, last.ID), append(f.newSeqs, last.Seq)
			} else {
				f.movedIDs, f.movedParents, f.movedHeads = append(f.movedIDs, th.ThreadID), append(f.movedParents, th.Parent), append(f.movedHeads, last.ID)
				f.movedSeqs, f.movedN = append(f.movedSeqs, last.Seq), append(f.movedN, int64(n))
			}
		}
		for i, cp := range th.Checkpoints {
			next, meta := th.EncodedJSON(i)
			f.addCheckpoint(cp, next, meta)
		}
		for _, bw := range th.Writes {
			base := -1
			if bw.Seq == 0 {
				base = len(f.baseThreads)
				f.baseThreads, f.baseIDs = append(f.baseThreads, th.ThreadID), append(f.baseIDs, bw.CheckpointID)
			}
			for _, w := range bw.Writes {
				f.wThreads, f.wSeqs, f.wBase = append(f.wThreads, th.ThreadID), append(f.wSeqs, bw.Seq), append(f.wBase, base)
				f.wTasks, f.wKinds, f.wIdxs, f.wNodes = append(f.wTasks, w.TaskID), append(f.wKinds, w.Kind), append(f.wIdxs, int64(w.Idx)), append(f.wNodes, w.Node)
				f.wValues = append(f.wValues, text(w.Value))
			}
		}
	}
	slices.Sort(f.ids)
	return f
}

// addCheckpoint adds cp, validated by the buffer's Put, with its Next and
// Metadata as the buffer encoded them, to the arrays.
func (f *flush) addCheckpoint(cp *flow.Checkpoint, next, meta *string) {
	var created *int64
	if !cp.CreatedAt.IsZero() {
		ns := cp.CreatedAt.UnixNano()
		created = &ns
	}
	f.cpThreads, f.cpIDs, f.cpSeqs = append(f.cpThreads, cp.ThreadID), append(f.cpIDs, cp.ID), append(f.cpSeqs, cp.Seq)
	f.cpSteps, f.cpSources, f.cpFormats = append(f.cpSteps, int64(cp.Metadata.Step)), append(f.cpSources, cp.Metadata.Source), append(f.cpFormats, int64(cp.Format))
	f.cpValues, f.cpNexts, f.cpBreakpoints = append(f.cpValues, text(cp.Values)), append(f.cpNexts, next), append(f.cpBreakpoints, cp.Breakpoint)
	f.cpMetas, f.cpCreated = append(f.cpMetas, meta), append(f.cpCreated, created)
}

// text is b as a nullable text: nil for nil or empty b.
func text(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

// head is a thread's head as the flush's lock read it.
type head struct {
	id  string
	seq int64
}

// lock runs the flush's first round trip in tx: on a fenced view writing
// its thread, the fence's lock and check (as the view's own writes take
// them, fence.go); the threads' rows locked and their heads read; the new
// threads started; the checkpoints that writes name read and locked. It
// then compares what it read with what was buffered: a fence above the
// view's epoch is a *flow.FencedError, a head that is not what the buffer
// continued a *flow.ConflictError, a checkpoint gone ErrUnknownCheckpoint.
// It fills in the seqs of writes against checkpoints of base.
func (b bufferBase) lock(ctx context.Context, tx pgx.Tx, f *flush) error {
	batch := &pgx.Batch{}
	fenced := b.fence != nil && slices.Contains(f.ids, b.fence.thread)
	if fenced {
		batch.Queue(sqlFenceLockShared, fenceLockClass, b.fence.thread)
		// A statement after the lock: under READ COMMITTED it sees every
		// Fence that committed before the lock was granted.
		batch.Queue(sqlFenceOf, b.fence.thread)
	}
	batch.Queue(sqlLockThreads, f.ids)
	if len(f.newIDs) > 0 {
		batch.Queue(sqlNewThreads, f.newIDs, f.newHeads, f.newSeqs)
	}
	if len(f.baseIDs) > 0 {
		batch.Queue(sqlLockCheckpoints, f.baseThreads, f.baseIDs)
	}
	br := tx.SendBatch(ctx, batch)
	defer br.Close()

	var fence int64
	if fenced {
		if _, err := br.Exec(); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&fence); err != nil {
			return err
		}
	}
	heads := make(map[string]head, len(f.ids))
	rows, err := br.Query()
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var h head
		if err := rows.Scan(&id, &h.id, &h.seq); err != nil {
			rows.Close()
			return err
		}
		heads[id] = h
	}
	if err := rows.Err(); err != nil {
		return err
	}
	made := make(map[string]bool, len(f.newIDs))
	if len(f.newIDs) > 0 {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, id := range ids {
			made[id] = true
		}
	}
	seqs := make(map[[2]string]int64, len(f.baseIDs))
	if len(f.baseIDs) > 0 {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var thread, id string
			var seq int64
			if err := rows.Scan(&thread, &id, &seq); err != nil {
				rows.Close()
				return err
			}
			seqs[[2]string{thread, id}] = seq
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	if err := br.Close(); err != nil {
		return err
	}

	if fenced && fence > b.fence.epoch {
		return &flow.FencedError{ThreadID: b.fence.thread, Epoch: b.fence.epoch, Fence: fence}
	}
	if err := f.compare(heads, made); err != nil {
		var ce *flow.ConflictError
		if errors.As(err, &ce) && ce.Want == "" && ce.Head == "" {
			// A thread another writer started after the lock's read:
			// name the head it left.
			return conflict(ctx, tx, ce.ThreadID, "")
		}
		return err
	}
	for i, base := range f.wBase {
		if base < 0 {
			continue
		}
		seq, ok := seqs[[2]string{f.baseThreads[base], f.baseIDs[base]}]
		if !ok {
			return fmt.Errorf("put writes %s/%s: %w", f.baseThreads[base], f.baseIDs[base], checkpoints.ErrUnknownCheckpoint)
		}
		f.wSeqs[i] = seq
	}
	return nil
}

// compare checks the heads that lock read (and the new threads it made)
// against what the buffer continued, as the SQLite store's flush does:
// writes at base's head first, then each thread's head.
func (f *flush) compare(heads map[string]head, made map[string]bool) error {
	for _, th := range f.threads {
		for _, id := range th.AtHead {
			if h := heads[th.ThreadID]; h.id != id {
				return &flow.ConflictError{ThreadID: th.ThreadID, Want: id, Head: h.id}
			}
		}
	}
	for _, th := range f.threads {
		if len(th.Checkpoints) == 0 {
			continue
		}
		h, first := heads[th.ThreadID], th.Checkpoints[0]
		if h.id != th.Parent || (th.Parent == "" && !made[th.ThreadID]) {
			return &flow.ConflictError{ThreadID: th.ThreadID, Want: th.Parent, Head: h.id}
		}
		if h.seq+1 != first.Seq {
			// The head has the buffered parent's id at another seq: the
			// thread was deleted and made again meanwhile.
			return fmt.Errorf("move head of %s: checkpoint %s would be seq %d, buffered as seq %d: the thread was made again",
				th.ThreadID, first.ID, h.seq+1, first.Seq)
		}
	}
	return nil
}

// write runs the flush's second round trip in tx, after lock: the heads of
// continued threads moved, then the checkpoints and the writes inserted.
func (f *flush) write(ctx context.Context, tx pgx.Tx) error {
	batch := &pgx.Batch{}
	if len(f.movedIDs) > 0 {
		batch.Queue(sqlMoveHeads, f.movedIDs, f.movedParents, f.movedHeads, f.movedSeqs, f.movedN)
	}
	if len(f.cpIDs) > 0 {
		batch.Queue(sqlInsertCheckpoints, f.cpThreads, f.cpIDs, f.cpSeqs, f.cpSteps, f.cpSources, f.cpFormats,
			f.cpValues, f.cpNexts, f.cpBreakpoints, f.cpMetas, f.cpCreated)
	}
	if len(f.wThreads) > 0 {
		batch.Queue(sqlUpsertBufferedWrites, f.wThreads, f.wSeqs, f.wTasks, f.wKinds, f.wIdxs, f.wNodes, f.wValues)
	}
	if batch.Len() == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if len(f.movedIDs) > 0 {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("move heads of %s: %w", strings.Join(f.movedIDs, ", "), err)
		}
		// Every row was locked and compared by lock: fewer rows moved
		// would be a bug, never ignored.
		if n := tag.RowsAffected(); n != int64(len(f.movedIDs)) {
			return fmt.Errorf("move heads: %d of %d moved: %w", n, len(f.movedIDs), flow.ErrConflict)
		}
	}
	if len(f.cpIDs) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("put %d checkpoints: %w", len(f.cpIDs), err)
		}
	}
	if len(f.wThreads) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("put %d writes: %w", len(f.wThreads), err)
		}
	}
	return br.Close()
}
