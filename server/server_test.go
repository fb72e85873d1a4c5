package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"assistant/flow/returns"
	"assistant/runs"
)

// encodeJSON stands in for the command line's encoder in these tests.
func encodeJSON(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// TestReadyzOnlyBetweenRecoveryAndDrain: /readyz is 503 before the
// start-up recovery scan is done, 200 after it, 503 again once a drain
// began; /healthz is 200 throughout.
func TestReadyzOnlyBetweenRecoveryAndDrain(t *testing.T) {
	t.Parallel()
	s := New(Config{Encode: encodeJSON})
	h := s.Handler()
	status := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code
	}
	steps := []struct {
		name            string
		do              func()
		readyz, healthz int
	}{
		{"BeforeTheScan", func() {}, 503, 200},
		{"AfterTheScan", s.SetReady, 200, 200},
		{"Draining", s.Drain, 503, 200},
	}
	if got := status("/api/v1/tasks"); got != http.StatusServiceUnavailable {
		t.Errorf("the API before the scan: %d, want 503", got)
	}
	for _, st := range steps {
		st.do()
		if got := status("/readyz"); got != st.readyz {
			t.Errorf("%s: /readyz %d, want %d", st.name, got, st.readyz)
		}
		if got := status("/healthz"); got != st.healthz {
			t.Errorf("%s: /healthz %d, want %d", st.name, got, st.healthz)
		}
	}
}

// TestFailedSignInsAreRateLimitedPerAddress: past SignInBurst failed
// sign-ins from one address, its requests are 429 with Retry-After
// before any token is looked at; another address still gets 401.
func TestFailedSignInsAreRateLimitedPerAddress(t *testing.T) {
	t.Parallel()
	srv := New(Config{Encode: encodeJSON})
	srv.SetReady()
	h := srv.Handler()
	from := func(addr string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/api/v1/tasks", nil)
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for i := range SignInBurst {
		if rec := from("192.0.2.1:4000"); rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("failed sign-in %d: %d %v, want 401 with WWW-Authenticate", i+1, rec.Code, rec.Header())
		}
	}
	rec := from("192.0.2.1:4001")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), codeRateLimited) {
		t.Errorf("past the burst: %d %v %s, want 429 with Retry-After", rec.Code, rec.Header(), rec.Body)
	}
	if rec := from("192.0.2.2:4000"); rec.Code != http.StatusUnauthorized {
		t.Errorf("another address: %d, want 401", rec.Code)
	}
}

// TestStatusOfEveryKind: each kind of the application layer's errors
// answers with the status docs/server.md "Status codes" gives it.
func TestStatusOfEveryKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind   error
		status int
	}{
		{returns.ErrInvalid, 400},
		{returns.ErrConflict, 409},
		{returns.ErrBusy, 503},
		{returns.ErrNotFound, 404},
		{returns.ErrUnauthenticated, 401},
		{returns.ErrInconsistent, 500},
		{io.ErrUnexpectedEOF, 500},
		// Another process drives the task now: what the answer comes to
		// is learnt by trying again, so it is not a final 409.
		{fmt.Errorf("%w: %w; this answer changes nothing", &runs.LeaseHeldError{Task: "t1"}, returns.ErrConflict), 503},
	} {
		if got, _ := statusOf(tc.kind); got != tc.status {
			t.Errorf("%v: %d, want %d", tc.kind, got, tc.status)
		}
	}
}

// TestAPIWordsNameRoutesAndFields: a hint reads as the request that does
// it, an input as its JSON field; no command of the command line but an
// operator's.
func TestAPIWordsNameRoutesAndFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		hint returns.Hint
		want string
	}{
		{returns.Hint{Before: "see it with", Do: returns.DoShow, Task: "r1"}, "see it with GET /api/v1/tasks/r1"},
		{returns.Hint{Before: "answer with", Do: returns.DoAnswer, Task: "r1", Ask: returns.KindNeedReason}, `answer with POST /api/v1/tasks/r1/answers with {"reason": "…"}`},
		{returns.Hint{Before: "give it with", With: []returns.InputValue{{Input: returns.InputDraft, Value: "d1"}}}, `give it with "draft_id": "d1"`},
		{returns.Hint{Before: "ask", Do: returns.DoRecover}, "ask an operator's `assistant recover`"},
	} {
		if got := APIWords.Hint(tc.hint); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.hint, got, tc.want)
		}
	}
}
