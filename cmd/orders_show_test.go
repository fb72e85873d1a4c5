package cmd

import (
	"context"
	"strings"
	"testing"
)

// orders show: the order, its tasks and its applications, in JSON and
// text as docs/json.md and docs/orders.md give them; another user's order
// reads as an unknown one (exit 4).
func TestOrdersShow(t *testing.T) {
	t.Run("ApprovedTwiceJSONAndText", func(t *testing.T) {
		c := newCLI(t)
		c.mustRun(startR1...)
		c.mustRun("resume", "r1", "--action", "approve")
		c.mustRun("resume", "r1", "--action", "approve")
		checkGolden(t, "orders_show_json", c.mask(c.mustRun("orders", "show", "A3003", "--output", "json").stdout))
		checkGolden(t, "orders_show_text", c.mask(c.mustRun("orders", "show", "A3003", "--output", "text").stdout))
	})

	t.Run("AnotherUsersOrderIsUnknown", func(t *testing.T) {
		c := newCLI(t)
		c.mustRun(startR1...)
		other := c.run(context.Background(), "--user", "alice", "orders", "show", "A3003", "--output", "text")
		unknown := c.run(context.Background(), "--user", "alice", "orders", "show", "Z9999", "--output", "text")
		if other.code != ExitNotFound || unknown.code != ExitNotFound {
			t.Fatalf("exit %d and %d, want %d: %s %s", other.code, unknown.code, ExitNotFound, other.stderr, unknown.stderr)
		}
		if got, want := other.stderr, strings.ReplaceAll(unknown.stderr, "Z9999", "A3003"); got != want {
			t.Errorf("another user's order says\n%s\nan unknown one\n%s", got, want)
		}
	})
}
