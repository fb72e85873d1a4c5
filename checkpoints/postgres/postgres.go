// Package postgres is a flow.Checkpointer on a PostgreSQL server, for
// several machines that share one database (docs/postgres.md). It keeps
// the same data and rules as the SQLite store in package checkpoints
// (threads with their head, checkpoints by sequence, pending writes by
// task, kind and index, a fencing epoch per thread), in the schema
// checkpoints of the database it is given:
//
//	s, err := postgres.Open(ctx, "postgres://assistant@db.internal/assistant", postgres.Options{})
//	if err != nil { … }
//	defer s.Close()
//	run, err := graph.Compile(flow.WithCheckpointer(s)) // any flow.Checkpointer use
//
// Rules it keeps beyond the package checkpoints' ones:
//
//   - Put is one statement: a guarded UPDATE (or INSERT … ON CONFLICT DO
//     NOTHING) of the thread's head and the INSERT of the checkpoint. Under
//     READ COMMITTED a second writer of the same head waits for the first,
//     then finds the head moved and changes no row: a *flow.ConflictError.
//   - Locks are taken in one order, thread row, then checkpoint rows, then
//     write rows, by every write, so two writers never deadlock.
//   - Every commit is durable when it returns: each session runs with
//     synchronous_commit = on (whatever the server's default), so Sync has
//     nothing left to do, and PutDurable is Put.
//   - Open migrates the schema (migrations/, one transaction each, under an
//     advisory lock) and refuses a newer or a foreign schema before it
//     writes anything.
//
// Powers: flow.HeadWriter, flow.Pruner, flow.Fencer, flow.Syncer,
// flow.DurableWriter and flow.Bufferer: NewBuffer returns a
// checkpoints.Buffer whose Flush writes a batch chunk's checkpoints and
// pending writes in one transaction of a few set-based statements
// (buffer.go).
//
// It passes the conformance suite checkpoints/checkpointstest against a
// real server (internal/pgtest).
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"assistant/checkpoints"
	"assistant/flow"
	"assistant/internal/pgdb"
)

// Schema is the PostgreSQL schema that holds the store's tables.
const Schema = "checkpoints"

// Defaults of Open.
const (
	// DefaultApplicationName is the application_name of the store's
	// sessions (pg_stat_activity shows it), unless the URL sets one.
	DefaultApplicationName = "assistant"
	// IdleInTxTimeout is every session's
	// idle_in_transaction_session_timeout: the server ends a session whose
	// transaction waited this long for the client's next statement and
	// rolls it back, releasing its locks (a fenced write's shared fence
	// lock, a flush's row locks), so a writer frozen inside a transaction
	// cannot hold a takeover's Fence for ever. Its transactions are a few
	// statements sent back to back; 2.5 s is half the business store's
	// (pgdb.IdleInTxTimeout, the lease TTL): a takeover whose business
	// transaction waits in Fence for a frozen writer here is never itself
	// ended for that wait.
	IdleInTxTimeout = 2500 * time.Millisecond
)

var (
	_ flow.Checkpointer  = (*Store)(nil)
	_ flow.HeadWriter    = (*Store)(nil)
	_ flow.Pruner        = (*Store)(nil)
	_ flow.Fencer        = (*Store)(nil)
	_ flow.Syncer        = (*Store)(nil)
	_ flow.DurableWriter = (*Store)(nil)
)

// Options configure Open. The zero value takes pgxpool's defaults and the
// URL's parameters.
type Options struct {
	// MaxConns caps the pool's connections when positive; else the URL's
	// pool_max_conns, else pgxpool's default (4, or the number of CPUs
	// when more).
	MaxConns int32
	// OpenBusyWait is how long Open waits for a server with no free
	// connection slot (or starting up) for the pool's first connection,
	// before it fails busy (pgdb.ErrServerBusy); 0 takes the connect
	// timeout. A caller that holds other connections of the server passes
	// HeldBusyWait, and on busy closes them and tries again
	// (docs/postgres.md "Busy").
	OpenBusyWait time.Duration
}

// HeldBusyWait is the OpenBusyWait of a caller that holds other
// connections of the server (pgdb.HeldBusyWait).
const HeldBusyWait = pgdb.HeldBusyWait

// Store is a flow.Checkpointer in a PostgreSQL database, safe for
// concurrent use by goroutines and by processes on many machines. Open it
// with Open; Close it when done.
type Store struct {
	pool *pgxpool.Pool
	// fence is set on a view made by Fenced: its writes to fence.thread
	// check the thread's fence first (fence.go).
	fence *threadFence
}

// Open connects to the database at url (a postgres:// URL or a
// keyword/value string, as libpq takes them), migrates the schema
// checkpoints to the newest version and returns the store. It refuses,
// changing nothing, a schema migrated by a newer build (ErrNewerSchema) or
// one it did not make (ErrForeignSchema). Every connection has a connect
// timeout and every session a lock_timeout (pgdb.ConnectTimeout and
// pgdb.LockTimeout unless the URL sets its own): a statement that waits
// longer for a lock fails with lock_not_available (pgdb.IsBusy). A URL
// that does not parse or names an unknown sslmode matches
// pgdb.ErrURL. Errors are wrapped as "open checkpoints on postgres:
// …" and never repeat the password.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	s, err := open(ctx, url, opts)
	if err != nil {
		return nil, fmt.Errorf("open checkpoints on postgres: %w", err)
	}
	return s, nil
}

func open(ctx context.Context, url string, opts Options) (*Store, error) {
	// The URL is checked as every connection of the program checks it
	// (its errors never repeat it); pgxpool parses it again for its own
	// pool_ parameters.
	if err := pgdb.CheckURL(url); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: it does not parse", pgdb.ErrURL)
	}
	// A connect timeout and a lock_timeout, unless the URL sets its own:
	// no statement waits for a lock, and no connection for a silent
	// server, for ever (docs/postgres.md "Busy").
	pgdb.SetLimits(cfg.ConnConfig)
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	params := cfg.ConnConfig.RuntimeParams
	// Every commit durable when it returns, whatever the server's
	// default: the store's Sync counts on it.
	params["synchronous_commit"] = "on"
	// A transaction whose client went silent is ended by the server.
	params["idle_in_transaction_session_timeout"] = strconv.FormatInt(IdleInTxTimeout.Milliseconds(), 10)
	if params["application_name"] == "" {
		params["application_name"] = DefaultApplicationName
	}
	pool, err := pgdb.NewPool(ctx, cfg, opts.OpenBusyWait)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool}, nil
}

// Close closes the pool's connections. Any use of the store after Close
// fails. On a view made by Fenced it does nothing: the store owns the pool.
func (s *Store) Close() error {
	if s.fence == nil {
		s.pool.Close()
	}
	return nil
}

// The statements of the store. Each names its tables with the schema, so
// the session's search_path does not matter.
const (
	// sqlPutFirst starts a thread: its head row and first checkpoint, or
	// no row when the thread has a head already.
	sqlPutFirst = `WITH head AS (
		INSERT INTO checkpoints.threads (thread_id, head_id, head_seq) VALUES ($1, $2, 1)
		ON CONFLICT (thread_id) DO NOTHING
		RETURNING head_seq)
	` + sqlInsertFromHead
	// sqlPutNext moves the head from $11 to the new checkpoint, or changes
	// no row when the head is another. A concurrent writer of the same
	// row makes it wait, then compare with the head that writer left.
	sqlPutNext = `WITH head AS (
		UPDATE checkpoints.threads SET head_id = $2, head_seq = head_seq + 1, updated_at = now()
		WHERE thread_id = $1 AND head_id = $11
		RETURNING head_seq)
	` + sqlInsertFromHead
	sqlInsertFromHead = `INSERT INTO checkpoints.checkpoints (thread_id, checkpoint_id, seq, step, source, format,
		values_json, next_json, breakpoint, metadata_json, created_at)
	SELECT $1, $2, head.head_seq, $3, $4, $5, $6::text::json, $7::text::json, $8, $9::text::json, $10
	FROM head
	RETURNING seq`
	sqlHeadID = `SELECT head_id FROM checkpoints.threads WHERE thread_id = $1`

	// sqlUpsertWrites saves the writes given as arrays against the seq
	// the FROM item of the caller's text gives.
	sqlUpsertWrites = `INSERT INTO checkpoints.writes (thread_id, seq, task_id, kind, idx, node, value_json)
	SELECT $1, target.seq, w.task_id, w.kind, w.idx, w.node, w.value::json
	FROM target, unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[]) AS w (task_id, kind, idx, node, value)
	ON CONFLICT (thread_id, seq, task_id, kind, idx)
	DO UPDATE SET node = excluded.node, value_json = excluded.value_json`
	// sqlPutWrites saves writes against the checkpoint with id $2; the
	// KEY SHARE lock keeps it from being deleted before the commit.
	sqlPutWrites = `WITH target AS (
		SELECT seq FROM checkpoints.checkpoints WHERE thread_id = $1 AND checkpoint_id = $2 FOR KEY SHARE)
	` + sqlUpsertWrites
	// sqlPutWritesAtHead saves writes against $2 while it is the head; the
	// SHARE lock on the thread row keeps a Put from moving the head before
	// the commit (a Put under way makes it wait, then find another head).
	sqlPutWritesAtHead = `WITH target AS (
		SELECT head_seq AS seq FROM checkpoints.threads WHERE thread_id = $1 AND head_id = $2 FOR SHARE)
	` + sqlUpsertWrites
	sqlHasCheckpoint = `SELECT EXISTS (SELECT 1 FROM checkpoints.checkpoints WHERE thread_id = $1 AND checkpoint_id = $2)`

	// checkpointColumns are the columns scanCheckpoint reads, of the table
	// aliased c. The parent is the checkpoint one seq below, unless Prune
	// removed it and left its id in pruned_parent_id. JSON comes back as
	// the text stored.
	checkpointColumns = `c.checkpoint_id, c.seq,
		coalesce(c.pruned_parent_id, (SELECT p.checkpoint_id FROM checkpoints.checkpoints p WHERE p.thread_id = c.thread_id AND p.seq = c.seq - 1), ''),
		c.step, c.source, c.format, c.values_json::text, c.next_json::text, c.breakpoint, c.metadata_json::text, c.created_at`
	// sqlGet reads a checkpoint and its pending writes in one statement
	// (one snapshot), the writes as arrays in (task, kind, idx) order.
	sqlGet = `SELECT ` + checkpointColumns + `, w.task_ids, w.kinds, w.idxs, w.nodes, w.vals
	FROM checkpoints.checkpoints c
	` + sqlPendingWrites + `
	WHERE c.thread_id = $1 AND `
	// sqlPendingWrites joins to each checkpoint c the pending writes of its
	// (thread, seq) as the arrays w.task_ids, w.kinds, w.idxs, w.nodes and
	// w.vals, in (task, kind, idx) order; nulls when it has none.
	sqlPendingWrites = `LEFT JOIN LATERAL (
		SELECT array_agg(task_id ORDER BY task_id, kind, idx) AS task_ids,
		       array_agg(kind ORDER BY task_id, kind, idx) AS kinds,
		       array_agg(idx ORDER BY task_id, kind, idx) AS idxs,
		       array_agg(node ORDER BY task_id, kind, idx) AS nodes,
		       array_agg(value_json::text ORDER BY task_id, kind, idx) AS vals
		FROM checkpoints.writes w WHERE w.thread_id = c.thread_id AND w.seq = c.seq) w ON true`
	sqlGetHead = sqlGet + `c.seq = (SELECT head_seq FROM checkpoints.threads WHERE thread_id = $1)`
	sqlGetByID = sqlGet + `c.checkpoint_id = $2`
)

// The times the store keeps: int64 Unix nanoseconds reach from 1677-09-21
// to 2262-04-11, as in the SQLite store.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// checkpointArgs validates cp and returns the arguments $1 … $10 of
// sqlPutFirst and sqlPutNext. A non-zero CreatedAt outside
// minTime..maxTime is refused: it has no int64 Unix nanoseconds.
func checkpointArgs(cp *flow.Checkpoint) ([]any, error) {
	if err := checkpoints.ValidateCheckpoint(cp); err != nil {
		return nil, err
	}
	var values, next, meta *string
	if cp.Values != nil {
		v := string(cp.Values)
		values = &v
	}
	if cp.Next != nil {
		b, err := json.Marshal(cp.Next)
		if err != nil {
			return nil, fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
		}
		n := string(b)
		next = &n
	}
	m, err := checkpoints.EncodeMetadata(cp.Metadata)
	if err != nil {
		return nil, fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	if m != "" {
		meta = &m
	}
	var created *int64
	if t := cp.CreatedAt; !t.IsZero() {
		if t.Before(minTime) || t.After(maxTime) {
			return nil, fmt.Errorf("put checkpoint %s/%s: created at %s, outside 1677-09-21 to 2262-04-11, the times the store keeps (Unix nanoseconds)",
				cp.ThreadID, cp.ID, t.UTC().Format(time.RFC3339Nano))
		}
		ns := t.UnixNano()
		created = &ns
	}
	return []any{cp.ThreadID, cp.ID, int64(cp.Metadata.Step), cp.Metadata.Source, int64(cp.Format),
		values, next, cp.Breakpoint, meta, created}, nil
}

// Put stores cp as the new head of cp.ThreadID and sets cp.Seq, in one
// statement. cp.ParentID must be the current head's id ("" for a new
// thread), else Put returns a *flow.ConflictError and stores nothing; this
// holds across processes and machines. cp.PendingWrites is ignored. What
// the package checkpoints refuses is refused before anything is sent, and
// so is a non-zero CreatedAt outside 1677-09-21 to 2262-04-11.
func (s *Store) Put(ctx context.Context, cp *flow.Checkpoint) error {
	args, err := checkpointArgs(cp)
	if err != nil {
		return err
	}
	var seq int64
	err = s.write(ctx, cp.ThreadID, func(q dbtx) error {
		var err error
		seq, err = put(ctx, q, cp, args)
		return err
	})
	if err != nil {
		if errors.Is(err, flow.ErrConflict) || errors.Is(err, flow.ErrFenced) {
			return err
		}
		return fmt.Errorf("put checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	cp.Seq = seq
	return nil
}

// put runs Put's statement with q and returns the new checkpoint's seq, or
// a *flow.ConflictError when cp.ParentID is not the head.
func put(ctx context.Context, q dbtx, cp *flow.Checkpoint, args []any) (int64, error) {
	query := sqlPutFirst
	if cp.ParentID != "" {
		query, args = sqlPutNext, append(args, cp.ParentID)
	}
	var seq int64
	err := q.QueryRow(ctx, query, args...).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, conflict(ctx, q, cp.ThreadID, cp.ParentID)
	}
	return seq, err
}

// conflict returns the *flow.ConflictError of a write that expected want
// as the thread's head, with the head found now.
func conflict(ctx context.Context, q dbtx, threadID, want string) error {
	var head string
	err := q.QueryRow(ctx, sqlHeadID, threadID).Scan(&head)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return &flow.ConflictError{ThreadID: threadID, Want: want, Head: head}
}

// PutDurable is Put (flow.DurableWriter): every commit of the store is
// durable against power loss when it returns (synchronous_commit = on).
func (s *Store) PutDurable(ctx context.Context, cp *flow.Checkpoint) error {
	return s.Put(ctx, cp)
}

// PutWritesDurable is PutWrites (flow.DurableWriter), durable as every
// commit of the store is.
func (s *Store) PutWritesDurable(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	return s.PutWrites(ctx, threadID, checkpointID, writes)
}

// Sync does nothing and returns nil (flow.Syncer): every earlier commit of
// the store was flushed to the server's write-ahead log before it
// returned, as synchronous_commit = on, which Open sets on every session,
// makes the server do. A server run with fsync = off gives that promise
// up, whatever Sync does.
func (s *Store) Sync(ctx context.Context) error { return nil }

// PutWrites saves writes against checkpoint checkpointID of threadID in one
// statement. A write with the same (TaskID, Kind, Idx) as a stored one
// replaces it (and the last of equal ones in writes wins). An unknown
// checkpoint gives an error wrapping checkpoints.ErrUnknownCheckpoint and
// stores nothing.
func (s *Store) PutWrites(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	return s.putWrites(ctx, threadID, checkpointID, writes, false)
}

// PutWritesAtHead is PutWrites while checkpointID is the thread's head
// (flow.HeadWriter), compared in the same statement, so across processes:
// else it returns a *flow.ConflictError and stores nothing.
func (s *Store) PutWritesAtHead(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	return s.putWrites(ctx, threadID, checkpointID, writes, true)
}

// putWrites is PutWrites, or PutWritesAtHead when atHead.
func (s *Store) putWrites(ctx context.Context, threadID, checkpointID string, writes []flow.Write, atHead bool) error {
	if err := checkpoints.ValidateWrites(threadID, checkpointID, writes); err != nil {
		return err
	}
	args := writeArgs(threadID, checkpointID, writes)
	query := sqlPutWrites
	if atHead {
		query = sqlPutWritesAtHead
	}
	err := s.write(ctx, threadID, func(q dbtx) error {
		tag, err := q.Exec(ctx, query, args...)
		if err != nil || tag.RowsAffected() > 0 {
			return err
		}
		// No row: no target, or no writes to save.
		if atHead {
			var head string
			if err := q.QueryRow(ctx, sqlHeadID, threadID).Scan(&head); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if head != checkpointID {
				return &flow.ConflictError{ThreadID: threadID, Want: checkpointID, Head: head}
			}
			return nil
		}
		var ok bool
		if err := q.QueryRow(ctx, sqlHasCheckpoint, threadID, checkpointID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return checkpoints.ErrUnknownCheckpoint
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, flow.ErrConflict) || errors.Is(err, flow.ErrFenced) {
			return err
		}
		return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, err)
	}
	return nil
}

// writeArgs returns the arguments $1 … $7 of sqlPutWrites: the ids and the
// writes as column arrays, the last of writes with equal keys only (one
// INSERT … ON CONFLICT may not change a row twice).
func writeArgs(threadID, checkpointID string, writes []flow.Write) []any {
	type key struct {
		task, kind string
		idx        int
	}
	last := make(map[key]int, len(writes))
	for i, w := range writes {
		last[key{w.TaskID, w.Kind, w.Idx}] = i
	}
	var tasks, kinds, nodes []string
	var idxs []int64
	var values []*string
	for i, w := range writes {
		if last[key{w.TaskID, w.Kind, w.Idx}] != i {
			continue
		}
		tasks, kinds, nodes = append(tasks, w.TaskID), append(kinds, w.Kind), append(nodes, w.Node)
		idxs = append(idxs, int64(w.Idx))
		var v *string
		if w.Value != nil {
			text := string(w.Value)
			v = &text
		}
		values = append(values, v)
	}
	return []any{threadID, checkpointID, tasks, kinds, idxs, nodes, values}
}

// Get returns the checkpoint checkpointID of threadID, or the thread's head
// when checkpointID is "", with its pending writes ordered by (TaskID, Kind,
// Idx), read in one statement. An unknown thread or id gives (nil, nil).
func (s *Store) Get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error) {
	query, args := sqlGetHead, []any{threadID}
	if checkpointID != "" {
		query, args = sqlGetByID, []any{threadID, checkpointID}
	}
	cp, err := scanCheckpoint(threadID, s.pool.QueryRow(ctx, query, args...), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", checkpoints.GetContext(threadID, checkpointID), err)
	}
	return cp, nil
}

// scanCheckpoint reads one row of checkpointColumns and, withWrites, the
// pending writes' arrays of sqlGet after them.
func scanCheckpoint(threadID string, row pgx.Row, withWrites bool) (*flow.Checkpoint, error) {
	cp := &flow.Checkpoint{ThreadID: threadID}
	var values, next, meta *string
	var created *int64
	var step, format int64
	dest := []any{&cp.ID, &cp.Seq, &cp.ParentID, &step, &cp.Metadata.Source, &format,
		&values, &next, &cp.Breakpoint, &meta, &created}
	var tasks, kinds, nodes []string
	var idxs []int64
	var vals []*string
	if withWrites {
		dest = append(dest, &tasks, &kinds, &idxs, &nodes, &vals)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	cp.Metadata.Step, cp.Format = int(step), int(format)
	if values != nil {
		cp.Values = json.RawMessage(*values)
	}
	if next != nil {
		if err := json.Unmarshal([]byte(*next), &cp.Next); err != nil {
			return nil, fmt.Errorf("checkpoint %s/%s: next: %w", threadID, cp.ID, err)
		}
	}
	if meta != nil {
		if err := json.Unmarshal([]byte(*meta), &cp.Metadata); err != nil {
			return nil, fmt.Errorf("checkpoint %s/%s: metadata: %w", threadID, cp.ID, err)
		}
	}
	if created != nil {
		cp.CreatedAt = time.Unix(0, *created).UTC()
	}
	for i := range tasks {
		w := flow.Write{TaskID: tasks[i], Kind: kinds[i], Idx: int(idxs[i]), Node: nodes[i]}
		if vals[i] != nil {
			w.Value = json.RawMessage(*vals[i])
		}
		cp.PendingWrites = append(cp.PendingWrites, w)
	}
	return cp, nil
}

// List returns the thread's checkpoints newest first (by Seq), without
// pending writes, narrowed by opts (all filters combine). An unknown
// thread, or an opts.Before id the thread does not have, gives an empty
// list.
func (s *Store) List(ctx context.Context, threadID string, opts flow.ListOptions) ([]*flow.Checkpoint, error) {
	q := `SELECT ` + checkpointColumns + ` FROM checkpoints.checkpoints c WHERE c.thread_id = $1`
	args := []any{threadID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if opts.Before != "" {
		// An unknown id makes the subquery NULL and the comparison false: no rows.
		q += ` AND c.seq < (SELECT seq FROM checkpoints.checkpoints WHERE thread_id = $1 AND checkpoint_id = ` + arg(opts.Before) + `)`
	}
	if opts.Source != "" {
		q += ` AND c.source = ` + arg(opts.Source)
	}
	if opts.Step != nil {
		q += ` AND c.step = ` + arg(int64(*opts.Step))
	}
	q += ` ORDER BY c.seq DESC`
	if opts.Limit > 0 {
		q += ` LIMIT ` + arg(int64(opts.Limit))
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints of %s: %w", threadID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*flow.Checkpoint, error) {
		return scanCheckpoint(threadID, row, false)
	})
	if err != nil {
		return nil, fmt.Errorf("list checkpoints of %s: %w", threadID, err)
	}
	return out, nil
}

// DeleteThread removes the thread's pending writes, checkpoints and head in
// one transaction and touches no other thread; its fence stays. Deleting a
// thread that does not exist is a no-op.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Locks in the store's order: the thread row (no Put can add a
		// checkpoint), its checkpoints (no PutWrites can add a write),
		// then the writes go.
		for _, q := range []string{
			`SELECT 1 FROM checkpoints.threads WHERE thread_id = $1 FOR UPDATE`,
			`SELECT 1 FROM checkpoints.checkpoints WHERE thread_id = $1 FOR UPDATE`,
			`DELETE FROM checkpoints.writes WHERE thread_id = $1`,
			`DELETE FROM checkpoints.checkpoints WHERE thread_id = $1`,
			`DELETE FROM checkpoints.threads WHERE thread_id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, threadID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete thread %s: %w", threadID, err)
	}
	return nil
}

// dbtx is what a write runs its statements with: the pool (each statement
// its own transaction) or a transaction.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
