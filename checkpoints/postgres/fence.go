package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"assistant/flow"
)

// threadFence is the holder a fenced view writes for: thread at epoch.
type threadFence struct {
	thread string
	epoch  int64
}

// fenceLockClass is the first key of the advisory locks that order fenced
// writes and Fence on one thread ("ASCP"); the second is a hash of the
// thread id. Two threads whose ids hash alike only wait for each other.
const fenceLockClass = 0x41534350

// The statements of fencing. A fenced write takes the thread's lock
// shared, Fence takes it exclusive: a Fence waits for the writes under
// way to commit, and a write that comes after it reads the fence it left.
// (A lock on the fences row would not do: a thread never fenced has none.)
const (
	sqlFenceLockShared = `SELECT pg_advisory_xact_lock_shared($1, hashtext($2))`
	sqlFenceLock       = `SELECT pg_advisory_xact_lock($1, hashtext($2))`
	sqlFenceOf         = `SELECT coalesce((SELECT epoch FROM checkpoints.fences WHERE thread_id = $1), 0)`
	sqlRaiseFence      = `INSERT INTO checkpoints.fences (thread_id, epoch) VALUES ($1, $2)
		ON CONFLICT (thread_id) DO UPDATE SET epoch = excluded.epoch`
)

// Fence raises threadID's fence to epoch (flow.Fencer) in one commit; a
// fence already above epoch gives a *flow.FencedError and changes nothing.
// It waits for the fenced writes to the thread under way to commit.
func (s *Store) Fence(ctx context.Context, threadID string, epoch int64) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlFenceLock, fenceLockClass, threadID); err != nil {
			return err
		}
		var cur int64
		if err := tx.QueryRow(ctx, sqlFenceOf, threadID).Scan(&cur); err != nil {
			return err
		}
		if cur > epoch {
			return &flow.FencedError{ThreadID: threadID, Epoch: epoch, Fence: cur}
		}
		_, err := tx.Exec(ctx, sqlRaiseFence, threadID, epoch)
		return err
	})
	if err != nil && !errors.Is(err, flow.ErrFenced) {
		return fmt.Errorf("fence thread %s at %d: %w", threadID, epoch, err)
	}
	return err
}

// Fenced returns a view of s whose writes to threadID are refused with a
// *flow.FencedError once the thread's fence is above epoch (flow.Fencer):
// each checks the fence in the transaction of the write. The view shares
// s's pool and powers; its Close does nothing.
func (s *Store) Fenced(threadID string, epoch int64) flow.Checkpointer {
	return &Store{pool: s.pool, fence: &threadFence{thread: threadID, epoch: epoch}}
}

// write runs fn, the statements of one write to threadID: on the pool
// (each statement commits alone), or, on a fenced view of threadID, in a
// transaction that first checks the thread's fence is not above the
// view's epoch (else a *flow.FencedError, and fn does not run).
func (s *Store) write(ctx context.Context, threadID string, fn func(q dbtx) error) error {
	if s.fence == nil || s.fence.thread != threadID {
		return fn(s.pool)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlFenceLockShared, fenceLockClass, threadID); err != nil {
			return err
		}
		// A statement after the lock: under READ COMMITTED it sees every
		// Fence that committed before the lock was granted.
		var cur int64
		if err := tx.QueryRow(ctx, sqlFenceOf, threadID).Scan(&cur); err != nil {
			return err
		}
		if cur > s.fence.epoch {
			return &flow.FencedError{ThreadID: threadID, Epoch: s.fence.epoch, Fence: cur}
		}
		return fn(tx)
	})
}
