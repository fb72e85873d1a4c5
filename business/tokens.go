package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// AccessToken is one access token an operator made for a person, as
// stored: never the token itself, only its hash (docs/server.md "Access
// tokens"). Times are UTC; a zero ExpiresAt, LastUsedAt or RevokedAt is
// none.
type AccessToken struct {
	ID         string    `json:"id"`
	User       string    `json:"user"`
	CreatedBy  string    `json:"created_by"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	RevokedAt  time.Time `json:"revoked_at"`
	// Hash is the hex SHA-256 of the token; not printed.
	Hash string `json:"-"`
}

// serverQueries are the statements of the tables `assistant serve` keeps
// (migration 0011_server, pgmigrations 0004_server), one set per
// database, taking the same arguments in the same order.
type serverQueries struct {
	// insertToken inserts a token: id, user, hash, created_by,
	// created_at, expires_at (NULL for none).
	insertToken string
	// tokens reads every token's id, user, hash, created_by, created_at,
	// expires_at, last_used_at, revoked_at, oldest first.
	tokens string
	// tokenByHash reads the columns of tokens of the token whose hash is (1).
	tokenByHash string
	// revokeToken marks token (1) revoked at (2) unless it is revoked.
	revokeToken string
	// tokenExists reads a row when token (1) exists.
	tokenExists string
	// touchToken sets last_used_at of token (1) to (2) when it is NULL or
	// before (3).
	touchToken string
	// insertIdempotent inserts the first response of a request: user,
	// key, request_hash, status, body, created_at; nothing when the key
	// is taken.
	insertIdempotent string
	// idempotent reads request_hash, status, body, created_at of user
	// (1)'s key (2).
	idempotent string
	// forgetIdempotent deletes user (1)'s key (2) when it was made before (3).
	forgetIdempotent string
}

var sqliteServerQueries = &serverQueries{
	insertToken: `INSERT INTO access_tokens (id, user, hash, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
	tokens: `SELECT id, user, hash, created_by, created_at, expires_at, last_used_at, revoked_at
		FROM access_tokens ORDER BY created_at, id`,
	tokenByHash: `SELECT id, user, hash, created_by, created_at, expires_at, last_used_at, revoked_at
		FROM access_tokens WHERE hash = ?`,
	tokenExists:      `SELECT 1 FROM access_tokens WHERE id = ?`,
	revokeToken:      `UPDATE access_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
	touchToken:       `UPDATE access_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
	insertIdempotent: `INSERT INTO idempotency_keys (user, key, request_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user, key) DO NOTHING`,
	idempotent:       `SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE user = ? AND key = ?`,
	forgetIdempotent: `DELETE FROM idempotency_keys WHERE user = ? AND key = ? AND created_at < ?`,
}

var postgresServerQueries = &serverQueries{
	insertToken: `INSERT INTO access_tokens (id, "user", hash, created_by, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
	tokens: `SELECT id, "user", hash, created_by, created_at, expires_at, last_used_at, revoked_at
		FROM access_tokens ORDER BY created_at, id`,
	tokenByHash: `SELECT id, "user", hash, created_by, created_at, expires_at, last_used_at, revoked_at
		FROM access_tokens WHERE hash = $1`,
	tokenExists:      `SELECT 1 FROM access_tokens WHERE id = $1`,
	revokeToken:      `UPDATE access_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`,
	touchToken:       `UPDATE access_tokens SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)`,
	insertIdempotent: `INSERT INTO idempotency_keys ("user", key, request_hash, status, body, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT ("user", key) DO NOTHING`,
	idempotent:       `SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE "user" = $1 AND key = $2`,
	forgetIdempotent: `DELETE FROM idempotency_keys WHERE "user" = $1 AND key = $2 AND created_at < $3`,
}

// sq returns the server statements of s's database.
func (s *Store) sq() *serverQueries {
	return sqlstore.Pick(s.h.Database(), sqliteServerQueries, postgresServerQueries)
}

// nullTime is t for storage, NULL when t is zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

// AddToken stores t (its ID, User, Hash, CreatedBy, CreatedAt and
// ExpiresAt) in one durable commit. Errors: ErrConflict when the id or
// the hash is taken; storage errors.
func (s *Store) AddToken(ctx context.Context, t AccessToken) error {
	err := s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		_, err := tx.ExecContext(ctx, s.sq().insertToken, t.ID, t.User, t.Hash, t.CreatedBy, formatTime(t.CreatedAt), nullTime(t.ExpiresAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("add access token %s for %s: %w", t.ID, t.User, err)
	}
	return nil
}

// Tokens returns every access token, oldest first, without the tokens.
func (s *Store) Tokens(ctx context.Context) ([]AccessToken, error) {
	rows, err := s.h.Q().QueryContext(ctx, s.sq().tokens)
	if err != nil {
		return nil, fmt.Errorf("access tokens: %w", err)
	}
	defer rows.Close()
	out := []AccessToken{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("access tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("access tokens: %w", err)
	}
	return out, nil
}

// TokenByHash returns the token whose hash is hash. Errors: ErrNotFound,
// storage errors.
func (s *Store) TokenByHash(ctx context.Context, hash string) (AccessToken, error) {
	t, err := scanToken(s.h.Q().QueryRowContext(ctx, s.sq().tokenByHash, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return AccessToken{}, fmt.Errorf("access token: %w", ErrNotFound)
	}
	if err != nil {
		return AccessToken{}, fmt.Errorf("access token: %w", err)
	}
	return t, nil
}

// RevokeToken marks token id revoked at now, in one durable commit;
// false when it was revoked already. Errors: ErrNotFound for an unknown
// id, storage errors.
func (s *Store) RevokeToken(ctx context.Context, id string, now time.Time) (changed bool, err error) {
	found := true
	err = s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		res, err := tx.ExecContext(ctx, s.sq().revokeToken, formatTime(now), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if changed = n > 0; changed {
			return nil
		}
		var one int
		if err := tx.QueryRowContext(ctx, s.sq().tokenExists, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			found = false
		} else if err != nil {
			return err
		}
		return sqlstore.ErrNothingWritten
	})
	if err != nil {
		return false, fmt.Errorf("revoke access token %s: %w", id, err)
	}
	if !found {
		return false, fmt.Errorf("access token %s: %w", id, ErrNotFound)
	}
	return changed, nil
}

// TouchToken records that token id was used at now, unless it was used
// after now minus every: one plain commit at most that often per token.
func (s *Store) TouchToken(ctx context.Context, id string, now time.Time, every time.Duration) error {
	if _, err := s.h.Q().ExecContext(ctx, s.sq().touchToken, formatTime(now), id, formatTime(now.Add(-every))); err != nil {
		return fmt.Errorf("access token %s: %w", id, err)
	}
	return nil
}

// scanToken reads the columns of serverQueries.tokens.
func scanToken(r scanner) (AccessToken, error) {
	var t AccessToken
	var created string
	var expires, used, revoked sql.NullString
	if err := r.Scan(&t.ID, &t.User, &t.Hash, &t.CreatedBy, &created, &expires, &used, &revoked); err != nil {
		return AccessToken{}, err
	}
	var err error
	if t.CreatedAt, err = parseTime(created); err != nil {
		return AccessToken{}, err
	}
	for _, f := range []struct {
		s   sql.NullString
		dst *time.Time
	}{{expires, &t.ExpiresAt}, {used, &t.LastUsedAt}, {revoked, &t.RevokedAt}} {
		if !f.s.Valid {
			continue
		}
		if *f.dst, err = parseTime(f.s.String); err != nil {
			return AccessToken{}, err
		}
	}
	return t, nil
}
