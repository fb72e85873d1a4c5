package main

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
