package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// Grant is one approver grant: Grantee may decide Owner's tasks.
type Grant struct {
	Owner     string    `json:"owner"`
	Grantee   string    `json:"grantee"`
	GrantedBy string    `json:"granted_by"`
	GrantedAt time.Time `json:"granted_at"` // UTC
}

// GrantChange is one recorded grant or revoke.
type GrantChange struct {
	Owner   string    `json:"owner"`
	Grantee string    `json:"grantee"`
	Change  string    `json:"change"` // ChangeGrant or ChangeRevoke
	By      string    `json:"by"`
	At      time.Time `json:"at"` // UTC
}

// Kinds of GrantChange.
const (
	ChangeGrant  = "grant"
	ChangeRevoke = "revoke"
)

// GrantApprover lets grantee decide owner's tasks, recorded as made by by
// at now, in one durable commit with its entry in approver_changes.
// Granting what is granted already writes nothing and returns false.
// The caller checks who may grant (flow/returns: only the owner).
func (s *Store) GrantApprover(ctx context.Context, owner, grantee, by string, now time.Time) (changed bool, err error) {
	err = s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		res, err := tx.ExecContext(ctx, s.q.insertGrant, owner, grantee, by, formatTime(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = sqlstore.ErrNothingWritten
			}
			return err
		}
		changed = true
		return s.recordChange(ctx, tx, owner, grantee, ChangeGrant, by, now)
	})
	if err != nil {
		return false, fmt.Errorf("grant %s the tasks of %s: %w", grantee, owner, err)
	}
	return changed, nil
}

// RevokeApprover ends grantee's grant from owner, recorded as made by by
// at now, in one durable commit. Revoking a grant that does not exist
// writes nothing and returns false.
func (s *Store) RevokeApprover(ctx context.Context, owner, grantee, by string, now time.Time) (changed bool, err error) {
	err = s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		res, err := tx.ExecContext(ctx, s.q.deleteGrant, owner, grantee)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = sqlstore.ErrNothingWritten
			}
			return err
		}
		changed = true
		return s.recordChange(ctx, tx, owner, grantee, ChangeRevoke, by, now)
	})
	if err != nil {
		return false, fmt.Errorf("revoke %s from the tasks of %s: %w", grantee, owner, err)
	}
	return changed, nil
}

// recordChange records a grant or revoke (change) of owner's tasks to
// grantee, made by by at now, in tx.
func (s *Store) recordChange(ctx context.Context, tx sqlstore.Querier, owner, grantee, change, by string, now time.Time) error {
	_, err := tx.ExecContext(ctx, s.q.insertGrantChange, owner, grantee, change, by, formatTime(now))
	return err
}

// MayDecide reports whether user may decide owner's tasks: user is the
// owner, or holds a grant from them.
func (s *Store) MayDecide(ctx context.Context, owner, user string) (bool, error) {
	if owner == user {
		return true, nil
	}
	var one int
	err := s.h.Q().QueryRowContext(ctx, s.q.grant, owner, user).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("grant of %s to %s: %w", owner, user, err)
	}
	return true, nil
}

// Grants returns the grants user gave or holds, oldest first.
func (s *Store) Grants(ctx context.Context, user string) ([]Grant, error) {
	out := []Grant{}
	err := scanEach(ctx, s, s.q.grants, []any{user}, func(sc scanner) (Grant, error) {
		var g Grant
		var at string
		if err := sc.Scan(&g.Owner, &g.Grantee, &g.GrantedBy, &at); err != nil {
			return g, err
		}
		var err error
		g.GrantedAt, err = parseTime(at)
		return g, err
	}, func(g Grant) { out = append(out, g) })
	if err != nil {
		return nil, fmt.Errorf("grants of %s: %w", user, err)
	}
	return out, nil
}

// GrantChanges returns the recorded grants and revokes that concern user
// (as owner or grantee), in the order they were made.
func (s *Store) GrantChanges(ctx context.Context, user string) ([]GrantChange, error) {
	out := []GrantChange{}
	err := scanEach(ctx, s, s.q.grantChanges, []any{user}, func(sc scanner) (GrantChange, error) {
		var c GrantChange
		var at string
		if err := sc.Scan(&c.Owner, &c.Grantee, &c.Change, &c.By, &at); err != nil {
			return c, err
		}
		var err error
		c.At, err = parseTime(at)
		return c, err
	}, func(c GrantChange) { out = append(out, c) })
	if err != nil {
		return nil, fmt.Errorf("grant changes of %s: %w", user, err)
	}
	return out, nil
}

// OwnersGranting returns the owners whose tasks grantee may decide
// (besides their own), sorted; nil when there is none.
func (s *Store) OwnersGranting(ctx context.Context, grantee string) ([]string, error) {
	var out []string
	err := scanEach(ctx, s, s.q.ownersGranting, []any{grantee}, func(sc scanner) (string, error) {
		var o string
		return o, sc.Scan(&o)
	}, func(o string) { out = append(out, o) })
	if err != nil {
		return nil, fmt.Errorf("owners granting %s: %w", grantee, err)
	}
	return out, nil
}
