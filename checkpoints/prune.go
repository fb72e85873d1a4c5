package checkpoints

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Prune (flow.Pruner) removes the thread's older checkpoints and their
// pending writes in one transaction, keeping the head and the newest keep
// checkpoints in all (keep < 1 counts as 1: the head is never removed). It
// reports the rows removed (checkpoints and writes) and the bytes of their
// JSON columns. An unknown thread, or one with no more than keep
// checkpoints, is a no-op. Errors are wrapped with the thread.
//
// It does not know whether the thread's run has finished; the caller
// decides that (see flow/returns.Service.Prune). The oldest checkpoint kept
// still gives its parent's id (Get, List), though that checkpoint is gone:
// nothing follows parent ids back, History lists by Seq.
func (s *SQLite) Prune(ctx context.Context, threadID string, keep int) (rows int, bytes int64, err error) {
	rows, bytes, err = s.prune(ctx, threadID, max(keep, 1))
	if err != nil {
		return 0, 0, fmt.Errorf("prune checkpoints of %s: %w", threadID, err)
	}
	return rows, bytes, nil
}

// prune is Prune in one transaction, for keep of at least 1; the caller
// wraps its errors.
func (s *SQLite) prune(ctx context.Context, threadID string, keep int) (int, int64, error) {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the head cannot move under us
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()

	var headSeq int64
	err = tx.QueryRowContext(ctx, `SELECT head_seq FROM threads WHERE thread_id = ?`, threadID).Scan(&headSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	cut := headSeq - int64(keep) // checkpoints with seq <= cut go
	if cut < 1 {
		return 0, 0, nil
	}

	// The oldest checkpoint kept loses the one its parent id is read from
	// (seq - 1): it keeps that id itself.
	if _, err := tx.ExecContext(ctx,
		`UPDATE checkpoints SET pruned_parent_id =
		        (SELECT p.checkpoint_id FROM checkpoints p WHERE p.thread_id = checkpoints.thread_id AND p.seq = checkpoints.seq - 1)
		 WHERE thread_id = ? AND seq = ? AND pruned_parent_id IS NULL`, threadID, cut+1); err != nil {
		return 0, 0, err
	}
	n, err := prunedBytes(ctx, tx, threadID, cut)
	if err != nil {
		return 0, 0, err
	}
	// Writes first: they reference their checkpoint (foreign keys are on).
	nw, err := deleteUpTo(ctx, tx, `DELETE FROM writes WHERE thread_id = ? AND seq <= ?`, threadID, cut)
	if err != nil {
		return 0, 0, err
	}
	nc, err := deleteUpTo(ctx, tx, `DELETE FROM checkpoints WHERE thread_id = ? AND seq <= ?`, threadID, cut)
	if err != nil {
		return 0, 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, err
	}
	return int(nw + nc), n, nil
}

// prunedBytes returns, in tx, the bytes of the JSON columns of the thread's
// checkpoints and pending writes with seq <= cut.
func prunedBytes(ctx context.Context, tx *sql.Tx, threadID string, cut int64) (int64, error) {
	var cpBytes, wBytes int64
	if err := tx.QueryRowContext(ctx,
		`SELECT coalesce(sum(coalesce(length(CAST(values_json AS BLOB)), 0) + coalesce(length(CAST(next_json AS BLOB)), 0)
		                     + coalesce(length(CAST(metadata_json AS BLOB)), 0)), 0)
		 FROM checkpoints WHERE thread_id = ? AND seq <= ?`, threadID, cut).Scan(&cpBytes); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx,
		`SELECT coalesce(sum(coalesce(length(CAST(value_json AS BLOB)), 0)), 0) FROM writes
		 WHERE thread_id = ? AND seq <= ?`, threadID, cut).Scan(&wBytes); err != nil {
		return 0, err
	}
	return cpBytes + wBytes, nil
}

// deleteUpTo runs query, a DELETE of the thread's rows with seq <= cut
// taking those two arguments, in tx and returns how many rows it removed.
func deleteUpTo(ctx context.Context, tx *sql.Tx, query, threadID string, cut int64) (int64, error) {
	res, err := tx.ExecContext(ctx, query, threadID, cut)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
