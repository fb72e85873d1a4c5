package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Prune (flow.Pruner) removes the thread's older checkpoints and their
// pending writes in one transaction, keeping the head and the newest keep
// checkpoints in all (keep < 1 counts as 1: the head is never removed). It
// reports the rows removed (checkpoints and writes) and the bytes of their
// JSON columns as stored. An unknown thread, or one with no more than keep
// checkpoints, is a no-op. Errors are wrapped with the thread.
//
// As the SQLite store's, it does not know whether the thread's run has
// finished, and the oldest checkpoint kept still gives its parent's id.
func (s *Store) Prune(ctx context.Context, threadID string, keep int) (rows int, bytes int64, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		rows, bytes, err = prune(ctx, tx, threadID, int64(max(keep, 1)))
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("prune checkpoints of %s: %w", threadID, err)
	}
	return rows, bytes, nil
}

// prune is Prune in tx, for keep of at least 1.
func prune(ctx context.Context, tx pgx.Tx, threadID string, keep int64) (int, int64, error) {
	// The thread row first (the store's lock order): the head cannot move
	// until the commit.
	var headSeq int64
	err := tx.QueryRow(ctx, `SELECT head_seq FROM checkpoints.threads WHERE thread_id = $1 FOR UPDATE`, threadID).Scan(&headSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	cut := headSeq - keep // checkpoints with seq <= cut go
	if cut < 1 {
		return 0, 0, nil
	}
	// Then the checkpoints that go, so no PutWrites adds to them meanwhile
	// and the count and bytes below are what is deleted.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM checkpoints.checkpoints WHERE thread_id = $1 AND seq <= $2 FOR UPDATE`, threadID, cut); err != nil {
		return 0, 0, err
	}
	// The oldest checkpoint kept loses the one its parent id is read from
	// (seq - 1): it keeps that id itself.
	if _, err := tx.Exec(ctx,
		`UPDATE checkpoints.checkpoints c SET pruned_parent_id = p.checkpoint_id
		 FROM checkpoints.checkpoints p
		 WHERE c.thread_id = $1 AND c.seq = $2 + 1 AND c.pruned_parent_id IS NULL
		   AND p.thread_id = c.thread_id AND p.seq = c.seq - 1`, threadID, cut); err != nil {
		return 0, 0, err
	}
	var cpBytes, wBytes int64
	if err := tx.QueryRow(ctx,
		`SELECT coalesce(sum(coalesce(octet_length(values_json::text), 0) + coalesce(octet_length(next_json::text), 0)
		                     + coalesce(octet_length(metadata_json::text), 0)), 0)
		 FROM checkpoints.checkpoints WHERE thread_id = $1 AND seq <= $2`, threadID, cut).Scan(&cpBytes); err != nil {
		return 0, 0, err
	}
	if err := tx.QueryRow(ctx,
		`SELECT coalesce(sum(coalesce(octet_length(value_json::text), 0)), 0) FROM checkpoints.writes
		 WHERE thread_id = $1 AND seq <= $2`, threadID, cut).Scan(&wBytes); err != nil {
		return 0, 0, err
	}
	// Writes first: they reference their checkpoint.
	nw, err := tx.Exec(ctx, `DELETE FROM checkpoints.writes WHERE thread_id = $1 AND seq <= $2`, threadID, cut)
	if err != nil {
		return 0, 0, err
	}
	nc, err := tx.Exec(ctx, `DELETE FROM checkpoints.checkpoints WHERE thread_id = $1 AND seq <= $2`, threadID, cut)
	if err != nil {
		return 0, 0, err
	}
	return int(nw.RowsAffected() + nc.RowsAffected()), cpBytes + wBytes, nil
}
