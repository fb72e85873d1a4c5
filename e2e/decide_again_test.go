package e2e

// End-to-end test of a decide file given again (issue 16, Perf16 case 5),
// and of a row naming a batch (case 4), each command a process of its own.

import (
	"regexp"
	"strings"
	"testing"
)

// TestDecideAgainSaysItRan: the same file given again after its run
// finished prints the same report, decides nothing, and says on stderr, in
// one line, when the run ran and how many rows were refused, and how to run
// the file again; the first run says nothing. A row naming the user's own
// batch is invalid_input with resume's message; --id NEW runs the file as a
// new run.
func TestDecideAgainSaysItRan(t *testing.T) {
	dir := t.TempDir()
	file := parked(t, dir, 2) + "parked,approve\nnobody,cancel\n"
	first, stderr, code := decide(t, dir, file, nil, "-")
	if code != 0 || stderr != "" {
		t.Fatalf("first decide: exit %d, stderr %q", code, stderr)
	}
	if r := first.Rows[2]; r.Outcome != "invalid_input" || !strings.Contains(r.Error, "parked is a batch; it asks no question") {
		t.Errorf("row naming the batch: %+v, want invalid_input with resume's message", r)
	}
	if c := first.Batch.Counts; c["submitted"] != 2 || c["invalid_input"] != 1 || c["not_found"] != 1 {
		t.Errorf("counts %v", c)
	}
	again, stderr, code := decide(t, dir, file, nil, "-")
	if code != 0 || again.Task != first.Task || len(again.Rows) != len(first.Rows) {
		t.Fatalf("decide again: exit %d, run %s (first %s), %d rows", code, again.Task, first.Task, len(again.Rows))
	}
	want := regexp.MustCompile(`^assistant: decide run ` + first.Task + ` already ran on \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: 2 rows refused; pass --id NEW to run the file again\n$`)
	if !want.MatchString(stderr) {
		t.Errorf("decide again: stderr %q, want one line matching %s", stderr, want)
	}
	checkAppliedOnce(t, dir, 2)
	fresh, stderr, code := decide(t, dir, file, nil, "--id", "second", "-")
	if code != 0 || stderr != "" || fresh.Task != "second" || fresh.Batch.Counts["submitted"] != 2 {
		t.Errorf("decide --id second: exit %d, stderr %q, run %s, counts %v", code, stderr, fresh.Task, fresh.Batch.Counts)
	}
	checkAppliedOnce(t, dir, 2)
}
