package returns

import (
	"context"
	"maps"
	"time"

	"assistant/business"
	"assistant/flow"
)

// Batch limits and defaults.
const (
	// MaxChunkCommit bounds the rows one chunk writes in one transaction
	// (a larger chunk checkpoints more often): it bounds the memory a
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
	// Failure is why a guard stopped the batch (attempts exhausted, the
	// recursion limit); nil while it runs or when it finished.
	Failure *Failure `json:"error,omitempty"`
	// Of is what the rows are: RowsOfOrders ("" in a state stored before
	// decide runs existed) or RowsOfDecisions.
	Of string `json:"of,omitempty"`
	// TTLSeconds is the draft validity the rows' tasks are started with
	// (BatchOptions.TTL); 0 means business.DefaultDraftTTL.
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// What the rows of a batch task are (BatchState.Of, BatchProgress.Of).
const (
	// RowsOfOrders: a batch's rows, each a return task to start for an
	// order (StartBatch).
	RowsOfOrders = "orders"
	// RowsOfDecisions: a decide run's rows, each a decision to give a
	// waiting task (StartDecide).
	RowsOfDecisions = "decisions"
)

// rowsOf is what b's rows are, RowsOfOrders for a state stored before the
// field existed.
func (b BatchState) rowsOf() string {
	if b.Of == "" {
		return RowsOfOrders
	}
	return b.Of
}

// ttl is the draft validity of b's row tasks.
func (b BatchState) ttl() time.Duration {
	if b.TTLSeconds <= 0 {
		return business.DefaultDraftTTL
	}
	return time.Duration(b.TTLSeconds) * time.Second
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
	if u.Failure != nil {
		f := *u.Failure
		s.Failure = &f
	}
	if u.Of != "" {
		s.Of = u.Of
	}
	if u.TTLSeconds != 0 {
		s.TTLSeconds = u.TTLSeconds
	}
	return s
}

// BatchProgress is the batch part of a View.
type BatchProgress struct {
	// Of is what the rows are: RowsOfOrders (a batch) or RowsOfDecisions
	// (a decide run).
	Of       string         `json:"of"`
	Position int            `json:"position"` // rows handled
	Total    int            `json:"total"`
	Counts   map[string]int `json:"counts"` // rows per outcome (stage)
}

// buildBatch returns the batch graph: one node that handles a chunk of rows
// and loops until every row was handled.
func (s *Service) buildBatch() *flow.Graph[BatchState] {
	g := flow.NewGraph(reduceBatch)
	g.StateFormat(BatchStateFormat, batchStateUpgrades)
	g.AddNode(NodeRows, s.batchRows)
	g.AddEdge(flow.Start, NodeRows)
	g.AddNode(NodeGiveUp, func(context.Context, BatchState) (BatchState, error) { return BatchState{}, nil })
	g.AddEdge(NodeGiveUp, flow.End)
	g.AddConditionalEdges(NodeRows, func(b BatchState) []string {
		if b.Position < b.Total {
			return []string{NodeRows}
		}
		return []string{flow.End}
	})
	return g
}
