package checkpoints

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"assistant/flow"
)

var (
	_ flow.Checkpointer = (*Memory)(nil)
	_ flow.HeadWriter   = (*Memory)(nil)
)

// Memory is a flow.Checkpointer that keeps everything in the process's memory:
// for tests and for runs that need no durability. It is safe for concurrent
// use; every method copies data in and out, so a caller that changes a
// checkpoint after Put or Get never changes what is stored. The zero value is
// not ready for use; call NewMemory.
type Memory struct {
	mu      sync.Mutex
	threads map[string]*memThread
	fences  map[string]int64 // thread → fencing epoch (Fence)
}

// memThread is one thread: its checkpoints in Seq order and their writes.
type memThread struct {
	checkpoints []*flow.Checkpoint                 // checkpoints[i].Seq == i+1
	index       map[string]int                     // checkpoint id → index in checkpoints
	writes      map[string]map[writeKey]flow.Write // checkpoint id → pending writes
}

// writeKey identifies a pending write; a second write with the same key
// replaces the first.
type writeKey struct {
	taskID string
	kind   string
	idx    int
}

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{threads: make(map[string]*memThread), fences: make(map[string]int64)}
}

// Put stores a copy of cp as the new head of cp.ThreadID and sets cp.Seq.
// cp.ParentID must be the current head's id ("" for a new thread), else Put
// returns a *flow.ConflictError and stores nothing. cp.PendingWrites is
// ignored. A checkpoint id already used in the thread, or a Values or
// Metadata.Writes value that is not JSON, is an error.
func (m *Memory) Put(ctx context.Context, cp *flow.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validateCheckpoint(cp); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	th := m.threads[cp.ThreadID]
	head := ""
	if th != nil {
		head = th.checkpoints[len(th.checkpoints)-1].ID
	}
	if head != cp.ParentID {
		return &flow.ConflictError{ThreadID: cp.ThreadID, Want: cp.ParentID, Head: head}
	}
	if th == nil {
		th = &memThread{index: make(map[string]int), writes: make(map[string]map[writeKey]flow.Write)}
		m.threads[cp.ThreadID] = th
	}
	if _, dup := th.index[cp.ID]; dup {
		return fmt.Errorf("put checkpoint %s/%s: checkpoint id already in use", cp.ThreadID, cp.ID)
	}
	stored := cloneCheckpoint(cp)
	stored.Seq = int64(len(th.checkpoints) + 1)
	th.index[stored.ID] = len(th.checkpoints)
	th.checkpoints = append(th.checkpoints, stored)
	cp.Seq = stored.Seq
	return nil
}

// Get returns a copy of the checkpoint checkpointID of threadID, or of the
// thread's head when checkpointID is "", with its pending writes ordered by
// (TaskID, Kind, Idx). An unknown thread or id gives (nil, nil).
func (m *Memory) Get(ctx context.Context, threadID, checkpointID string) (*flow.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	th := m.threads[threadID]
	if th == nil {
		return nil, nil
	}
	i := len(th.checkpoints) - 1
	if checkpointID != "" {
		var ok bool
		if i, ok = th.index[checkpointID]; !ok {
			return nil, nil
		}
	}
	cp := cloneCheckpoint(th.checkpoints[i])
	for _, w := range th.writes[cp.ID] {
		cp.PendingWrites = append(cp.PendingWrites, cloneWrite(w))
	}
	slices.SortFunc(cp.PendingWrites, compareWrites)
	return cp, nil
}

// PutWrites saves copies of writes against checkpoint checkpointID of
// threadID. A write with the same (TaskID, Kind, Idx) as a stored one
// replaces it. An unknown checkpoint gives an error wrapping
// ErrUnknownCheckpoint and stores nothing.
func (m *Memory) PutWrites(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validateWrites(threadID, checkpointID, writes); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	th := m.threads[threadID]
	if th == nil {
		return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, ErrUnknownCheckpoint)
	}
	if _, ok := th.index[checkpointID]; !ok {
		return fmt.Errorf("put writes %s/%s: %w", threadID, checkpointID, ErrUnknownCheckpoint)
	}
	mergeWrites(th.writes, checkpointID, writes)
	return nil
}

// PutWritesAtHead is PutWrites while checkpointID is the thread's head
// (flow.HeadWriter): else it returns a *flow.ConflictError and stores
// nothing.
func (m *Memory) PutWritesAtHead(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validateWrites(threadID, checkpointID, writes); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	head := ""
	th := m.threads[threadID]
	if th != nil {
		head = th.checkpoints[len(th.checkpoints)-1].ID
	}
	if head != checkpointID {
		return &flow.ConflictError{ThreadID: threadID, Want: checkpointID, Head: head}
	}
	mergeWrites(th.writes, checkpointID, writes)
	return nil
}

// List returns copies of the thread's checkpoints newest first (by Seq),
// without pending writes, narrowed by opts. An unknown thread, or an
// opts.Before id the thread does not have, gives an empty list.
func (m *Memory) List(ctx context.Context, threadID string, opts flow.ListOptions) ([]*flow.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()

	th := m.threads[threadID]
	if th == nil {
		return nil, nil
	}
	end := len(th.checkpoints) // exclusive
	if opts.Before != "" {
		i, ok := th.index[opts.Before]
		if !ok {
			return nil, nil
		}
		end = i
	}
	var out []*flow.Checkpoint
	for i := end - 1; i >= 0; i-- {
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
		if cp := th.checkpoints[i]; matches(cp, opts) {
			out = append(out, cloneCheckpoint(cp))
		}
	}
	return out, nil
}

// DeleteThread removes the thread's checkpoints and pending writes. Deleting
// a thread that does not exist is a no-op.
func (m *Memory) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.threads, threadID)
	return nil
}
