package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"assistant/flow/returns"
)

// syncBuffer is a log's writer that a test reads while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTrustedHeaderOnlyFromTrustedProxies (docs/server.md "Sign-in
// behind a proxy"): from a trusted proxy's address the header's person
// is the user (any valid name: the rules of the stores decide what they
// see); an empty or invalid name, the header twice, or the header beside
// Authorization is 401; from any other address the header is ignored
// and logged, and the request signs in by its token.
func TestTrustedHeaderOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	svc := openService(t, 1)
	ctx := context.Background()
	made, err := svc.MakeToken(ctx, returns.TokenOptions{User: "alice", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Start(ctx, returns.StartOptions{Task: "t1", Order: "O1", Reason: "broken", User: "alice", TTL: time.Hour, Approvals: 1}); err != nil {
		t.Fatal(err)
	}
	proxies, err := ParseTrustedProxies([]string{"192.0.2.0/24", "2001:db8::1"})
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	s := New(Config{Service: svc, Encode: encodeJSON, Log: slog.New(slog.NewJSONHandler(&log, nil)), TrustHeader: "x-forwarded-user", TrustedProxies: proxies})
	s.SetReady()
	h := s.Handler()
	for _, tc := range []struct {
		name, remote string
		header       []string // X-Forwarded-User values
		token        string
		status       int // of GET /api/v1/tasks/t1, alice's task
		logged       bool
	}{
		{"TheProxysPerson", "192.0.2.7:4000", []string{"alice"}, "", 200, false},
		{"TheProxyOverIPv6", "[2001:db8::1]:4000", []string{"alice"}, "", 200, false},
		{"AnotherPersonFromTheProxy", "192.0.2.7:4000", []string{"bob"}, "", 404, false},
		{"EmptyName", "192.0.2.7:4000", []string{""}, "", 401, false},
		{"InvalidName", "192.0.2.7:4000", []string{"al ice"}, "", 401, false},
		{"TwoHeaders", "192.0.2.7:4000", []string{"alice", "bob"}, "", 401, false},
		{"HeaderBesideAToken", "192.0.2.7:4000", []string{"alice"}, made.Token, 401, false},
		{"UntrustedAddressWithoutToken", "198.51.100.1:4000", []string{"alice"}, "", 401, true},
		{"UntrustedAddressSignsInByToken", "198.51.100.2:4000", []string{"bob"}, made.Token, 200, true},
		{"UntrustedIPv6", "[2001:db8::2]:4000", []string{"alice"}, "", 401, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := strings.Count(log.String(), "untrusted address")
			req := httptest.NewRequest("GET", "/api/v1/tasks/t1", nil)
			req.RemoteAddr = tc.remote
			req.Header["X-Forwarded-User"] = tc.header
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Errorf("%d %s; want %d", rec.Code, rec.Body, tc.status)
			}
			if logged := strings.Count(log.String(), "untrusted address") > before; logged != tc.logged {
				t.Errorf("logged the header from an untrusted address: %v, want %v\n%s", logged, tc.logged, log.String())
			}
		})
	}
}

// behindProxy is a ready server's handler whose trusted proxy is
// 192.0.2.0/24 with the header X-Forwarded-User, and its service, which
// holds alice's task t1 waiting for approval.
func behindProxy(t *testing.T) (http.Handler, *returns.Service) {
	t.Helper()
	svc := openService(t, 1)
	if _, err := svc.Start(context.Background(), returns.StartOptions{Task: "t1", Order: "O1", Reason: "broken", User: "alice", TTL: time.Hour, Approvals: 1}); err != nil {
		t.Fatal(err)
	}
	proxies, err := ParseTrustedProxies([]string{"192.0.2.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Service: svc, Encode: encodeJSON, TrustHeader: "X-Forwarded-User", TrustedProxies: proxies})
	s.SetReady()
	return s.Handler(), svc
}

// TestTrustedHeaderSignsInThePages (docs/inbox.md "Sign-in and
// sessions"): the pages take the trusted header from a trusted proxy as
// the API does, without a session: the inbox and the task page are the
// proxy's person's, with no sign-out to offer; a header the proxy got
// wrong is a 401 page saying why; from any other address the header is
// ignored and the page sends the browser to the sign-in form.
func TestTrustedHeaderSignsInThePages(t *testing.T) {
	t.Parallel()
	h, _ := behindProxy(t)
	for _, tc := range []struct {
		name, remote, path string
		header             []string
		status             int
		has, lacks         []string
	}{
		{"Inbox", "192.0.2.7:4000", "/inbox", []string{"alice"}, 200, []string{"Signed in as <strong><bdi>alice</bdi></strong> by the sign-on proxy", `href="/tasks/t1"`}, []string{"Sign out"}},
		{"TaskPage", "192.0.2.7:4000", "/tasks/t1", []string{"alice"}, 200, []string{"Approve version 1"}, []string{"Sign out"}},
		{"AnotherPersonsTask", "192.0.2.7:4000", "/tasks/t1", []string{"bob"}, 404, nil, []string{"Approve"}},
		{"InvalidName", "192.0.2.7:4000", "/inbox", []string{"al ice"}, 401, []string{"Not signed in", "X-Forwarded-User"}, []string{"Sign out"}},
		{"TwoHeaders", "192.0.2.7:4000", "/inbox", []string{"alice", "bob"}, 401, []string{"Not signed in"}, nil},
		{"UntrustedAddress", "198.51.100.1:4000", "/inbox", []string{"alice"}, http.StatusSeeOther, nil, []string{"alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			req.RemoteAddr = tc.remote
			req.Header["X-Forwarded-User"] = tc.header
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != tc.status {
				t.Fatalf("GET %s: %d, want %d\n%s", tc.path, rec.Code, tc.status, body)
			}
			if tc.status == http.StatusSeeOther && rec.Header().Get("Location") != "/login" {
				t.Errorf("redirected to %q, want /login", rec.Header().Get("Location"))
			}
			for _, want := range tc.has {
				if !strings.Contains(body, want) {
					t.Errorf("the page lacks %q\n%s", want, body)
				}
			}
			for _, not := range tc.lacks {
				if strings.Contains(body, not) {
					t.Errorf("the page has %q\n%s", not, body)
				}
			}
		})
	}
}

// TestFailedSignInsAreRateLimitedPerPerson (docs/server.md "Access
// tokens"): past SignInBurst refused sign-ins with tokens of one person,
// from as many addresses, the next is 429 with Retry-After; that
// person's live token still signs in, and an unknown token, which names
// no person, is 401.
func TestFailedSignInsAreRateLimitedPerPerson(t *testing.T) {
	t.Parallel()
	svc := openService(t, 1)
	ctx := context.Background()
	live, err := svc.MakeToken(ctx, returns.TokenOptions{User: "alice", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	old, err := svc.MakeToken(ctx, returns.TokenOptions{User: "alice", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RevokeToken(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Service: svc, Encode: encodeJSON})
	s.SetReady()
	h := s.Handler()
	n := 0
	get := func(token string) *httptest.ResponseRecorder {
		n++ // each from an address of its own: the address limit stays out of it
		req := httptest.NewRequest("GET", "/api/v1/tasks", nil)
		req.RemoteAddr = fmt.Sprintf("198.51.100.%d:4000", n)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for i := range SignInBurst {
		if rec := get(old.Token); rec.Code != http.StatusUnauthorized {
			t.Fatalf("refused sign-in %d: %d %s, want 401", i+1, rec.Code, rec.Body)
		}
	}
	if rec := get(old.Token); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "this person") {
		t.Errorf("past the burst: %d %v %s; want 429 with Retry-After", rec.Code, rec.Header(), rec.Body)
	}
	if rec := get(live.Token); rec.Code != http.StatusOK {
		t.Errorf("the person's live token: %d %s; want 200", rec.Code, rec.Body)
	}
	if rec := get(returns.TokenPrefix + strings.Repeat("A", 43)); rec.Code != http.StatusUnauthorized {
		t.Errorf("an unknown token: %d %s; want 401", rec.Code, rec.Body)
	}
}

// TestTrustedProxiesAndHeaderNames: --trusted-proxy takes IPs and CIDR
// prefixes, nothing else; --trust-header an HTTP header name the server
// does not read for itself.
func TestTrustedProxiesAndHeaderNames(t *testing.T) {
	t.Parallel()
	got, err := ParseTrustedProxies([]string{"10.1.2.3", "10.0.0.0/8", "::ffff:10.0.0.1", " fd00::/8"})
	want := []netip.Prefix{netip.MustParsePrefix("10.1.2.3/32"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("fd00::/8")}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ParseTrustedProxies: %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "10.0.0", "proxy.example", "10.0.0.0/33", "fe80::1%eth0"} {
		if _, err := ParseTrustedProxies([]string{bad}); err == nil {
			t.Errorf("trusted proxy %q: taken, want refused", bad)
		}
	}
	if err := ValidHeaderName("X-Forwarded-User"); err != nil {
		t.Errorf("X-Forwarded-User: %v", err)
	}
	for _, bad := range []string{"", "X Forwarded", "X-User:", "authorization", "Idempotency-Key"} {
		if err := ValidHeaderName(bad); err == nil {
			t.Errorf("trust header %q: taken, want refused", bad)
		}
	}
}

// TestCrossSiteAPIPostIsRefused (docs/server.md "Single sign-on"): a
// browser's cross-site POST to the API, signed in by the trusted proxy's
// header the browser's every request carries, is 403 cross_origin and
// answers nothing; the same post from a program (no Origin, no
// Sec-Fetch-Site) is taken.
func TestCrossSiteAPIPostIsRefused(t *testing.T) {
	t.Parallel()
	h, svc := behindProxy(t)
	ctx := context.Background()
	post := func(headers map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/api/v1/tasks/t1/answers", strings.NewReader(`{"action":"cancel"}`))
		req.RemoteAddr = "192.0.2.7:4000"
		req.Header.Set("X-Forwarded-User", "alice")
		req.Header.Set("Content-Type", "text/plain")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, hs := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"},
		{"Origin": "http://evil.example"},
	} {
		if rec := post(hs); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"cross_origin"`) {
			t.Errorf("cross-site post %v: %d %s; want 403 cross_origin", hs, rec.Code, rec.Body)
		}
	}
	if v, err := svc.Show(ctx, "t1", "alice"); err != nil || v.Status != returns.StatusWaiting {
		t.Fatalf("after the refused posts: %v %v; want t1 waiting", v, err)
	}
	if rec := post(nil); rec.Code != http.StatusOK {
		t.Errorf("a program's post: %d %s; want 200", rec.Code, rec.Body)
	}
}
