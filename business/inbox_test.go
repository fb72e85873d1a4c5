package business

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// addWaitingTask records task of owner on order as the runs package
// does, waiting at stage, needing approvals; with a draft (valid for ttl
// from t0) unless ttl is 0.
func addWaitingTask(tb testing.TB, s *Store, task, owner, order, stage string, approvals int, ttl time.Duration) {
	tb.Helper()
	at := formatTime(t0)
	mustExec(tb, s, fmt.Sprintf(`INSERT INTO tasks (task_id, "user", order_id, reason, status, stage, created_at, updated_at, approvals)
		VALUES ('%s', '%s', '%s', 'size', 'waiting', '%s', '%s', '%s', %d)`, task, owner, order, stage, at, at, approvals))
	if ttl == 0 {
		return
	}
	if _, _, err := s.PrepareDraft(context.Background(), task, order, owner, "size "+task, ttl, t0); err != nil {
		tb.Fatalf("PrepareDraft(%s): %v", task, err)
	}
}

func TestInboxPagesByFilterAndCursor(t *testing.T) {
	t.Parallel()
	forStores(t, testInboxPagesByFilterAndCursor)
}

// testInboxPagesByFilterAndCursor (docs/inbox.md "Inbox"): "waiting"
// lists the tasks the person may approve now, soonest expiry first, and
// leaves out expired drafts, tasks without a draft, the requester's own
// task that needs two, and what they approved already; "mine" and "all"
// list every waiting task of the person (and of their granters), those
// without a draft last; a cursor continues after the row it names with
// nothing skipped or repeated.
func testInboxPagesByFilterAndCursor(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	now := t0.Add(time.Minute)
	addWaitingTask(t, s, "w3", "demo-user", "A3001", "draft_ready", 1, 30*time.Minute)
	addWaitingTask(t, s, "w1", "demo-user", "A3002", "draft_ready", 1, 10*time.Minute)
	addWaitingTask(t, s, "w2", "demo-user", "A3003", "draft_ready", 1, 20*time.Minute)
	addWaitingTask(t, s, "old", "demo-user", "A3004", "draft_ready", 1, 30*time.Second)
	addWaitingTask(t, s, "two", "demo-user", "A3005", "draft_ready", 2, 40*time.Minute)
	addWaitingTask(t, s, "noreason", "demo-user", "A3001", "need_reason", 1, 0)
	addWaitingTask(t, s, "done", "demo-user", "A3002", "draft_ready", 1, 5*time.Minute)
	mustExec(t, s, `UPDATE tasks SET status = 'done' WHERE task_id = 'done'`)
	if _, err := s.GrantApprover(ctx, "demo-user", "alice", "demo-user", t0); err != nil {
		t.Fatal(err)
	}
	d, err := s.DraftByTask(ctx, "w2")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordDecision(ctx, Decision{ID: "dec-1", TaskID: "w2", By: "alice", Action: "approve", DraftID: d.ID, Version: 1, At: now}); err != nil {
		t.Fatal(err)
	}
	pages := func(user, filter string, limit int) [][]string {
		var out [][]string
		var key, after string
		for range 10 {
			rows, err := s.Inbox(ctx, InboxQuery{User: user, Filter: filter, Now: now, AfterKey: key, AfterTask: after, Limit: limit})
			if err != nil {
				t.Fatalf("Inbox(%s, %s): %v", user, filter, err)
			}
			if len(rows) == 0 {
				return out
			}
			var ids []string
			for _, r := range rows {
				ids = append(ids, r.Task)
			}
			out = append(out, ids)
			key, after = rows[len(rows)-1].Key, rows[len(rows)-1].Task
		}
		t.Fatal("more than 10 pages")
		return nil
	}
	for _, tc := range []struct {
		user, filter string
		want         string
	}{
		{"demo-user", InboxWaiting, "w1 w2|w3"},
		{"alice", InboxWaiting, "w1 w3|two"},
		{"demo-user", InboxMine, "old w1|w2 w3|two noreason"},
		{"alice", InboxMine, ""},
		{"alice", InboxAll, "old w1|w2 w3|two noreason"},
		{"bob", InboxAll, ""},
	} {
		var got []string
		for _, p := range pages(tc.user, tc.filter, 2) {
			got = append(got, strings.Join(p, " "))
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("%s's %s inbox in pages of 2: %q, want %q", tc.user, tc.filter, g, tc.want)
		}
	}
	rows, err := s.Inbox(ctx, InboxQuery{User: "bob", Filter: InboxWaiting, Now: now, Limit: 5})
	if err != nil || len(rows) != 0 {
		t.Errorf("bob, granted nothing: %v, %v; want no rows", rows, err)
	}
	rows, err = s.Inbox(ctx, InboxQuery{User: "demo-user", Filter: InboxMine, Now: now, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Task == "w2" && (r.Given != 1 || r.Needed != 1 || r.Item == "" || r.Version != 1) {
			t.Errorf("w2's row %+v; want alice's approval counted, 1 needed, the order's item, version 1", r)
		}
		if r.Task == "noreason" && (r.DraftID != "" || !r.ExpiresAt.IsZero() || r.Version != 0) {
			t.Errorf("a task without a draft: %+v; want no draft, no expiry", r)
		}
	}
}

// TestInboxStatementsWalkIndexes (docs/inbox.md "Inbox"): the plan of
// each inbox statement reads by index and no table whole: "waiting" walks
// the current drafts in expiry order and needs no sort to find its page
// (so it stops at the limit); "mine" and "all" read the tasks by owner
// and status.
func TestInboxStatementsWalkIndexes(t *testing.T) {
	t.Parallel()
	s, _ := newSeeded(t)
	for _, tc := range []struct {
		name  string
		query string
		args  []any
		want  []string
	}{
		{"waiting", s.q.inboxWaiting, []any{"demo-user", formatTime(t0), "", "", 51}, []string{"USING INDEX drafts_current_expiry", "SEARCH t USING INDEX sqlite_autoindex_tasks_1 (task_id=?)"}},
		{"all", s.q.inbox, []any{"demo-user", InboxAll, "", "", 51}, []string{"INDEX tasks_user_status (user=? AND status=?)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := queryPlan(t, s, tc.query, tc.args...)
			plan := strings.Split(text, "; ")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the plan lacks %q:\n%s", w, text)
				}
			}
			for _, line := range plan {
				if strings.HasPrefix(line, "SCAN ") && line != "SCAN p" && line != "SCAN CONSTANT ROW" {
					t.Errorf("the plan reads a table whole (%s):\n%s", line, text)
				}
			}
			if tc.name == "waiting" && strings.Count(text, "USE TEMP B-TREE FOR ORDER BY") > 1 {
				t.Errorf("the waiting page is sorted before its limit:\n%s", text)
			}
		})
	}
}
