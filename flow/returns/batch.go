package returns

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow"
)

// Batch limits and defaults.
const (
	// MaxChunkCommit bounds the rows one chunk writes in one transaction
	// (a larger --chunk checkpoints more often): it bounds the memory a
	// chunk holds until its commit.
	MaxChunkCommit = 100
	// MaxChunkTime ends a chunk early, after the rows done so far, so that
	// its transaction never holds business.sqlite's write lock for long:
	// other processes wait for it, and so does this process's own lease
	// heartbeat (see chunkRows).
	MaxChunkTime = 500 * time.Millisecond
	// DefaultBatchChunk is how many rows one superstep of a batch handles:
	// progress is checkpointed after each chunk, so a crash redoes at most
	// one chunk, and those rows are looked up and skipped, not run again.
	DefaultBatchChunk = 100
	// MaxBatchRows bounds a batch file.
	MaxBatchRows = 100_000
	// maxBadLines is how many bad lines a refused batch file reports.
	maxBadLines = 10
	// NodeRows is the batch graph's one node: it handles the next chunk.
	NodeRows = "rows"
	// StageBatchDone is the stage of a batch whose rows all ran.
	StageBatchDone = "finished"
)

// BatchState is the batch graph's state: where the walk through the rows
// stands. The rows themselves live in business.sqlite (batch_rows).
type BatchState struct {
	Batch    string `json:"batch,omitempty"`
	User     string `json:"user,omitempty"`
	Total    int    `json:"total,omitempty"`
	Chunk    int    `json:"chunk,omitempty"`
	Position int    `json:"position,omitempty"` // rows handled so far
	// Counts are the handled rows per outcome: the row task's stage
	// (draft_ready, need_reason, failed, …), or "not_found" for an unknown
	// order, "conflict" for a task id already used with other input.
	Counts map[string]int `json:"counts,omitempty"`
}

func reduceBatch(s, u BatchState) BatchState {
	if u.Batch != "" {
		s.Batch = u.Batch
	}
	if u.User != "" {
		s.User = u.User
	}
	if u.Total != 0 {
		s.Total = u.Total
	}
	if u.Chunk != 0 {
		s.Chunk = u.Chunk
	}
	if u.Position != 0 {
		s.Position = u.Position
	}
	if u.Counts != nil {
		s.Counts = maps.Clone(u.Counts)
	}
	return s
}

// BatchProgress is the batch part of a View.
type BatchProgress struct {
	Position int            `json:"position"` // rows handled
	Total    int            `json:"total"`
	Counts   map[string]int `json:"counts"` // rows per outcome (stage)
}

// ParseBatch reads a batch CSV (header task,order,reason; reason may be
// empty) and validates every row. A bad file is ErrInvalid naming up to ten
// bad lines by number; nothing is created from it.
func ParseBatch(r io.Reader) ([]business.BatchRow, string, error) {
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, "", fmt.Errorf("read batch file: %w", err)
	}
	sum := sha256.Sum256(data)
	cr := csv.NewReader(strings.NewReader(string(data)))
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, "", fmt.Errorf("%w: batch file: %v", ErrInvalid, err)
	}
	if len(recs) == 0 || len(recs[0]) != 3 || strings.TrimPrefix(strings.TrimSpace(recs[0][0]), "\ufeff") != "task" ||
		strings.TrimSpace(recs[0][1]) != "order" || strings.TrimSpace(recs[0][2]) != "reason" {
		return nil, "", fmt.Errorf("%w: batch file: line 1: the header must be task,order,reason", ErrInvalid)
	}
	if len(recs) == 1 {
		return nil, "", fmt.Errorf("%w: batch file has no rows", ErrInvalid)
	}
	if len(recs)-1 > MaxBatchRows {
		return nil, "", fmt.Errorf("%w: batch file has %d rows; at most %d are allowed", ErrInvalid, len(recs)-1, MaxBatchRows)
	}
	var bad []string
	seen := map[string]int{}
	rows := make([]business.BatchRow, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		line := i + 2
		if len(rec) != 3 {
			bad = append(bad, fmt.Sprintf("line %d: %d fields, want 3", line, len(rec)))
			continue
		}
		row := business.BatchRow{RowNo: i + 1, TaskID: strings.TrimSpace(rec[0]), OrderID: strings.TrimSpace(rec[1]), Reason: strings.TrimSpace(rec[2])}
		var problem error
		switch {
		case ValidTaskID(row.TaskID) != nil:
			problem = ValidTaskID(row.TaskID)
		case ValidTaskID(row.OrderID) != nil:
			problem = fmt.Errorf("order id: %v", ValidTaskID(row.OrderID))
		case row.Reason != "" && ValidReason(row.Reason) != nil:
			problem = ValidReason(row.Reason)
		case seen[row.TaskID] != 0:
			problem = fmt.Errorf("task %s already on line %d", row.TaskID, seen[row.TaskID])
		}
		if problem != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", line, problem))
			continue
		}
		seen[row.TaskID] = line
		rows = append(rows, row)
	}
	if len(bad) > 0 {
		more := ""
		if len(bad) > maxBadLines {
			more = fmt.Sprintf(" (and %d more)", len(bad)-maxBadLines)
			bad = bad[:maxBadLines]
		}
		return nil, "", fmt.Errorf("%w: batch file has bad rows, none was imported: %s%s", ErrInvalid, strings.Join(bad, "; "), more)
	}
	return rows, hex.EncodeToString(sum[:16]), nil
}

// buildBatch returns the batch graph: one node that handles a chunk of rows
// and loops until every row was handled.
func (s *Service) buildBatch() *flow.Graph[BatchState] {
	g := flow.NewGraph(reduceBatch)
	g.StateFormat(BatchStateFormat, batchStateUpgrades)
	g.AddNode(NodeRows, s.batchRows)
	g.AddEdge(flow.Start, NodeRows)
	g.AddConditionalEdges(NodeRows, func(b BatchState) []string {
		if b.Position < b.Total {
			return []string{NodeRows}
		}
		return []string{flow.End}
	})
	return g
}

// batchRows handles the next chunk of rows. Each row's return task runs to
// its first question or its end; a row whose task exists already is looked
// up (and continued if it was left running), never started twice.
func (s *Service) batchRows(ctx context.Context, b BatchState) (BatchState, error) {
	chunk := b.Chunk
	if chunk <= 0 {
		chunk = DefaultBatchChunk
	}
	rows, err := s.desk.BatchRows(ctx, b.Batch, b.Position, min(chunk, MaxChunkCommit))
	if err != nil {
		return BatchState{}, err
	}
	counts := maps.Clone(b.Counts)
	if counts == nil {
		counts = map[string]int{}
	}
	pos := b.Position
	if len(rows) > 0 {
		done, err := s.chunkRows(ctx, b, rows, counts)
		if err != nil {
			return BatchState{}, err
		}
		if done > 0 {
			return BatchState{Position: rows[done-1].RowNo, Counts: counts}, nil
		}
	}
	for _, row := range rows {
		if err := ctx.Err(); err != nil {
			return BatchState{}, err
		}
		outcome, err := s.batchRow(ctx, b.User, row)
		if err != nil {
			return BatchState{}, fmt.Errorf("row %d (task %s): %w", row.RowNo, row.TaskID, err)
		}
		counts[outcome]++
		pos = row.RowNo
		Fault("batch:after-row")
		if s.progress != nil {
			s.progress(pos, b.Total)
		}
	}
	if len(rows) == 0 {
		pos = b.Total // rows vanished: nothing left to do
	}
	// The rows' task records become durable before the checkpoint that
	// counts them as handled (their own checkpoints were synced per row).
	if err := s.desk.Sync(ctx); err != nil {
		return BatchState{}, err
	}
	return BatchState{Position: pos, Counts: counts}, nil
}

// chunkRows runs a chunk of rows with two commits in all: every row's
// business writes (task records, drafts, timeline) in one transaction of
// business.sqlite, committed durably first, then every row's checkpoints in
// one transaction of checkpoints.sqlite (a checkpoints.Buffer). The order
// keeps the storage rule that a checkpoint never names a draft that could be
// lost. A crash before the first commit leaves nothing of the chunk; a crash
// between the two leaves task records without checkpoints, which batchRow
// continues (from their input; the draft, keyed by task id, is reused) when
// the chunk runs again. It adds the rows' outcomes to counts and returns how
// many of rows it handled (a prefix, see below); 0, with counts unchanged,
// when the store cannot buffer checkpoints or a row failed inside the
// transaction (everything of the chunk is rolled back): the caller then runs
// the rows one by one. err is set when ctx ended or a commit after the
// business one failed.
//
// The business transaction holds the file's write lock, which this
// process's own lease heartbeat needs too: the chunk ends early, after the
// rows done so far, once it has run for MaxChunkTime, so that the lease
// (DefaultLeaseTTL) never lapses under a live batch however loaded the
// machine.
func (s *Service) chunkRows(ctx context.Context, b BatchState, rows []business.BatchRow, counts map[string]int) (done int, err error) {
	base, isSQLite := s.cps.(*checkpoints.SQLite)
	if !isSQLite {
		return 0, nil
	}
	buf := checkpoints.NewBuffer(base)
	ids := make([]string, len(rows))
	for i, row := range rows {
		ids[i] = row.TaskID
	}
	if err := buf.Preload(ctx, ids); err != nil {
		return 0, err
	}
	outcomes := map[string]int{}
	// The rows run on a context that cannot be cancelled: with one that
	// can, the driver watches every statement with a goroutine of its own
	// (a third of a row's cost). A stop is seen between rows, by ctx.
	rowCtx := context.WithoutCancel(ctx)
	var held []string
	err = s.desk.InTx(rowCtx, func(tx *business.Store) error {
		c, err := s.withStores(tx, buf)
		if err != nil {
			return err
		}
		defer func() { held = c.held }()
		began := time.Now()
		for _, row := range rows {
			if err := ctx.Err(); err != nil {
				return err
			}
			if done > 0 && time.Since(began) > MaxChunkTime {
				break
			}
			outcome, err := c.batchRow(rowCtx, b.User, row)
			if err != nil {
				return fmt.Errorf("row %d (task %s): %w", row.RowNo, row.TaskID, err)
			}
			outcomes[outcome]++
			done++
			Fault("batch:after-row")
			if s.progress != nil {
				s.progress(row.RowNo, b.Total)
			}
		}
		return nil
	})
	if err != nil {
		buf.Discard()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, nil
	}
	Fault("batch:between-commits")
	if err := buf.Flush(rowCtx); err != nil {
		return 0, fmt.Errorf("save checkpoints of rows %d-%d: %w", rows[0].RowNo, rows[done-1].RowNo, err)
	}
	Fault("batch:before-release")
	if err := s.desk.ReleaseLeases(rowCtx, s.me.owner, held); err != nil {
		return 0, fmt.Errorf("let go of rows %d-%d: %w", rows[0].RowNo, rows[done-1].RowNo, err)
	}
	for k, n := range outcomes {
		counts[k] += n
	}
	return done, nil
}

// batchKey marks the context of a batch's rows.
type batchKey struct{}

// inBatch reports whether ctx is the context of a batch's row.
func inBatch(ctx context.Context) bool { return ctx.Value(batchKey{}) != nil }

// batchRow runs one row and returns its outcome for the counts.
func (s *Service) batchRow(ctx context.Context, user string, row business.BatchRow) (string, error) {
	ctx = context.WithValue(ctx, batchKey{}, true)
	o := StartOptions{Task: row.TaskID, User: user, Order: row.OrderID, Reason: row.Reason, TTL: business.DefaultDraftTTL}
	t, err := s.desk.Task(ctx, row.TaskID)
	if errors.Is(err, business.ErrNotFound) {
		// ParseBatch validated the row; the task is known to be new.
		v, err := s.create(ctx, o, fingerprint(o))
		switch {
		case errors.Is(err, ErrNotFound):
			return "not_found", nil
		case errors.Is(err, ErrConflict):
			return "conflict", nil
		case err != nil:
			return "", err
		}
		return v.Stage, nil
	}
	if err != nil {
		return "", err
	}
	if t.User != user || t.Fingerprint != fingerprint(o) {
		return "conflict", nil
	}
	if t.Status != StatusRunning && t.Status != StatusInterrupted {
		// A chunk whose business commit landed and whose checkpoint commit
		// did not (a crash between them) left records without a run.
		if _, err := s.graph.State(ctx, t.ID); errors.Is(err, flow.ErrThreadNotFound) {
			t.Status = StatusRunning
		}
	}
	if t.Status == StatusRunning || t.Status == StatusInterrupted {
		// Left part-way by a crash or a stop of this batch: continue it.
		v, err := s.Resume(ctx, ResumeOptions{Task: t.ID, User: user})
		if err != nil {
			return "", err
		}
		return v.Stage, nil
	}
	// Handled before, by a batch process that died before it let go of
	// its rows (between its chunk's last commits): let go of them now.
	if l, _, err := s.desk.TaskLease(ctx, t.ID); err != nil {
		return "", err
	} else if l.Owner != "" && !s.holderAlive(l) {
		if err := s.desk.ReleaseLeases(ctx, l.Owner, []string{t.ID}); err != nil {
			return "", err
		}
	}
	return t.Stage, nil
}

// BatchOptions are the input of StartBatch.
type BatchOptions struct {
	Batch       string
	User        string
	Rows        []business.BatchRow
	Fingerprint string // of the file, from ParseBatch
	Chunk       int    // rows per checkpoint; 0 means DefaultBatchChunk
}

// StartBatch creates a batch task with its rows and runs it; the same batch
// id with the same file prints its progress, with another file is
// ErrConflict. Errors: ErrInvalid, ErrConflict, storage errors.
func (s *Service) StartBatch(ctx context.Context, o BatchOptions) (*View, error) {
	if err := ValidTaskID(o.Batch); err != nil {
		return nil, fmt.Errorf("%w: batch id: %v", ErrInvalid, err)
	}
	fp := "batch:" + o.Fingerprint
	t, err := s.desk.Task(ctx, o.Batch)
	if err == nil {
		if t.User != o.User || t.Fingerprint != fp {
			return nil, fmt.Errorf("task %s already exists with other input: %w (choose another batch id, or run `assistant show %s`)", o.Batch, ErrConflict, o.Batch)
		}
		v, err := s.Show(ctx, o.Batch, o.User)
		if err == nil && v.Status == StatusDone {
			// Killed after its last checkpoint, before it let go of the
			// task, the record says running: set it right.
			err = s.repair(ctx, t, v)
		}
		if err != nil {
			return nil, err
		}
		return v, nil
	}
	if !errors.Is(err, business.ErrNotFound) {
		return nil, fmt.Errorf("start batch %s: %w", o.Batch, err)
	}
	t = business.Task{ID: o.Batch, User: o.User, Fingerprint: fp, Status: StatusRunning}
	if err := s.desk.CreateBatch(ctx, t, s.lease(), o.Rows); errors.Is(err, business.ErrTaskExists) {
		return nil, fmt.Errorf("task %s was created by another process at the same moment: %w", o.Batch, ErrConflict)
	} else if err != nil {
		return nil, err
	}
	chunk := o.Chunk
	if chunk <= 0 {
		chunk = DefaultBatchChunk
	}
	return s.driveBatch(ctx, t, func(ctx context.Context) error {
		_, err := s.batch.Invoke(ctx, t.ID, BatchState{Batch: t.ID, User: t.User, Total: len(o.Rows), Chunk: chunk})
		if errors.Is(err, flow.ErrThreadExists) {
			_, err = s.batch.Resume(ctx, t.ID, flow.Command{})
		}
		return err
	})
}

// resumeBatch continues a batch; a batch asks no question, so an answer is
// ErrInvalid.
func (s *Service) resumeBatch(ctx context.Context, t business.Task, o ResumeOptions) (*View, error) {
	if s.batch == nil {
		// A batch chunk's Service runs return tasks only.
		return nil, fmt.Errorf("task %s is a batch: %w", t.ID, ErrConflict)
	}
	if o.HasReason || o.Action != "" || o.DraftID != "" || o.InterruptID != "" {
		return nil, fmt.Errorf("%w: %s is a batch; it asks no question (run `assistant resume %s` to continue it)", ErrInvalid, t.ID, t.ID)
	}
	snap, err := s.batch.State(ctx, t.ID)
	if err == nil && snap.Done() {
		// A process killed after the batch's last checkpoint and before it
		// let go of the task leaves the record running: set it right.
		v := s.batchView(ctx, t, snap)
		if err := s.repair(ctx, t, v); err != nil {
			return nil, err
		}
		return v, nil
	}
	if err := s.acquire(ctx, &t); err != nil {
		return nil, err
	}
	return s.driveBatch(ctx, t, func(ctx context.Context) error {
		_, err := s.batch.Resume(ctx, t.ID, flow.Command{})
		if errors.Is(err, flow.ErrThreadNotFound) {
			// Created, then killed before its first checkpoint.
			total, cerr := s.desk.CountBatchRows(ctx, t.ID)
			if cerr != nil {
				return cerr
			}
			_, err = s.batch.Invoke(ctx, t.ID, BatchState{Batch: t.ID, User: t.User, Total: total, Chunk: DefaultBatchChunk})
		}
		return err
	})
}

func (s *Service) driveBatch(ctx context.Context, t business.Task, fn func(context.Context) error) (*View, error) {
	run := func(ctx context.Context) error {
		err := fn(ctx)
		// A row that fails fails the batch's one node, "rows": say which
		// batch and row, not which engine thread and node.
		var te *flow.TaskError
		if errors.As(err, &te) {
			return fmt.Errorf("batch %s: %w", t.ID, te.Err)
		}
		return err
	}
	return s.drive(ctx, t, run, func(ctx context.Context) (*View, error) {
		snap, err := headOrNil(s.batch.State(ctx, t.ID))
		if err != nil {
			return nil, err
		}
		return s.batchView(ctx, t, snap), nil
	})
}

// batchView builds the View of a batch task from its head (nil before the
// first checkpoint, when the total comes from the batch's stored rows).
func (s *Service) batchView(ctx context.Context, t business.Task, snap *flow.Snapshot[BatchState]) *View {
	v := &View{Task: t.ID, User: t.User, Kind: nil, Next: []string{}, Interrupts: []InterruptView{}, Status: StatusRunning}
	v.Batch = &BatchProgress{Counts: map[string]int{}}
	if snap == nil {
		if t.Status == StatusInterrupted {
			v.Status = StatusInterrupted
		}
		if n, err := s.desk.CountBatchRows(ctx, t.ID); err == nil {
			v.Batch.Total = n
		}
		return v
	}
	b := snap.Values
	v.Next = append(v.Next, snap.Next...)
	v.Batch.Position, v.Batch.Total = b.Position, b.Total
	if b.Counts != nil {
		v.Batch.Counts = maps.Clone(b.Counts)
	}
	switch {
	case snap.Done():
		v.Status, v.Stage = StatusDone, StageBatchDone
	case t.Status == StatusInterrupted:
		v.Status = StatusInterrupted
	}
	return v
}
