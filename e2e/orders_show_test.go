package e2e

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// docs/ci.md "Submitted exactly once", docs/orders.md "One order": a task
// approved twice shows, in orders show, as one task done and one
// application of its draft, on a data dir and on PostgreSQL; another
// user's order is exit 4, as an unknown one.
func TestOrdersShowApprovedTwice(t *testing.T) {
	t.Parallel()
	for name, make := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := make(t)
			s.ownerOrders(t)
			started, _ := s.want(t, nil, 0, "owner", "start", "r1", "Z1", "--reason", "size", "--draft-ttl", "1h")
			draft := started["draft"].(map[string]any)["draft_id"]
			first, _ := s.want(t, nil, 0, "owner", "resume", "r1", "--action", "approve")
			s.want(t, nil, 0, "owner", "resume", "r1", "--action", "approve")
			app := first["result"].(map[string]any)["application_id"]

			got, _ := s.want(t, nil, 0, "owner", "orders", "show", "Z1")
			if got["order_id"] != "Z1" || got["returnable"] != false || got["not_returnable_because"] != "open_application" {
				t.Errorf("order %v returnable %v (%v), want Z1 not returnable: open_application", got["order_id"], got["returnable"], got["not_returnable_because"])
			}
			tasks, _ := got["tasks"].([]any)
			if len(tasks) != 1 || tasks[0].(map[string]any)["task"] != "r1" || tasks[0].(map[string]any)["status"] != "done" {
				t.Errorf("tasks %v, want r1 done", got["tasks"])
			}
			apps, _ := got["applications"].([]any)
			if len(apps) != 1 {
				t.Fatalf("%d applications, want 1: %v", len(apps), got["applications"])
			}
			a := apps[0].(map[string]any)
			if a["application_id"] != app || a["draft_id"] != draft || a["version"] != float64(1) || a["review_status"] != "pending" {
				t.Errorf("application %v, want %v of draft %v version 1, pending", a, app, draft)
			}

			_, other := s.want(t, nil, 4, "alice", "orders", "show", "Z1")
			_, unknown := s.want(t, nil, 4, "alice", "orders", "show", "Z9")
			if !strings.Contains(other, "order Z1: not found for user alice") || other != strings.ReplaceAll(unknown, "Z9", "Z1") {
				t.Errorf("another user's order: %q, an unknown one: %q; want them alike", other, unknown)
			}
		})
	}
}

// docs/json.md "The state as it is now": orders show tells an order's
// tasks and applications as they are now, and judges whether the order
// can be returned from the applications it lists. While the view is
// paused between its reads (orders-show:before-applications, after the
// order and its tasks), a task submits: its application is listed, the
// order is not returnable, and the task reads done beside it, whether it
// was listed before (its submit was under way) or started meanwhile.
func TestOrdersShowTellsTasksAndApplicationsAsTheyAreNow(t *testing.T) {
	t.Parallel()
	type detail struct {
		Returnable    bool
		NotReturnable string `json:"not_returnable_because"`
		Tasks         []struct{ Task, Status string }
		Applications  []struct {
			Task         string
			ReviewStatus string `json:"review_status"`
		}
	}
	view := func(t *testing.T, viewer proc, out *bytes.Buffer) detail {
		t.Helper()
		code := viewer.goOn(t)
		var v detail
		if err := json.Unmarshal(out.Bytes(), &v); err != nil || code != 0 {
			t.Fatalf("orders show: exit %d, stdout %q, stderr %q: %v", code, out.String(), viewer.stderr, err)
		}
		if len(v.Applications) != 1 || v.Applications[0].ReviewStatus != "pending" || v.Returnable || v.NotReturnable != "open_application" {
			t.Errorf("orders show after a submit during it: %d applications %+v, returnable %v (%q); want the pending application and not returnable: open_application",
				len(v.Applications), v.Applications, v.Returnable, v.NotReturnable)
		}
		for _, a := range v.Applications {
			i := slices.IndexFunc(v.Tasks, func(x struct{ Task, Status string }) bool { return x.Task == a.Task })
			if i < 0 || v.Tasks[i].Status != "done" {
				t.Errorf("orders show lists the application of %s beside the tasks %+v; want %s listed done", a.Task, v.Tasks, a.Task)
			}
		}
		return v
	}
	t.Run("SubmitUnderWay", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "r1", "A3003", "--reason", "too small")
		holder := pausedAnswer(t, dir, "before:submit", "demo-user", "r1")
		viewer, out := viewPausedAt(t, dir, "orders-show:before-applications", "orders", "show", "A3003")
		if code := holder.goOn(t); code != 0 {
			t.Fatalf("the holder's approve: exit %d, %s", code, holder.stderr)
		}
		view(t, viewer, out)
	})
	t.Run("TaskStartedMeanwhile", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "r1", "A3003", "--reason", "too small")
		viewer, out := viewPausedAt(t, dir, "orders-show:before-applications", "orders", "show", "A3003")
		mustRun(t, dir, "start", "r2", "A3003", "--reason", "wrong colour")
		mustRun(t, dir, "resume", "r2", "--action", "approve")
		if v := view(t, viewer, out); len(v.Tasks) != 2 {
			t.Errorf("orders show: tasks %+v; want r1 and r2", v.Tasks)
		}
	})
}
