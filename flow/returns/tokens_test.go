package returns_test

import (
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
)

// An access token signs in as its person until it is revoked or its
// expires_at comes; a token the store never made, or a string that is no
// token, signs in as nobody. Each refusal is ErrUnauthenticated and its
// message never holds the token.
func TestAuthenticateSignsInOnlyWithALiveToken(t *testing.T) {
	t.Parallel()
	svc, b := setup(t)
	made, err := svc.MakeToken(b.ctx, returns.TokenOptions{User: "alice", By: "ops", Life: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(made.Token, returns.TokenPrefix) || made.ExpiresAt != b.clock.Now().Add(time.Hour) {
		t.Fatalf("made %+v", made)
	}
	user, err := svc.Authenticate(b.ctx, made.Token)
	if err != nil || user != "alice" {
		t.Fatalf("Authenticate = %q, %v; want alice", user, err)
	}
	other, err := svc.MakeToken(b.ctx, returns.TokenOptions{User: "bob", By: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RevokeToken(b.ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	forged := returns.TokenPrefix + strings.Repeat("A", len(made.Token)-len(returns.TokenPrefix))
	for _, tc := range []struct {
		name, token string
		advance     time.Duration
		want        string
	}{
		{"Malformed", "hello", 0, "not one this server makes"},
		{"Unknown", forged, 0, "unknown"},
		{"Revoked", other.Token, 0, "was revoked"},
		{"Expired", made.Token, time.Hour, "expired at"},
	} {
		b.clock.Advance(tc.advance)
		_, err := svc.Authenticate(b.ctx, tc.token)
		wantErr(t, err, returns.ErrUnauthenticated)
		msg := returns.Say(err, returns.PlainWords)
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.token) {
			t.Errorf("%s: %q; want it to say %q without the token", tc.name, msg, tc.want)
		}
	}
}

// The store keeps a token's hash, never the token: the list shows who
// made each and when it was last used; revoking twice changes nothing
// the second time; an unknown id is not found.
func TestTokensListWithoutTheTokens(t *testing.T) {
	t.Parallel()
	svc, b := setup(t)
	made, err := svc.MakeToken(b.ctx, returns.TokenOptions{User: "alice", By: "ops", Life: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(b.ctx, made.Token); err != nil {
		t.Fatal(err)
	}
	list, err := svc.Tokens(b.ctx)
	if err != nil || len(list.Tokens) != 1 {
		t.Fatalf("Tokens = %+v, %v", list, err)
	}
	got := list.Tokens[0]
	if got.ID != made.ID || got.CreatedBy != "ops" || !got.LastUsedAt.Equal(b.clock.Now()) || strings.Contains(got.Hash, made.Token) {
		t.Errorf("listed %+v", got)
	}
	first, err := svc.RevokeToken(b.ctx, made.ID)
	if err != nil || !first.Changed {
		t.Fatalf("first revoke = %+v, %v", first, err)
	}
	b.clock.Advance(time.Minute)
	again, err := svc.RevokeToken(b.ctx, made.ID)
	if err != nil || again.Changed || !again.RevokedAt.Equal(first.RevokedAt) {
		t.Errorf("second revoke = %+v, %v; want unchanged at %s", again, err, first.RevokedAt)
	}
	_, err = svc.RevokeToken(b.ctx, "tok-nothing")
	wantErr(t, err, returns.ErrNotFound)
}
