package server

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
)

// TestPageRequestsMeanOneThing (docs/inbox.md "Forms and addresses"): a
// page's form gives each field once and in its body only, and an inbox
// cursor is one a page gave; anything else is 400 and changes nothing.
func TestPageRequestsMeanOneThing(t *testing.T) {
	t.Parallel()
	ts, svc, made := pageServer(t, false, nil)
	ctx := context.Background()
	if _, err := svc.Start(ctx, returns.StartOptions{Task: "t1", Order: "O1", Reason: "broken", User: "alice", TTL: time.Hour, Approvals: 1}); err != nil {
		t.Fatal(err)
	}
	c := pageClient(t, ts)
	if resp := signIn(t, c, ts, made.Token); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d, want 303", resp.StatusCode)
	}
	for _, tc := range []struct {
		name, method, path, body string
		want                     int
		says                     string
	}{
		{"ActionTwice", "POST", "/tasks/t1/answers", "task=t1&version=1&action=cancel&action=approve", 400, "gives &#34;action&#34; 2 times"},
		{"ActionTwiceTheOtherWay", "POST", "/tasks/t1/answers", "task=t1&version=1&action=approve&action=cancel", 400, "gives &#34;action&#34; 2 times"},
		{"ActionInTheAddress", "POST", "/tasks/t1/answers?action=cancel", "task=t1&version=1&action=approve", 400, "address with a query"},
		{"VersionTwice", "POST", "/tasks/t1/answers", "task=t1&version=1&version=2&action=approve", 400, "gives &#34;version&#34; 2 times"},
		{"TokenTwice", "POST", "/login", "token=" + url.QueryEscape(made.Token) + "&token=other", 400, "gives &#34;token&#34; 2 times"},
		{"CursorNotAKey", "GET", "/inbox?filter=all&at=zzz&after=%00", "", 400, "cursor"},
		{"CursorOutOfRange", "GET", "/inbox?filter=all&at=99999999999999999999&after=t1", "", 400, "cursor"},
		{"CursorWithoutTask", "GET", "/inbox?filter=all&at=~", "", 400, "cursor"},
		{"FirstPage", "GET", "/inbox?filter=all", "", 200, "t1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var page strings.Builder
			if _, err := io.Copy(&page, resp.Body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.want || !strings.Contains(page.String(), tc.says) {
				t.Errorf("%s %s: %d, want %d and a page that says %q\n%s", tc.method, tc.path, resp.StatusCode, tc.want, tc.says, page.String())
			}
			v, err := svc.Show(ctx, "t1", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if v.Status != returns.StatusWaiting {
				t.Errorf("t1 after %s: %s, want waiting (nothing changed)", tc.name, v.Status)
			}
		})
	}
}
