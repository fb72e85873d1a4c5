package e2e

import (
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
