package e2e

// Pages of the list (docs/server.md "Pages of the list"): GET
// /api/v1/tasks with limit and cursor against the real server process,
// on a data dir and on PostgreSQL.

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestServeListPagesByCursor: a page of limit tasks carries next_cursor;
// a task started after it was given comes on the next page after the
// tasks that were there, none twice; the last page's next_cursor is
// null; a cursor the server did not give is 400 invalid_input.
func TestServeListPagesByCursor(t *testing.T) {
	t.Parallel()
	servedOnEachPlace(t, nil, func(t *testing.T, p place, s *server, owner string) {
		start := func(task, order string) {
			t.Helper()
			s.call(t, "POST", "/api/v1/tasks", owner, "", fmt.Sprintf(`{"task":%q,"order":%q,"reason":"too small"}`, task, order)).want(t, "start "+task, http.StatusCreated)
		}
		start("l1", "A3001")
		start("l2", "A3003")
		start("l3", "A3004")
		page := func(query string) (string, any) {
			t.Helper()
			r := s.call(t, "GET", "/api/v1/tasks?"+query, owner, "", "").want(t, "list "+query, http.StatusOK)
			var ids []string
			for _, task := range r.body["tasks"].([]any) {
				ids = append(ids, task.(map[string]any)["task"].(string))
			}
			next, ok := r.body["next_cursor"]
			if !ok {
				t.Fatalf("list %s: no next_cursor\n%s", query, r.raw)
			}
			return strings.Join(ids, ","), next
		}
		ids, next := page("limit=2")
		cursor, ok := next.(string)
		if ids != "l1,l2" || !ok || cursor == "" {
			t.Fatalf("the first page: %s, next_cursor %v; want l1,l2 and a cursor", ids, next)
		}
		start("l4", "A3008")
		if ids, next := page("limit=2&cursor=" + url.QueryEscape(cursor)); ids != "l3,l4" || next != nil {
			t.Errorf("the second page: %s, next_cursor %v; want l3,l4 and null", ids, next)
		}
		for _, bad := range []string{"nonsense", cursor + "x", ""} {
			r := s.call(t, "GET", "/api/v1/tasks?limit=2&cursor="+url.QueryEscape(bad), owner, "", "")
			if r.status != http.StatusBadRequest || r.errorCode() != "invalid_input" {
				t.Errorf("cursor %q: %d\n%s; want 400 invalid_input", bad, r.status, r.raw)
			}
		}
	})
}
