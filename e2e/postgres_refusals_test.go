package e2e

// Refusals on PostgreSQL (docs/postgres.md "The business
// store"): schemas that do not belong together, foreign,
// newer, lost or empty ones are refused before any write, in the words of
// schemas rather than files.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPostgresSchemasOfTwoStoresRefused: a business schema beside a
// checkpoint schema of another store (one restored from elsewhere) is
// refused before anything is written, as two files of different data
// dirs are: exit 1, one line, the pair unchanged.
func TestPostgresSchemasOfTwoStoresRefused(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, nil, "start", "p1", "A3003", "--reason", "too small")
	pg.query(t, `WITH u AS (UPDATE checkpoints.data_dir SET id = gen_random_uuid()::text RETURNING 1) SELECT count(*) FROM u`)
	before := pg.committed(t, "p1")
	// verify reports the pair as an error finding in its report
	// (TestPostgresVerifyReportsWhatOthersRefuse).
	for _, args := range [][]string{{"show", "p1"}, {"resume", "p1", "--action", "approve"}} {
		_, stderr, code := pg.run(t, nil, args...)
		if code != 1 || !strings.Contains(stderr, "carry different identities") || strings.Count(stderr, "\n") != 1 ||
			strings.Contains(stderr, "file") || !strings.Contains(stderr, "pg_restore") {
			t.Errorf("%v: exit %d, %q; want 1 and one line naming the schemas (no files) and pg_restore", args, code, stderr)
		}
	}
	if after := pg.committed(t, "p1"); after != before {
		t.Errorf("a refused pair was written: before %s, after %s", before, after)
	}
}

// TestPostgresForeignOrNewerSchemaRefusedBeforeAnyWrite: a schema named
// business or checkpoints that another program made, or that a newer
// build migrated, beside the other schema or without it, is refused by
// every command that would write, before either store opens: exit 1, one
// line naming the schema, and the database unchanged (no schema made,
// no row written): a foreign business schema is refused before the
// checkpoints schema is made.
func TestPostgresForeignOrNewerSchemaRefusedBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
	files := map[string]string{
		"orders.csv": "order_id,user,item,delivered_at,final_sale\nFS001,demo-user,Item," + day + ",false\n",
		"rows.csv":   "task,order,reason\nfs-1,A3003,too small\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	commands := [][]string{
		{"start", "n1", "A3003", "--reason", "too small"},
		{"recover"},
		{"orders", "import", filepath.Join(tmp, "orders.csv")},
		{"batch", "fs", filepath.Join(tmp, "rows.csv")},
	}
	for _, tc := range []struct {
		name, schema string
		setup        func(t *testing.T, pg pgStore)
	}{
		{"ForeignBusiness", "business", func(t *testing.T, pg pgStore) {
			pg.exec(t, `CREATE SCHEMA business; CREATE TABLE business.tasks (id int)`)
		}},
		{"ForeignBusinessBesideCheckpoints", "business", func(t *testing.T, pg pgStore) {
			pg.must(t, nil, "start", "o1", "A3003", "--reason", "too small")
			pg.exec(t, `DROP SCHEMA business CASCADE; CREATE SCHEMA business; CREATE TABLE business.tasks (id int)`)
		}},
		{"ForeignCheckpoints", "checkpoints", func(t *testing.T, pg pgStore) {
			pg.exec(t, `CREATE SCHEMA checkpoints; CREATE TABLE checkpoints.threads (id int)`)
		}},
		{"NewerBusiness", "business", func(t *testing.T, pg pgStore) {
			pg.must(t, nil, "start", "o1", "A3003", "--reason", "too small")
			pg.exec(t, `INSERT INTO business.schema_version (version, name) SELECT max(version) + 1, 'future' FROM business.schema_version`)
		}},
		{"NewerCheckpointsWithoutBusiness", "checkpoints", func(t *testing.T, pg pgStore) {
			pg.must(t, nil, "start", "o1", "A3003", "--reason", "too small")
			pg.exec(t, `DROP SCHEMA business CASCADE;
				INSERT INTO checkpoints.schema_version (version, name) SELECT max(version) + 1, 'future' FROM checkpoints.schema_version`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			tc.setup(t, pg)
			before := pg.contents(t)
			for _, args := range commands {
				_, stderr, code := pg.run(t, nil, args...)
				if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "schema "+tc.schema) || !strings.Contains(stderr, "nothing was changed") {
					t.Errorf("%v: exit %d, %q; want 1 and one line naming the schema %s", args, code, stderr, tc.schema)
				}
				if after := pg.contents(t); after != before {
					t.Fatalf("%v changed the database:\nbefore\n%s\nafter\n%s", args, before, after)
				}
			}
		})
	}
}

// TestPostgresLostSchemaSpeaksOfSchemas: one schema of the pair dropped
// while the other holds runs is refused in the server's words (the
// schemas, the database, pg_restore or dropping both), not a data dir's
// files: exit 1, one line, nothing made.
func TestPostgresLostSchemaSpeaksOfSchemas(t *testing.T) {
	t.Parallel()
	for _, drop := range []string{"checkpoints", "business"} {
		t.Run(drop, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			pg.must(t, nil, "start", "l1", "A3003", "--reason", "too small")
			pg.exec(t, `DROP SCHEMA `+drop+` CASCADE`)
			before := pg.contents(t)
			for _, args := range [][]string{{"show", "l1"}, {"start", "l2", "A3004", "--reason", "too small"}} {
				_, stderr, code := pg.run(t, nil, args...)
				if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "schema "+drop+" is missing") ||
					!strings.Contains(stderr, "pg_restore") || strings.Contains(stderr, "file") || strings.Contains(stderr, ".sqlite") {
					t.Errorf("%v: exit %d, %q; want 1 and one line about the schema %s and pg_restore, no files", args, code, stderr, drop)
				}
			}
			if after := pg.contents(t); after != before {
				t.Errorf("the refused commands changed the database:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

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

// TestPostgresVerifyFindingsNameTheSchemas: a task recorded whose run
// was never written (its start killed at start:after-record) is a
// warning of verify that names the schemas that disagree, not a data
// dir's files.
func TestPostgresVerifyFindingsNameTheSchemas(t *testing.T) {
	t.Parallel()
	pg := newPGStore(t)
	pg.must(t, nil, "start", "k1", "A3004", "--reason", "size")
	if _, stderr, code := pg.run(t, []string{"ASSISTANT_FAULT=start:after-record"}, "start", "k2", "A3003", "--reason", "size"); code != 137 {
		t.Fatalf("the start killed after its record: exit %d (%s), want 137", code, stderr)
	}
	report, stderr, _ := pg.run(t, nil, "verify", "--output", "text")
	if !strings.Contains(report, "the schema business records it") || !strings.Contains(report, "the schema checkpoints holds no run of it") || strings.Contains(report, ".sqlite") {
		t.Errorf("verify:\n%s%s\nwant the record without a run told with the schemas named, no file", report, stderr)
	}
}

// TestPostgresVerifyReportsWhatOthersRefuse: on PostgreSQL a schema
// dropped while the other holds runs or task records, and two schemas of
// different identities, are error findings in verify's report (exit 1,
// the report on stdout, not an error object), as on a data dir; show is
// refused; nothing changes.
func TestPostgresVerifyReportsWhatOthersRefuse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, sql, file, says string
	}{
		{"BusinessDropped", `DROP SCHEMA business CASCADE`, "business", "the schema business is missing or empty while the schema checkpoints holds 1 run(s)"},
		{"CheckpointsDropped", `DROP SCHEMA checkpoints CASCADE`, "checkpoints", "the schema checkpoints is missing or empty while the schema business holds 1 task record(s)"},
		{"OtherIdentity", `UPDATE business.data_dir SET id = '00000000-0000-4000-8000-000000000000'`, "business", "the schemas belong to different data dirs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			pg.must(t, nil, "start", "v1", "A3003", "--reason", "too small")
			pg.exec(t, tc.sql)
			before := pg.contents(t)
			if _, errOut, code := pg.run(t, nil, "show", "v1"); code != 1 {
				t.Errorf("show: exit %d, want 1 (refused): %s", code, errOut)
			}
			out, errOut, code := pg.run(t, nil, "verify")
			var rep verifyReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.Clean || len(rep.Files) != 2 {
				t.Fatalf("verify: exit %d, %v; want 1 and a report of two schemas, not clean\n%s%s", code, err, out, errOut)
			}
			found := false
			for _, f := range rep.Findings {
				found = found || f.Severity == "error" && f.File == tc.file && strings.Contains(f.Problem, tc.says)
			}
			if !found {
				t.Errorf("verify: no error finding of the schema %s saying %q:\n%s", tc.file, tc.says, out)
			}
			if after := pg.contents(t); after != before {
				t.Errorf("verify or show changed the database:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

// TestPostgresEmptySchemaVersionSaysEmpty: a schema whose schema_version
// table exists but holds no row is refused saying it is empty, exit 1,
// nothing changed.
func TestPostgresEmptySchemaVersionSaysEmpty(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{"business", "checkpoints"} {
		t.Run(schema, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			pg.exec(t, `CREATE SCHEMA `+schema+`; CREATE TABLE `+schema+`.schema_version (version int PRIMARY KEY, name text NOT NULL)`)
			before := pg.contents(t)
			for _, args := range [][]string{{"start", "e1", "A3003", "--reason", "x"}, {"show", "e1"}} {
				stderr, code := runCapped(t, nil, append([]string{"--store", pg.url}, args...)...)
				want := "its " + schema + ".schema_version is empty"
				if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
					t.Errorf("%v: exit %d, %q; want 1 and one line saying %q", args, code, stderr, want)
				}
			}
			if after := pg.contents(t); after != before {
				t.Errorf("the database changed:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}
