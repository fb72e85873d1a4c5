package server

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"assistant/flow/returns"
)

// pageClient is a browser stand-in for the page tests: a cookie jar and
// no redirect following, so each test sees the redirects the pages send.
func pageClient(tb testing.TB, ts *httptest.Server) *http.Client {
	tb.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	c := ts.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// pageServer serves pages over a fresh service with alice's token, its
// clock read from now (a test moves it).
func pageServer(t *testing.T, tlsOn bool, now func() time.Time) (*httptest.Server, *returns.Service, *returns.NewToken) {
	t.Helper()
	svc := openService(t, 1)
	made, err := svc.MakeToken(context.Background(), returns.TokenOptions{User: "alice", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Service: svc, Encode: encodeJSON, Now: now})
	s.SetReady()
	ts := httptest.NewUnstartedServer(s.Handler())
	if tlsOn {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts, svc, made
}

// signIn posts token to /login and returns the response.
func signIn(t *testing.T, c *http.Client, ts *httptest.Server, token string) *http.Response {
	t.Helper()
	resp, err := c.PostForm(ts.URL+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// inboxGoes is where GET /inbox sends c: "" for the inbox itself (200),
// else the redirect's Location.
func inboxGoes(t *testing.T, c *http.Client, ts *httptest.Server) string {
	t.Helper()
	resp, err := c.Get(ts.URL + "/inbox")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return ""
	}
	return resp.Header.Get("Location")
}

// TestSessionEndsAfterIdleTime (docs/inbox.md "Sign-in and sessions"): a
// session lasts DefaultSessionIdle after its last request; each request
// starts that time again; past it the inbox redirects to /login.
func TestSessionEndsAfterIdleTime(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	at := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	pass := func(d time.Duration) { mu.Lock(); at = at.Add(d); mu.Unlock() }
	ts, _, made := pageServer(t, false, clock)
	c := pageClient(t, ts)
	if got := inboxGoes(t, c, ts); got != "/login" {
		t.Fatalf("the inbox without a session goes to %q, want /login", got)
	}
	if resp := signIn(t, c, ts, made.Token); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/inbox" {
		t.Fatalf("sign in: %d to %q, want 303 to /inbox", resp.StatusCode, resp.Header.Get("Location"))
	}
	steps := []struct {
		name  string
		after time.Duration
		want  string
	}{
		{"JustSignedIn", 0, ""},
		{"AlmostIdleLongEnough", DefaultSessionIdle - time.Minute, ""},
		{"UsedAgainSoAlmostAgain", DefaultSessionIdle - time.Minute, ""},
		{"IdleTooLong", DefaultSessionIdle, "/login?ended=1"},
		{"EndedStaysEnded", 0, "/login"},
	}
	for _, st := range steps {
		pass(st.after)
		if got := inboxGoes(t, c, ts); got != st.want {
			t.Errorf("%s: the inbox goes to %q, want %q", st.name, got, st.want)
		}
	}
}

// TestSessionEndsWithItsToken: a session signs in with its token again on
// every request, so revoking the token ends it.
func TestSessionEndsWithItsToken(t *testing.T) {
	t.Parallel()
	ts, svc, made := pageServer(t, false, nil)
	c := pageClient(t, ts)
	signIn(t, c, ts, made.Token)
	if got := inboxGoes(t, c, ts); got != "" {
		t.Fatalf("signed in, the inbox goes to %q", got)
	}
	if _, err := svc.RevokeToken(context.Background(), made.ID); err != nil {
		t.Fatal(err)
	}
	if got := inboxGoes(t, c, ts); got != "/login?ended=1" {
		t.Errorf("after the token's revoke the inbox goes to %q, want /login?ended=1", got)
	}
}

// TestSessionCookieFlags: the session cookie is HttpOnly and
// SameSite=Strict, and Secure under TLS; a bad token makes none (401).
func TestSessionCookieFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tls    bool
		secure bool
	}{{"PlainHTTP", false, false}, {"TLS", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts, _, made := pageServer(t, tc.tls, nil)
			c := pageClient(t, ts)
			if resp := signIn(t, c, ts, "ast_wrong"); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
				t.Errorf("a bad token: %d with cookies %v, want 401 and none", resp.StatusCode, resp.Cookies())
			}
			resp := signIn(t, c, ts, made.Token)
			var got *http.Cookie
			for _, ck := range resp.Cookies() {
				if ck.Name == SessionCookie {
					got = ck
				}
			}
			if got == nil || !got.HttpOnly || got.SameSite != http.SameSiteStrictMode || got.Secure != tc.secure || got.Path != "/" {
				t.Errorf("the session cookie %+v; want HttpOnly, SameSite=Strict, Path=/, Secure %v", got, tc.secure)
			}
			if resp.TLS == nil && tc.tls {
				t.Error("the TLS server answered without TLS")
			}
		})
	}
}

// TestPagesAllowOnlyTheirOwnAssets: every page and asset carries a
// Content-Security-Policy that allows scripts and styles from the server
// only (no inline script), no framing and forms posted to the server
// only; the stylesheet is served from the binary.
func TestPagesAllowOnlyTheirOwnAssets(t *testing.T) {
	t.Parallel()
	ts, _, _ := pageServer(t, false, nil)
	c := pageClient(t, ts)
	for _, path := range []string{"/login", "/inbox", "/assets/style.css", "/assets/refresh.js"} {
		resp, err := c.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "form-action 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %q, nosniff %q", path, csp, resp.Header.Get("X-Content-Type-Options"))
		}
	}
	resp, err := c.Get(ts.URL + "/assets/style.css")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") {
		t.Errorf("the stylesheet: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestCrossOriginFormPostsRefused: a POST a browser marks as sent from
// another site (Sec-Fetch-Site: cross-site) to any page is 403 before
// it is read; the same from the server's own pages is taken.
func TestCrossOriginFormPostsRefused(t *testing.T) {
	t.Parallel()
	ts, _, made := pageServer(t, false, nil)
	c := pageClient(t, ts)
	for _, path := range []string{"/login", "/logout", "/tasks/t1/answers"} {
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(url.Values{"token": {made.Token}, "task": {"t1"}, "action": {"cancel"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://elsewhere.example")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("a cross-site POST %s: %d, cookies %v; want 403 and none", path, resp.StatusCode, resp.Cookies())
		}
	}
	req, _ := http.NewRequest("POST", ts.URL+"/login", strings.NewReader(url.Values{"token": {made.Token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a same-origin sign-in: %d, want 303", resp.StatusCode)
	}
}
