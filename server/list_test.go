package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"assistant/flow/returns"
)

// TestListPagesFollowTheCursor (docs/server.md "Pages of the list"): a
// page of limit tasks carries the cursor of the next, the last page
// none; a task made after the first page was given (later, or earlier by
// a clock behind) neither repeats a task on the next page nor moves it;
// a cursor this server did not make is 400.
func TestListPagesFollowTheCursor(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	clock := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	at := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	svc := openServiceAt(t, 6, now)
	ctx := context.Background()
	made, err := svc.MakeToken(ctx, returns.TokenOptions{User: "alice", By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	start := func(task, order string) {
		t.Helper()
		if _, err := svc.Start(ctx, returns.StartOptions{Task: task, Order: order, Reason: "broken", User: "alice", TTL: 10 * time.Hour, Approvals: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for i, task := range []string{"p1", "p2", "p3"} {
		at(time.Second)
		start(task, []string{"O1", "O2", "O3"}[i])
	}
	s := New(Config{Service: svc, Encode: encodeJSON, Now: now})
	s.SetReady()
	h := s.Handler()
	list := func(query string) (int, taskPageJSON, string) {
		t.Helper()
		req := httptest.NewRequest("GET", "/api/v1/tasks?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+made.Token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var page taskPageJSON
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatalf("%s: body not JSON: %s", query, rec.Body)
		}
		return rec.Code, page, rec.Body.String()
	}
	code, first, raw := list("limit=2")
	if code != 200 || first.tasks() != "p1,p2" || first.NextCursor == nil {
		t.Fatalf("the first page: %d %s; want p1,p2 and a next_cursor", code, raw)
	}
	at(time.Second)
	start("p4", "O4") // made later: on a later page
	at(-time.Hour)
	start("p0", "O5") // by a clock behind: before the cursor, on no later page
	at(time.Hour)
	code, second, raw := list("limit=2&cursor=" + url.QueryEscape(*first.NextCursor))
	if code != 200 || second.tasks() != "p3,p4" || second.NextCursor != nil {
		t.Errorf("the second page: %d %s; want p3,p4 and next_cursor null", code, raw)
	}
	if _, all, raw := list(""); all.tasks() != "p0,p1,p2,p3,p4" || all.NextCursor != nil {
		t.Errorf("without a limit: %s; want every task and next_cursor null", raw)
	}
	if _, rest, raw := list("cursor=" + url.QueryEscape(*first.NextCursor)); rest.tasks() != "p3,p4" {
		t.Errorf("a cursor without a limit: %s; want every task after it", raw)
	}
	other := encodeCursor(returns.ListPosition{CreatedAt: time.Now(), Task: "p1"})
	for _, bad := range []string{"", "not-a-cursor!", *first.NextCursor + "=", *first.NextCursor + "A", other[:len(other)-4], "YzEAAHAx"} {
		if code, _, raw := list("limit=2&cursor=" + url.QueryEscape(bad)); code != http.StatusBadRequest || !strings.Contains(raw, "invalid_input") {
			t.Errorf("cursor %q: %d %s; want 400 invalid_input", bad, code, raw)
		}
	}
}

// taskPageJSON is the list route's JSON as a client reads it.
type taskPageJSON struct {
	Tasks []struct {
		Task string `json:"task"`
	} `json:"tasks"`
	NextCursor *string `json:"next_cursor"`
}

// tasks are the page's task ids, comma-separated.
func (p taskPageJSON) tasks() string {
	var ids []string
	for _, t := range p.Tasks {
		ids = append(ids, t.Task)
	}
	return strings.Join(ids, ",")
}

// TestEditedCursorIsRefused (docs/server.md "Pages of the list"): every
// cursor that differs from one the server gave by a character cut off,
// added or changed is refused as invalid input, also where what is left
// still decodes to a place in the list; the cursor itself names its place.
func TestEditedCursorIsRefused(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for _, p := range []returns.ListPosition{
		{CreatedAt: time.Date(2026, 12, 3, 8, 10, 34, 680_000_000, time.UTC), Task: "l2"},
		{CreatedAt: time.Date(2026, 12, 3, 8, 10, 34, 0, time.UTC), Task: "return-25"},
		{CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), Task: "a"},
	} {
		c := encodeCursor(p)
		if got, err := parseCursor(c); err != nil || !got.CreatedAt.Equal(p.CreatedAt) || got.Task != p.Task {
			t.Fatalf("parseCursor(encodeCursor(%v)) = %v, %v", p, got, err)
		}
		var edited []string
		for i := range len(c) {
			edited = append(edited, c[:i])
			for _, ch := range alphabet {
				if byte(ch) != c[i] {
					edited = append(edited, c[:i]+string(ch)+c[i+1:])
				}
			}
		}
		for _, ch := range alphabet {
			edited = append(edited, c+string(ch))
		}
		for _, e := range edited {
			if _, err := parseCursor(e); !errors.Is(err, returns.ErrInvalid) {
				t.Errorf("cursor %q, edited from %q: %v; want invalid input", e, c, err)
			}
		}
	}
}
