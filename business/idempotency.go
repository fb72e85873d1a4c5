package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// IdempotentResponse is the first response the server sent to a POST
// that carried an Idempotency-Key (docs/server.md "Idempotency"): the
// hash of the request it answered, its HTTP status and body, and when it
// was stored (UTC).
type IdempotentResponse struct {
	RequestHash string
	Status      int
	Body        []byte
	CreatedAt   time.Time
}

// Idempotent returns the response stored for user's key. Errors:
// ErrNotFound when none is, storage errors.
func (s *Store) Idempotent(ctx context.Context, user, key string) (IdempotentResponse, error) {
	var r IdempotentResponse
	var at string
	err := s.h.Q().QueryRowContext(ctx, s.sq().idempotent, user, key).Scan(&r.RequestHash, &r.Status, &r.Body, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return IdempotentResponse{}, fmt.Errorf("idempotency key of %s: %w", user, ErrNotFound)
	}
	if err == nil {
		r.CreatedAt, err = parseTime(at)
	}
	if err != nil {
		return IdempotentResponse{}, fmt.Errorf("idempotency key of %s: %w", user, err)
	}
	return r, nil
}

// KeepIdempotent stores r as the response to user's key, in one durable
// commit, unless a response is stored for the key already (another
// request with it finished first): then nothing is written, and the one
// stored is returned. Errors: storage errors.
func (s *Store) KeepIdempotent(ctx context.Context, user, key string, r IdempotentResponse) (IdempotentResponse, error) {
	var wrote bool
	err := s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		res, err := tx.ExecContext(ctx, s.sq().insertIdempotent, user, key, r.RequestHash, r.Status, r.Body, formatTime(r.CreatedAt))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if wrote = n > 0; !wrote {
			return sqlstore.ErrNothingWritten
		}
		return nil
	})
	if err != nil {
		return IdempotentResponse{}, fmt.Errorf("keep the response of an idempotency key of %s: %w", user, err)
	}
	if !wrote {
		return s.Idempotent(ctx, user, key)
	}
	return r, nil
}

// ForgetIdempotent deletes user's key when it was stored before
// before (a key older than the server keeps one): one plain commit.
func (s *Store) ForgetIdempotent(ctx context.Context, user, key string, before time.Time) error {
	if _, err := s.h.Q().ExecContext(ctx, s.sq().forgetIdempotent, user, key, formatTime(before)); err != nil {
		return fmt.Errorf("forget an idempotency key of %s: %w", user, err)
	}
	return nil
}
