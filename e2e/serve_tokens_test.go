package e2e

// Access tokens on the command line (docs/server.md "Access tokens"):
// made once, listed by id without the token, revoked by id.

import (
	"strings"
	"testing"
)

// TestApproversTokenPrintedOnce: the token is printed by the command
// that makes it and by nothing after (the list, the store); a revoke
// says what changed, twice is no change, an unknown id is exit 4, USER
// with --revoke is exit 2.
func TestApproversTokenPrintedOnce(t *testing.T) {
	t.Parallel()
	for _, p := range places(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			id, token := p.token(t, "alice", "--expires", "30d")
			if !strings.HasPrefix(token, "ast_") || !strings.HasPrefix(id, "tok-") {
				t.Fatalf("made id %q token %q; want tok-… and ast_…", id, token)
			}
			list, errOut, code := p.cli(t, nil, "approvers", "tokens")
			if code != 0 || !strings.Contains(list, id) || strings.Contains(list, token) {
				t.Errorf("approvers tokens: exit %d %s\n%s; want the id and never the token", code, errOut, list)
			}
			stored := p.sql(t, `SELECT count(*) FROM access_tokens WHERE hash = '`+token+`' OR id = '`+token+`'`,
				`SELECT count(*) FROM business.access_tokens WHERE hash = '`+token+`' OR id = '`+token+`'`)
			if stored != "0" {
				t.Errorf("the token itself is in the store")
			}
			for i, want := range []string{`"changed": true`, `"changed": false`} {
				out, errOut, code := p.cli(t, nil, "approvers", "token", "--revoke", id)
				if code != 0 || !strings.Contains(out, want) {
					t.Errorf("revoke %d: exit %d %s%s; want %s", i+1, code, out, errOut, want)
				}
			}
			if _, errOut, code := p.cli(t, nil, "approvers", "token", "--revoke", "tok-nobody"); code != 4 || strings.Count(errOut, "\n") != 1 {
				t.Errorf("revoke of an unknown id: exit %d %q; want 4, one line", code, errOut)
			}
			if _, errOut, code := p.cli(t, nil, "approvers", "token", "alice", "--revoke", id); code != 2 {
				t.Errorf("USER with --revoke: exit %d %q; want 2", code, errOut)
			}
		})
	}
}
