package returns

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"assistant/business"
)

// Access tokens (docs/server.md "Access tokens"): an operator makes one
// for a person; the server takes the person a request's token names as
// the identity of the request. The business store keeps only the
// token's SHA-256, with who made it, when, its expiry and when it was
// last used.

// TokenPrefix begins every access token, so a person (or a scanner of
// leaked secrets) tells one apart from other strings.
const TokenPrefix = "ast_"

// tokenBytes is how many random bytes a token carries after its prefix,
// base64url without padding (43 characters).
const tokenBytes = 32

// DefaultTokenLife is how long a token lasts when the operator gives no
// expiry (--expires).
const DefaultTokenLife = 90 * 24 * time.Hour

// TokenTouchEvery is how often, at most, a sign-in records a token's
// last use (one plain commit).
const TokenTouchEvery = time.Minute

// TokenOptions are what an operator gives to make a token: the person it
// signs in as (User), who makes it (By, the operator) and how long it
// lasts (Life; 0 means it never expires).
type TokenOptions struct {
	User string
	By   string
	Life time.Duration
}

// NewToken is what making a token prints, once: the only time the token
// itself is shown. ExpiresAt is zero (null) for a token that never
// expires.
type NewToken struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// TokenList is what listing the tokens prints: every token made, oldest
// first, without the tokens themselves.
type TokenList struct {
	Tokens []business.AccessToken `json:"tokens"`
}

// RevokedToken is what revoking a token prints: its id and person,
// whether this revoke changed anything (false: it was revoked already)
// and when it was revoked (UTC).
type RevokedToken struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Changed   bool      `json:"changed"`
	RevokedAt time.Time `json:"revoked_at"`
}

// MakeToken makes an access token for o.User, made by o.By, lasting
// o.Life from now (0: never expires), and stores its hash in one durable
// commit. The token is in the result and nowhere else. Errors: ErrInvalid
// for a bad user name or a negative life; storage errors.
func (s *Service) MakeToken(ctx context.Context, o TokenOptions) (*NewToken, error) {
	if err := ValidUser(o.User); err != nil {
		return nil, fmt.Errorf("%w: user: %v", ErrInvalid, err)
	}
	if o.Life < 0 {
		return nil, fmt.Errorf("%w: a token's life must not be negative, not %s", ErrInvalid, o.Life)
	}
	secret := make([]byte, tokenBytes)
	idBytes := make([]byte, 6)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("make an access token: %w", err)
	}
	if _, err := rand.Read(idBytes); err != nil {
		return nil, fmt.Errorf("make an access token: %w", err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(secret)
	now := s.now()
	t := business.AccessToken{ID: "tok-" + hex.EncodeToString(idBytes), User: o.User, Hash: tokenHash(token), CreatedBy: o.By, CreatedAt: now}
	if o.Life > 0 {
		t.ExpiresAt = now.Add(o.Life)
	}
	if err := s.desk.AddToken(ctx, t); err != nil {
		return nil, err
	}
	return &NewToken{ID: t.ID, User: t.User, Token: token, ExpiresAt: t.ExpiresAt}, nil
}

// Tokens lists every access token made, oldest first, without the
// tokens. It writes nothing.
func (s *Service) Tokens(ctx context.Context) (*TokenList, error) {
	ts, err := s.desk.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	return &TokenList{Tokens: ts}, nil
}

// RevokeToken revokes the access token id now: no request signs in with
// it again. Revoking a revoked token changes nothing (Changed false, the
// first revoke's time). Errors: ErrNotFound for an id no token has;
// storage errors.
func (s *Service) RevokeToken(ctx context.Context, id string) (*RevokedToken, error) {
	now := s.now()
	if _, err := s.desk.RevokeToken(ctx, id, now); errors.Is(err, business.ErrNotFound) {
		return nil, errorf(Hint{Before: "list the access tokens to see their ids"}, "access token %q: %w", id, ErrNotFound)
	} else if err != nil {
		return nil, err
	}
	ts, err := s.desk.Tokens(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.ID == id {
			return &RevokedToken{ID: t.ID, User: t.User, Changed: t.RevokedAt.Equal(now), RevokedAt: t.RevokedAt}, nil
		}
	}
	return nil, fmt.Errorf("access token %s: %w", id, ErrNotFound)
}

// TokenRefusedError is the refusal of an access token the store knows
// that no longer signs in (revoked or expired): its id and its person,
// so that the server can count the failure against that person
// (docs/server.md "Access tokens"). It matches ErrUnauthenticated.
type TokenRefusedError struct {
	ID, User string
	err      error
}

func (e *TokenRefusedError) Error() string { return e.err.Error() }

func (e *TokenRefusedError) Unwrap() error { return e.err }

// Authenticate returns the person access token token signs in as, and
// records its use (at most once a TokenTouchEvery). Errors:
// ErrUnauthenticated for a token that is malformed, unknown, revoked or
// expired (at or after its expires_at by the service's clock), the
// message saying which without the token; a revoked or expired one is a
// *TokenRefusedError naming its person; storage errors.
func (s *Service) Authenticate(ctx context.Context, token string) (string, error) {
	hint := Hint{Before: "ask an operator for a new access token"}
	if !strings.HasPrefix(token, TokenPrefix) || len(token) != len(TokenPrefix)+base64.RawURLEncoding.EncodedLen(tokenBytes) {
		return "", errorf(hint, "the access token is not one this server makes: %w", ErrUnauthenticated)
	}
	t, err := s.desk.TokenByHash(ctx, tokenHash(token))
	if errors.Is(err, business.ErrNotFound) {
		return "", errorf(hint, "the access token is unknown: %w", ErrUnauthenticated)
	}
	if err != nil {
		return "", err
	}
	now := s.now()
	switch {
	case !t.RevokedAt.IsZero():
		return "", &TokenRefusedError{ID: t.ID, User: t.User, err: errorf(hint, "access token %s was revoked at %s: %w", t.ID, t.RevokedAt.UTC().Format(time.RFC3339), ErrUnauthenticated)}
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return "", &TokenRefusedError{ID: t.ID, User: t.User, err: errorf(hint, "access token %s expired at %s: %w", t.ID, t.ExpiresAt.UTC().Format(time.RFC3339), ErrUnauthenticated)}
	}
	if t.LastUsedAt.IsZero() || now.Sub(t.LastUsedAt) >= TokenTouchEvery {
		// A sign-in does not fail because its use could not be recorded
		// while the store is locked: the next one records it.
		if err := s.desk.TouchToken(ctx, t.ID, now, TokenTouchEvery); err != nil && !business.IsBusy(err) {
			return "", err
		}
	}
	return t.User, nil
}

// tokenHash is what the business store keeps of token: its SHA-256, in
// hex.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
