package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"assistant/internal/sqlstore"
)

// ReviewPending is the review_status of a newly submitted application. An
// order with a pending application is not eligible for another return.
const ReviewPending = "pending"

// Draft is a prepared return request, waiting for a person's approval. It may
// be submitted until ExpiresAt (exclusive).
type Draft struct {
	ID        string    `json:"draft_id"`
	TaskID    string    `json:"task_id"`
	OrderID   string    `json:"order_id"`
	User      string    `json:"user"`
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"created_at"` // UTC
	ExpiresAt time.Time `json:"expires_at"` // UTC, wall clock
	// Version counts the task's drafts from 1: an edit or a request for
	// changes prepares the next one.
	Version int `json:"version,omitempty"`
	// Superseded is true once a newer version of the task's draft exists:
	// it can no longer be submitted.
	Superseded bool `json:"superseded,omitempty"`
}

// MaxDraftVersions is how many drafts one task may have; an edit or a
// request for changes past it ends the request (flow/returns).
const MaxDraftVersions = 5

// queryer is what the read helpers need from *sql.DB or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// PrepareDraft prepares version 1 of task taskID's draft
// (PrepareDraftVersion).
func (s *Store) PrepareDraft(ctx context.Context, taskID, orderID, user, reason string, ttl time.Duration, now time.Time) (d Draft, reused bool, err error) {
	return s.PrepareDraftVersion(ctx, taskID, 1, orderID, user, reason, ttl, now)
}

// PrepareDraftVersion creates version version of the draft of task taskID
// for order orderID of user, expiring at now+ttl (ttl <= 0 means
// DefaultDraftTTL), and marks the task's older versions superseded in the
// same commit; or it returns that version unchanged with reused=true; its
// expiry is NOT refreshed. The task id and version are the idempotency key
// (UNIQUE (task_id, version)), so a prepare node that runs again never
// makes a second draft of one version.
//
// Errors: ErrNotFound when the order is unknown or another user's, or when
// the task's draft belongs to another user; ErrConflict when that version
// exists for another order or reason (same task id, different input); a
// version below 1 is an error naming it.
func (s *Store) PrepareDraftVersion(ctx context.Context, taskID string, version int, orderID, user, reason string, ttl time.Duration, now time.Time) (d Draft, reused bool, err error) {
	if ttl <= 0 {
		ttl = DefaultDraftTTL
	}
	if taskID == "" {
		return Draft{}, false, fmt.Errorf("prepare draft: empty task id")
	}
	if version < 1 {
		return Draft{}, false, fmt.Errorf("prepare draft of task %s: version %d is not 1 or more", taskID, version)
	}
	if version == 1 && s.h.InTxn() {
		// In a chunk's transaction, which commits durably, without a
		// savepoint of its own (two statements, on PostgreSQL two round
		// trips): a first version writes one row in one statement and
		// runs nothing after it, so every error it returns comes before
		// that write or from it, and a statement that fails writes
		// nothing (on PostgreSQL it aborts the chunk's transaction, which
		// then fails whole and is rolled back).
		return s.prepareDraftTx(ctx, s.h.Q(), taskID, version, orderID, user, reason, ttl, now)
	}
	// Durable at commit: the checkpoint written after prepare names the
	// draft, and no power loss may keep that checkpoint and lose the draft.
	var txErr error
	err = s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		d, reused, txErr = s.prepareDraftTx(ctx, tx, taskID, version, orderID, user, reason, ttl, now)
		if txErr == nil && reused {
			return sqlstore.ErrNothingWritten
		}
		return txErr
	})
	switch {
	case txErr != nil:
		return Draft{}, false, txErr
	case err != nil:
		return Draft{}, false, fmt.Errorf("prepare draft of task %s: %w", taskID, err)
	}
	return d, reused, nil
}

func (s *Store) prepareDraftTx(ctx context.Context, tx sqlstore.Querier, taskID string, version int, orderID, user, reason string, ttl time.Duration, now time.Time) (d Draft, reused bool, err error) {
	s.rows.forget(taskID) // it may write a draft of the task
	if version == 1 {
		// The usual case in one statement: no draft yet and the user's
		// order. Nothing inserted means one of them is not so, and the
		// reads below tell which.
		d, ok, err := s.insertFirstDraft(ctx, tx, taskID, orderID, user, reason, ttl, now)
		if err != nil {
			return Draft{}, false, fmt.Errorf("prepare draft of task %s: %w", taskID, err)
		}
		if ok {
			return d, false, nil
		}
	}
	d, err = scanDraft(tx.QueryRowContext(ctx, s.q.draftByVersion, taskID, version))
	switch {
	case err == nil:
		if d.User != user {
			return Draft{}, false, fmt.Errorf("prepare draft of task %s: %w", taskID, ErrNotFound)
		}
		if d.OrderID != orderID || d.Reason != reason {
			return Draft{}, false, fmt.Errorf("prepare draft of task %s: draft %s is for order %s, reason %q: %w",
				taskID, d.ID, d.OrderID, d.Reason, ErrConflict)
		}
		return d, true, nil
	case !errors.Is(err, ErrNotFound):
		return Draft{}, false, fmt.Errorf("prepare draft of task %s: %w", taskID, err)
	}

	// An order is identified by its owner and its id (migration 0008): the
	// user's order, or none.
	var owner string
	err = tx.QueryRowContext(ctx, s.q.orderOwner, user, orderID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return Draft{}, false, fmt.Errorf("prepare draft of task %s: order %s: %w", taskID, orderID, ErrNotFound)
	}
	if err != nil {
		return Draft{}, false, fmt.Errorf("prepare draft of task %s: %w", taskID, err)
	}

	d, err = newDraft(taskID, orderID, user, reason, ttl, now, version)
	if err != nil {
		return Draft{}, false, fmt.Errorf("prepare draft of task %s: %w", taskID, err)
	}
	if version > 1 {
		// One current draft per task (drafts_current): the older versions
		// are superseded before the new one is inserted.
		if _, err := tx.ExecContext(ctx, s.q.supersedeDrafts, formatTime(now), taskID, version); err != nil {
			return Draft{}, false, fmt.Errorf("prepare draft of task %s: supersede older versions: %w", taskID, err)
		}
	}
	_, err = tx.ExecContext(ctx, s.q.insertDraft,
		d.ID, d.TaskID, d.OrderID, d.User, d.Reason, formatTime(d.CreatedAt), formatTime(d.ExpiresAt), d.Version)
	if err != nil {
		return Draft{}, false, fmt.Errorf("prepare draft of task %s: %w", taskID, err)
	}
	return d, false, nil
}

// newDraft is version version of task taskID's draft for order orderID of
// user, with a new id, created at now and expiring at now+ttl (both as
// stored). Errors: the random source's.
func newDraft(taskID, orderID, user, reason string, ttl time.Duration, now time.Time, version int) (Draft, error) {
	id, err := newID("d_")
	if err != nil {
		return Draft{}, err
	}
	return Draft{
		ID:        id,
		TaskID:    taskID,
		OrderID:   orderID,
		User:      user,
		Reason:    reason,
		CreatedAt: storedTime(now),
		ExpiresAt: storedTime(now.Add(ttl)),
		Version:   version,
	}, nil
}

// insertFirstDraft inserts version 1 of task taskID's draft for order
// orderID of user, expiring at now+ttl, in one statement that checks what
// prepareDraftTx reads first: ok is false, and nothing is written, when
// the task has a draft of that version already or the order is not the
// user's.
func (s *Store) insertFirstDraft(ctx context.Context, tx sqlstore.Querier, taskID, orderID, user, reason string, ttl time.Duration, now time.Time) (d Draft, ok bool, err error) {
	d, err = newDraft(taskID, orderID, user, reason, ttl, now, 1)
	if err != nil {
		return Draft{}, false, err
	}
	res, err := tx.ExecContext(ctx, s.q.insertFirstDraft,
		d.ID, d.TaskID, d.OrderID, d.User, d.Reason, formatTime(d.CreatedAt), formatTime(d.ExpiresAt), d.Version)
	if err != nil {
		return Draft{}, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Draft{}, false, err
	}
	return d, n == 1, nil
}

// DraftVersions returns every draft of task taskID, version 1 first;
// empty when it has none. It does not check the user.
func (s *Store) DraftVersions(ctx context.Context, taskID string) ([]Draft, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.q.draftVersions, taskID)
	if err != nil {
		return nil, fmt.Errorf("drafts of task %s: %w", taskID, err)
	}
	defer rows.Close()
	out := []Draft{}
	for rows.Next() {
		d, err := scanDraft(rows)
		if err != nil {
			return nil, fmt.Errorf("drafts of task %s: %w", taskID, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("drafts of task %s: %w", taskID, err)
	}
	return out, nil
}

// DraftByTask returns the current (not superseded) draft of task taskID,
// or ErrNotFound. It does not check the user; the caller compares
// Draft.User.
func (s *Store) DraftByTask(ctx context.Context, taskID string) (Draft, error) {
	d, err := scanDraft(s.h.Q().QueryRowContext(ctx, s.q.currentDraft, taskID))
	if err != nil {
		return Draft{}, fmt.Errorf("draft of task %s: %w", taskID, err)
	}
	return d, nil
}

// Draft returns the draft draftID, or ErrNotFound. It does not check the
// user; the caller compares Draft.User.
func (s *Store) Draft(ctx context.Context, draftID string) (Draft, error) {
	d, err := scanDraft(s.h.Q().QueryRowContext(ctx, s.q.draft, draftID))
	if err != nil {
		return Draft{}, fmt.Errorf("draft %s: %w", draftID, err)
	}
	return d, nil
}

// scanDraft reads one row of a draft's columns (queries); no row is
// ErrNotFound.
func scanDraft(sc scanner) (Draft, error) {
	var (
		d                  Draft
		created, expiresAt string
	)
	err := sc.Scan(&d.ID, &d.TaskID, &d.OrderID, &d.User, &d.Reason, &created, &expiresAt, &d.Version, &d.Superseded)
	if errors.Is(err, sql.ErrNoRows) {
		return Draft{}, ErrNotFound
	}
	if err != nil {
		return Draft{}, err
	}
	if d.CreatedAt, err = parseTime(created); err != nil {
		return Draft{}, err
	}
	if d.ExpiresAt, err = parseTime(expiresAt); err != nil {
		return Draft{}, err
	}
	return d, nil
}

// newID returns prefix + a time-ordered UUIDv7, so ids sort by creation.
func newID(prefix string) (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return prefix + u.String(), nil
}
