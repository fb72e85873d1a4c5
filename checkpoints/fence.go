package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"assistant/flow"
)

var _ flow.Fencer = (*SQLite)(nil)

// threadFence is the holder a fenced view writes for: thread at epoch.
type threadFence struct {
	thread string
	epoch  int64
}

// sqlFence reads a thread's fence (table fences, migrations/0003_fences.sql).
const sqlFence = `SELECT epoch FROM fences WHERE thread_id = ?`

// Fence raises threadID's fence to epoch (flow.Fencer) in one commit; a
// fence already above epoch gives a *flow.FencedError and changes nothing.
func (s *SQLite) Fence(ctx context.Context, threadID string, epoch int64) error {
	err := s.inTx(ctx, false, func(tx *sql.Tx) error {
		cur, err := s.fenceOf(ctx, tx, threadID)
		if err != nil {
			return err
		}
		if cur > epoch {
			return &flow.FencedError{ThreadID: threadID, Epoch: epoch, Fence: cur}
		}
		_, err = tx.ExecContext(ctx,
			`INSERT INTO fences (thread_id, epoch) VALUES (?, ?) ON CONFLICT (thread_id) DO UPDATE SET epoch = excluded.epoch`,
			threadID, epoch)
		return err
	})
	if err != nil && !errors.Is(err, flow.ErrFenced) {
		return fmt.Errorf("fence thread %s at %d: %w", threadID, epoch, err)
	}
	return err
}

// Fenced returns a view of s whose writes to threadID are refused with a
// *flow.FencedError once the thread's fence is above epoch (flow.Fencer).
// The view shares s's database and powers; its Close does nothing.
func (s *SQLite) Fenced(threadID string, epoch int64) flow.Checkpointer {
	v := *s
	v.fence = &threadFence{thread: threadID, epoch: epoch}
	return &v
}

// fenceOf returns the fence of threadID in tx (0 when it has none).
func (s *SQLite) fenceOf(ctx context.Context, tx *sql.Tx, threadID string) (int64, error) {
	var epoch int64
	err := s.stmts.Tx(tx).QueryRowContext(ctx, sqlFence, threadID).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return epoch, err
}

// noFence is the fence epoch of a write that checks no fence: no fence is
// above it.
const noFence = math.MaxInt64

// fenceEpoch is the epoch above which a fence refuses this view's writes
// to threadID: the view's epoch on a fenced view of threadID, else
// noFence.
func (s *SQLite) fenceEpoch(threadID string) int64 {
	if s.fence == nil || s.fence.thread != threadID {
		return noFence
	}
	return s.fence.epoch
}

// checkFence wraps fn, a write to threadID, so that on a fenced view it
// first checks in the same transaction that the thread's fence is not
// above the view's epoch. Elsewhere fn is returned as it is.
func (s *SQLite) checkFence(ctx context.Context, threadID string, fn func(tx *sql.Tx) error) func(tx *sql.Tx) error {
	if s.fence == nil || s.fence.thread != threadID {
		return fn
	}
	return func(tx *sql.Tx) error {
		cur, err := s.fenceOf(ctx, tx, threadID)
		if err != nil {
			return err
		}
		if cur > s.fence.epoch {
			return &flow.FencedError{ThreadID: threadID, Epoch: s.fence.epoch, Fence: cur}
		}
		return fn(tx)
	}
}

var _ flow.Fencer = (*Memory)(nil)

// Fence raises threadID's fence to epoch (flow.Fencer); a fence already
// above epoch gives a *flow.FencedError.
func (m *Memory) Fence(ctx context.Context, threadID string, epoch int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.fences[threadID]; cur > epoch {
		return &flow.FencedError{ThreadID: threadID, Epoch: epoch, Fence: cur}
	}
	m.fences[threadID] = epoch
	return nil
}

// Fenced returns a view of m whose writes to threadID are refused with a
// *flow.FencedError once the thread's fence is above epoch (flow.Fencer).
// The check and the write are two steps under the store's lock: Memory
// serves one process, whose writers a takeover does not pause.
func (m *Memory) Fenced(threadID string, epoch int64) flow.Checkpointer {
	return &fencedMemory{Memory: m, thread: threadID, epoch: epoch}
}

// fencedMemory is the view Memory.Fenced returns.
type fencedMemory struct {
	*Memory
	thread string
	epoch  int64
}

func (f *fencedMemory) check(threadID string) error {
	if threadID != f.thread {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur := f.fences[threadID]; cur > f.epoch {
		return &flow.FencedError{ThreadID: threadID, Epoch: f.epoch, Fence: cur}
	}
	return nil
}

// Put is Memory.Put after the fence check.
func (f *fencedMemory) Put(ctx context.Context, cp *flow.Checkpoint) error {
	if err := f.check(cp.ThreadID); err != nil {
		return err
	}
	return f.Memory.Put(ctx, cp)
}

// PutWrites is Memory.PutWrites after the fence check.
func (f *fencedMemory) PutWrites(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	if err := f.check(threadID); err != nil {
		return err
	}
	return f.Memory.PutWrites(ctx, threadID, checkpointID, writes)
}

// PutWritesAtHead is Memory.PutWritesAtHead after the fence check.
func (f *fencedMemory) PutWritesAtHead(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	if err := f.check(threadID); err != nil {
		return err
	}
	return f.Memory.PutWritesAtHead(ctx, threadID, checkpointID, writes)
}
