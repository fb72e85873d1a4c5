package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Checkpoint sources, stored in Metadata.Source. They follow LangGraph's
// vocabulary so a person reading history knows what wrote each checkpoint.
const (
	SourceInput  = "input"  // the first checkpoint of a thread, holding the input
	SourceLoop   = "loop"   // written after a superstep finished
	SourceUpdate = "update" // written by UpdateState (an operator correction)
)

// Write kinds of a pending write.
const (
	WriteUpdate    = "update"    // a finished task's state update
	WriteInterrupt = "interrupt" // a question raised by a task (Idx = call order in the node)
	WriteResume    = "resume"    // an answer to the interrupt with the same TaskID and Idx
	WriteError     = "error"     // a task that failed; Value is a JSON string with the cause
	// WriteSubgraphInterrupt is a question raised inside a subgraph the task
	// runs (SubgraphNode). Value is {"path": [node, child, …], "value": payload};
	// Idx is a stable number of where in the subgraph it was asked.
	WriteSubgraphInterrupt = "subgraph_interrupt"
)

// Checkpoint is the state of one thread after a superstep. Checkpoints of a
// thread form a chain through ParentID; the newest is the thread's head.
//
// A Checkpointer stores Checkpoint values as they are and gives them back
// unchanged: the engine owns every field except Seq.
type Checkpoint struct {
	ThreadID string // the thread (for the return flow: the task id)
	ID       string // time-ordered UUIDv7, made by the engine
	ParentID string // the previous head; "" for a thread's first checkpoint
	// Seq is the position of the checkpoint in its thread, 1 for the first,
	// assigned by the Checkpointer (parent's Seq + 1). Stores order by Seq, not
	// by ID or time, so order survives a wall clock that steps back.
	Seq int64
	// Format is the version of the encoding of Values (see Graph.StateFormat).
	Format int
	// Values is the JSON-encoded user state S.
	Values json.RawMessage
	// Next lists the nodes due in the next superstep, sorted; empty when the
	// run reached End.
	Next []string
	// Breakpoint is "before:NODE" or "after:NODE" when the run paused at a
	// static breakpoint when this checkpoint was written; "" otherwise.
	Breakpoint string
	Metadata   Metadata
	CreatedAt  time.Time // wall clock, UTC

	// PendingWrites are the writes saved against this checkpoint by tasks of
	// the superstep that follows it. Get fills them; List leaves them nil.
	PendingWrites []Write
}

// Metadata describes how a checkpoint came to be.
type Metadata struct {
	Source string `json:"source"` // SourceInput, SourceLoop or SourceUpdate
	Step   int    `json:"step"`   // -1 for input, then 0, 1, 2 … per superstep
	// Writes holds each node's update applied by the superstep that produced
	// this checkpoint, keyed by node name (for history and diffs).
	Writes map[string]json.RawMessage `json:"writes,omitempty"`
	// Waiting is the progress of joins (Graph.AddJoin): target node → the
	// source nodes that have finished so far. Engine bookkeeping.
	Waiting map[string][]string `json:"waiting,omitempty"`
}

// Write is one pending write: what a task of a superstep produced before the
// superstep's checkpoint was written. Writes are keyed by (TaskID, Kind, Idx);
// putting the same key twice keeps the last value.
type Write struct {
	TaskID string          `json:"task_id"`
	Node   string          `json:"node"`
	Kind   string          `json:"kind"` // WriteUpdate, WriteInterrupt, WriteResume or WriteError
	Idx    int             `json:"idx"`
	Value  json.RawMessage `json:"value"`
}

// ListOptions narrow Checkpointer.List. Zero values mean no limit and no filter.
type ListOptions struct {
	Limit  int    // at most this many checkpoints; 0 = all
	Before string // only checkpoints older (smaller Seq) than this checkpoint id
	Source string // only this Metadata.Source
	Step   *int   // only this Metadata.Step
}

// Checkpointer stores checkpoints and pending writes of threads. A new store
// runs the conformance suite in checkpoints/checkpointstest.
//
// Implementations must be safe for concurrent use and, for stores shared by
// processes, must make Put a compare-and-set on the thread's head.
type Checkpointer interface {
	// Put stores cp as the new head of cp.ThreadID and sets cp.Seq. It is a
	// compare-and-set: cp.ParentID must be the current head's id ("" for a new
	// thread), else it returns a *ConflictError (errors.Is ErrConflict) and
	// stores nothing.
	Put(ctx context.Context, cp *Checkpoint) error
	// Get returns the checkpoint with the given id, or the thread's head when
	// checkpointID is "", with its PendingWrites. An unknown thread or id gives
	// (nil, nil): absence is not an error.
	Get(ctx context.Context, threadID, checkpointID string) (*Checkpoint, error)
	// PutWrites saves writes of one task against checkpoint checkpointID.
	// Writes with the same (TaskID, Kind, Idx) replace earlier ones, so
	// putting the same task's writes twice is harmless.
	PutWrites(ctx context.Context, threadID, checkpointID string, writes []Write) error
	// List returns the thread's checkpoints newest first (by Seq), without
	// pending writes, narrowed by opts. An unknown thread gives an empty list.
	List(ctx context.Context, threadID string, opts ListOptions) ([]*Checkpoint, error)
	// DeleteThread removes the thread's checkpoints and writes. Deleting a
	// thread that does not exist is a no-op.
	DeleteThread(ctx context.Context, threadID string) error
}

// Syncer is an optional power of a Checkpointer whose Put may be durable only
// against a process crash: Sync makes every earlier Put and PutWrites durable
// against power loss too. The engine calls it before it returns from a run.
type Syncer interface {
	Sync(ctx context.Context) error
}

// DurableWriter is an optional power of a Syncer: Put and PutWrites whose
// commit is durable against power loss too, together with every earlier
// commit (a Sync in the same commit). The engine uses them for the last
// write of a run (a question, a failure, the end, a breakpoint), which then
// needs no Sync of its own.
type DurableWriter interface {
	Syncer
	PutDurable(ctx context.Context, cp *Checkpoint) error
	PutWritesDurable(ctx context.Context, threadID, checkpointID string, writes []Write) error
}

// HeadWriter is an optional power of a Checkpointer: pending writes saved
// only while their checkpoint is the thread's head. Runnable.ResumeAt uses
// it for the writes against the snapshot it is given, so that a head that
// moved since the snapshot was read is caught before anything is written,
// without reading the head first.
type HeadWriter interface {
	// PutWritesAtHead is PutWrites with a compare-and-set in the same
	// commit: checkpointID must be the thread's head, else it returns a
	// *ConflictError (Want: checkpointID; Head: the head found, "" for a
	// thread without checkpoints) and saves nothing. Its commit is no more
	// durable than PutWrites'.
	PutWritesAtHead(ctx context.Context, threadID, checkpointID string, writes []Write) error
}

// Pruner is an optional power of a Checkpointer: removing a thread's older
// checkpoints and their pending writes in one commit, keeping the head and
// the newest keep checkpoints in all (keep < 1 counts as 1: the head is
// never removed). It returns the rows removed (checkpoints and writes) and
// the bytes of their stored JSON. An unknown thread, or one with no more
// than keep checkpoints, is a no-op. The store does not know whether the
// thread's run has ended; pruning a thread that is still running is the
// caller's mistake to avoid. Errors are the store's, wrapped.
type Pruner interface {
	Prune(ctx context.Context, threadID string, keep int) (rows int, bytes int64, err error)
}

// WriteBuffer is a Checkpointer that keeps every Put and PutWrites in this
// process's memory until Flush writes them all to the store it was made
// from, in one commit durable against power loss: many runs (the rows of a
// batch) then cost one commit and one sync instead of one each. Until
// Flush it behaves as a store holding the base store plus what it
// buffered; Put is a compare-and-set against that. What it buffers is not
// visible to another process, and a crash or a Discard drops it: nothing
// is durable before Flush returns nil. It is deliberately not a Syncer. A
// WriteBuffer is safe for concurrent use by goroutines.
type WriteBuffer interface {
	Checkpointer
	// Preload reads the base store's heads of threadIDs at once, so the
	// first Put of each need not read them one by one. What it read stands
	// in for those heads until the next Flush or Discard; a head another
	// process moves meanwhile is still caught, by Flush. Errors: reading
	// the base store.
	Preload(ctx context.Context, threadIDs []string) error
	// Flush writes everything buffered to the base store in one durable
	// commit and empties the buffer. If another writer moved a thread's
	// head since it was read, Flush returns an error matching ErrConflict
	// and stores nothing. On any error nothing is stored and the buffer
	// keeps everything, so Flush may be tried again or the buffer
	// discarded. An empty buffer commits nothing. After a Flush that
	// returns nil the buffer is empty and may be used again.
	Flush(ctx context.Context) error
	// Discard drops everything buffered, preloaded heads too; the base
	// store is not touched and the buffer may be used again.
	Discard()
}

// Bufferer is an optional power of a Checkpointer: making a WriteBuffer
// over itself. The base store stays open and usable beside the buffer.
type Bufferer interface {
	// NewBuffer returns an empty WriteBuffer whose Flush writes to the
	// store NewBuffer was called on.
	NewBuffer() WriteBuffer
}

// ErrConflict is matched (errors.Is) by every *ConflictError.
var ErrConflict = errors.New("checkpoint conflict")

// ConflictError reports a write that expected another head of the thread: a
// Put whose parent, or a PutWritesAtHead whose checkpoint, was not the
// thread's head because another request advanced the thread first.
type ConflictError struct {
	ThreadID string
	Want     string // the head the writer expected: Put's ParentID, PutWritesAtHead's checkpoint
	Head     string // the head actually found ("" when the thread is empty)
}

// Error implements the error interface for *ConflictError.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("thread %s changed under the request: expected head %q, found %q", e.ThreadID, e.Want, e.Head)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ErrFenced is matched (errors.Is) by every *FencedError.
var ErrFenced = errors.New("fenced")

// FencedError reports a write refused because another process took the
// thread over: the thread's fence (the fencing epoch of the newest holder,
// see Fencer) is above the writer's epoch. The writer has lost its lease and
// must stop; nothing of the write was stored.
type FencedError struct {
	ThreadID string
	Epoch    int64 // the refused writer's epoch
	Fence    int64 // the thread's fence
}

// Error implements the error interface for *FencedError.
func (e *FencedError) Error() string {
	return fmt.Sprintf("thread %s was taken over by another process (fencing epoch %d, this writer's %d)", e.ThreadID, e.Fence, e.Epoch)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// Fencer is an optional power of a Checkpointer shared by processes: it
// keeps a fencing epoch per thread, so that a process that lost the
// thread's lease (paused past its expiry, then resumed) cannot write after
// another took the thread over. The epoch comes from the caller's lease; a
// thread that was never fenced has fence 0.
type Fencer interface {
	// Fence raises the thread's fence to epoch, in one commit. It never
	// lowers it: a fence already above epoch gives a *FencedError (a newer
	// holder exists) and changes nothing. A process that takes a thread
	// over calls it before its first write.
	Fence(ctx context.Context, threadID string, epoch int64) error
	// Fenced returns a view of the store for a holder of the thread at
	// epoch: every checkpoint and pending write to threadID (Put,
	// PutWrites and their durable and at-head forms) checks, in its own
	// transaction, that the thread's fence is not above epoch, else it
	// returns a *FencedError and stores nothing. Other threads and reads
	// are as the store's. The view keeps the store's other powers and must
	// not be closed.
	Fenced(threadID string, epoch int64) Checkpointer
}
