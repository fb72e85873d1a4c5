package e2e

import (
	"strings"
	"testing"
)

// TestPostgresInconsistentNamesSchemas: on --store, a task whose
// checkpoint says it was submitted while the business schema lost its
// application is refused as on a data dir (exit 1, error code
// inconsistent), in words of the two schemas and pg_restore, not of
// checkpoints.sqlite, business.sqlite and `assistant backup`, which a
// server has neither of.
func TestPostgresInconsistentNamesSchemas(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, nil, "start", "t1", "A3003", "--reason", "size")
	pg.must(t, nil, "resume", "t1", "--action", "approve")
	if got := pg.query(t, `WITH d AS (DELETE FROM business.applications a USING business.drafts d WHERE d.draft_id = a.draft_id AND d.task_id = 't1' RETURNING 1) SELECT count(*) FROM d`); got != "1" {
		t.Fatalf("deleted %s applications, want 1", got)
	}
	_, stderr, code := pg.run(t, nil, "show", "t1")
	if code != 1 || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("show: exit %d, %q; want 1 and one line", code, stderr)
	}
	for _, want := range []string{"the schema checkpoints says", "the schema business has no application", "pg_restore"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
	for _, not := range []string{".sqlite", "assistant backup"} {
		if strings.Contains(stderr, not) {
			t.Errorf("stderr %q names %q, which a server has not", stderr, not)
		}
	}
}

// TestPostgresStandingAnswerNamesNoFile: a revise the decision trail holds
// while the head lost it (killed at answer:after-trail) is shown and
// verified on --store in words that name no SQLite file: the card speaks
// of the decision trail, verify of the schemas business and checkpoints.
func TestPostgresStandingAnswerNamesNoFile(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, nil, "start", "k3", "A3003", "--reason", "size")
	if _, stderr, code := pg.run(t, []string{"ASSISTANT_FAULT=answer:after-trail"}, "resume", "k3", "--action", "revise", "--comment", "why"); code == 0 {
		t.Fatalf("the revise killed after the trail exited 0 (%s)", stderr)
	}
	card, stderr, code := pg.run(t, nil, "show", "k3", "--output", "text")
	if code != 0 {
		t.Fatalf("show: exit %d, %s", code, stderr)
	}
	if !strings.Contains(card, "the decision trail holds stands") || strings.Contains(card, ".sqlite") {
		t.Errorf("card:\n%s\nwant the standing revise told as the decision trail's, no file named", card)
	}
	report, stderr, _ := pg.run(t, nil, "verify", "--output", "text")
	if !strings.Contains(report, "the schema business holds the answer revise") || strings.Contains(report, ".sqlite") {
		t.Errorf("verify:\n%s%s\nwant the schema business named, no file", report, stderr)
	}
}
