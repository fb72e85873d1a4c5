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

// KeptResponse is the first response the server sent to a request with
// an Idempotency-Key: the hex SHA-256 of the request it answered, its
// HTTP status and body, and when it was kept (UTC).
type KeptResponse struct {
	RequestHash string
	Status      int
	Body        []byte
	CreatedAt   time.Time
}

// StoredResponse is the first response to user's key still kept (stored
// less than IdempotencyKeyLife before now), ok false when there is none:
// a key older than that is forgotten here. Errors: storage errors.
func (s *Service) StoredResponse(ctx context.Context, user, key string) (KeptResponse, bool, error) {
	r, err := s.desk.Idempotent(ctx, user, key)
	if errors.Is(err, business.ErrNotFound) {
		return KeptResponse{}, false, nil
	}
	if err != nil {
		return KeptResponse{}, false, err
	}
	if cutoff := s.now().Add(-IdempotencyKeyLife); r.CreatedAt.Before(cutoff) {
		return KeptResponse{}, false, s.desk.ForgetIdempotent(ctx, user, key, cutoff)
	}
	return KeptResponse(r), true, nil
}

// KeepResponse stores r, made now, as the first response to user's key,
// durably, and returns it; when another request with the key stored one
// first, that one is returned instead. Errors: storage errors.
func (s *Service) KeepResponse(ctx context.Context, user, key string, r KeptResponse) (KeptResponse, error) {
	r.CreatedAt = s.now()
	kept, err := s.desk.KeepIdempotent(ctx, user, key, business.IdempotentResponse(r))
	return KeptResponse(kept), err
}
