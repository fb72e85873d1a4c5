package returns

import (
	"context"
	"errors"
	"time"

	"assistant/business"
)

// The responses the server keeps for POSTs sent with an Idempotency-Key
// (docs/server.md "Idempotency"), per signed-in person and key, in the
// business store.

// IdempotencyKeyLife is how long the first response to a key is
// returned again for the same request.
const IdempotencyKeyLife = 24 * time.Hour

// StoredResponse is the first response to user's key still kept (stored
// less than IdempotencyKeyLife before now), ok false when there is none:
// a key older than that is forgotten here. Errors: storage errors.
func (s *Service) StoredResponse(ctx context.Context, user, key string) (r business.IdempotentResponse, ok bool, err error) {
	r, err = s.desk.Idempotent(ctx, user, key)
	if errors.Is(err, business.ErrNotFound) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	if cutoff := s.now().Add(-IdempotencyKeyLife); r.CreatedAt.Before(cutoff) {
		return r, false, s.desk.ForgetIdempotent(ctx, user, key, cutoff)
	}
	return r, true, nil
}

// KeepResponse stores r, made now, as the first response to user's key,
// durably, and returns it; when another request with the key stored one
// first, that one is returned instead. Errors: storage errors.
func (s *Service) KeepResponse(ctx context.Context, user, key string, r business.IdempotentResponse) (business.IdempotentResponse, error) {
	r.CreatedAt = s.now()
	return s.desk.KeepIdempotent(ctx, user, key, r)
}
