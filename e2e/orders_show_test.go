package e2e

import (
	"encoding/json"
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

// docs/json.md "The state as it is now": orders show judges whether the
// order can be returned from the applications it lists. An approval that
// submits while the view reads (paused at
// orders-show:before-applications, after the order and its tasks) is
// listed and makes the order not returnable: never returnable true next
// to an open application.
func TestOrdersShowReturnableAgreesWithItsApplications(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "r1", "A3003", "--reason", "too small")
	holder := pausedAnswer(t, dir, "before:submit", "demo-user", "r1")
	viewer, out := viewPausedAt(t, dir, "orders-show:before-applications", "orders", "show", "A3003")
	if code := holder.goOn(t); code != 0 {
		t.Fatalf("the holder's approve: exit %d, %s", code, holder.stderr)
	}
	code := viewer.goOn(t)
	var v struct {
		Returnable    bool
		NotReturnable string `json:"not_returnable_because"`
		Applications  []struct {
			ReviewStatus string `json:"review_status"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || code != 0 {
		t.Fatalf("orders show: exit %d, stdout %q, stderr %q: %v", code, out.String(), viewer.stderr, err)
	}
	if len(v.Applications) != 1 || v.Applications[0].ReviewStatus != "pending" || v.Returnable || v.NotReturnable != "open_application" {
		t.Errorf("orders show after a submit during it: %d applications %+v, returnable %v (%q); want the pending application and not returnable: open_application",
			len(v.Applications), v.Applications, v.Returnable, v.NotReturnable)
	}
}
