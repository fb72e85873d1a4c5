package e2e

// Strict requests (docs/server.md "Strict requests"): a request the
// server could read two ways is refused before anything is done, against
// the real server process on a data dir and on PostgreSQL.

import (
	"net/http"
	"strings"
	"testing"
)

// TestServeStrictRequestsChangeNothing: a body with a key twice, a key of
// another case, null, an unknown key, something after the object; two
// Idempotency-Key headers; a repeated query parameter: each is 400
// invalid_input with the error object. Two Authorization headers are
// 401. The stores hold the same bytes (data dir) or rows (PostgreSQL)
// after them as before, and the task still waits for its approval.
func TestServeStrictRequestsChangeNothing(t *testing.T) {
	t.Parallel()
	servedOnEachPlace(t, nil, func(t *testing.T, p place, s *server, owner string) {
		// The start also records the token's last use, which a
		// sign-in writes at most once a minute: the refused requests
		// below write nothing at all.
		s.call(t, "POST", "/api/v1/tasks", owner, "", `{"task":"x1","order":"A3003","reason":"too small"}`).want(t, "start", http.StatusCreated)
		before := p.contents(t)
		answers := "/api/v1/tasks/x1/answers"
		for _, tc := range []struct {
			name, method, path, body string
			header                   http.Header
			status                   int
			code                     string
		}{
			{"DuplicateKey", "POST", answers, `{"action":"cancel","action":"approve"}`, nil, 400, "invalid_input"},
			{"KeyOfAnotherCase", "POST", answers, `{"Action":"approve"}`, nil, 400, "invalid_input"},
			{"NullBody", "POST", answers, `null`, nil, 400, "invalid_input"},
			{"UnknownKey", "POST", answers, `{"action":"approve","bogus":1}`, nil, 400, "invalid_input"},
			{"ObjectThenObject", "POST", answers, `{"action":"approve"}{"action":"cancel"}`, nil, 400, "invalid_input"},
			{"StartWithDuplicateKey", "POST", "/api/v1/tasks", `{"task":"x2","order":"A3004","task":"x3"}`, nil, 400, "invalid_input"},
			{"TwoIdempotencyKeys", "POST", answers, `{"action":"approve"}`, http.Header{"Idempotency-Key": {"k1", "k2"}}, 400, "invalid_input"},
			{"RepeatedQueryParameter", "GET", "/api/v1/tasks?limit=1&limit=2", ``, nil, 400, "invalid_input"},
			{"TwoAuthorizationHeaders", "POST", answers, `{"action":"approve"}`, http.Header{"Authorization": {"Bearer " + owner, "Bearer " + owner}}, 401, "unauthenticated"},
		} {
			req, err := http.NewRequest(tc.method, s.url+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+owner)
			for k, vs := range tc.header {
				req.Header[k] = vs
			}
			r := s.do(t, req)
			if r.status != tc.status || r.errorCode() != tc.code || r.body["schema_version"] == nil {
				t.Errorf("%s: %d\n%s; want %d with the error object, code %s", tc.name, r.status, r.raw, tc.status, tc.code)
			}
		}
		if after := p.contents(t); after != before {
			t.Errorf("the refused requests changed the stores:\nbefore %s\nafter  %s", before, after)
		}
		if r := s.call(t, "GET", "/api/v1/tasks/x1", owner, "", ""); r.body["status"] != "waiting" {
			t.Errorf("x1 after the refused requests: %v, want waiting\n%s", r.body["status"], r.raw)
		}
	})
}
