package e2e

// End-to-end tests of decisions in bulk and batch reports (issue 16):
// assistant decide, list --output csv, batch --draft-ttl, duplicate orders
// and show --rows, each command a process of its own.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// decideReport is the part of decide's JSON these tests read.
type decideReport struct {
	Task   string `json:"task"`
	Status string `json:"status"`
	Batch  struct {
		Of       string         `json:"of"`
		Position int            `json:"position"`
		Total    int            `json:"total"`
		Counts   map[string]int `json:"counts"`
	} `json:"batch"`
	Rows []struct {
		Line        int    `json:"line"`
		Task        string `json:"task"`
		Action      string `json:"action"`
		Outcome     string `json:"outcome"`
		ErrorCode   string `json:"error_code"`
		Error       string `json:"error"`
		DuplicateOf *int   `json:"duplicate_of"`
	} `json:"rows"`
}

// decide runs `assistant decide` in dir with stdin (for "-") and env, and
// returns its report, stderr and exit code.
func decide(t *testing.T, dir string, stdin string, env []string, args ...string) (decideReport, string, int) {
	t.Helper()
	c := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json", "decide"}, args...)...)
	c.Stdin = strings.NewReader(stdin)
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	code := exitOf(t, c.Run())
	var rep decideReport
	if code == 0 {
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("decide: %v\n%s", err, out.String())
		}
	}
	return rep, errb.String(), code
}

// parked makes n tasks row-0000… waiting for approval in dir (a batch of
// its own orders) and returns a decide file approving them all.
func parked(t *testing.T, dir string, n int) string {
	t.Helper()
	mustRun(t, dir, "batch", "parked", batchFile(t, dir, n))
	var b strings.Builder
	b.WriteString("task,action\n")
	for i := range n {
		fmt.Fprintf(&b, "row-%04d,approve\n", i)
	}
	return b.String()
}

// checkAppliedOnce checks that each of n row tasks was submitted with
// exactly one application and one recorded decision.
func checkAppliedOnce(t *testing.T, dir string, n int) {
	t.Helper()
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'row-%' AND status = 'done' AND stage = 'submitted'`); got != fmt.Sprint(n) {
		t.Errorf("submitted row tasks = %s, want %d", got, n)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d ON d.draft_id = a.draft_id WHERE d.task_id LIKE 'row-%'`); got != fmt.Sprint(n) {
		t.Errorf("applications = %s, want %d (one per task)", got, n)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM (SELECT task_id FROM decisions WHERE task_id LIKE 'row-%' GROUP BY task_id HAVING count(*) > 1)`); got != "0" {
		t.Errorf("%s tasks have their decision recorded more than once", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM decisions WHERE task_id LIKE 'row-%'`); got != fmt.Sprint(n) {
		t.Errorf("decisions recorded = %s, want %d", got, n)
	}
}

// TestDecideTenThousand approves 10,000 waiting tasks through the pipeline
// docs/cli.md shows: list --output csv, an action filled in by sed,
// decide reading stdin.
func TestDecideTenThousand(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 decisions: skipped with -short")
	}
	const n = 10_000
	dir := t.TempDir()
	parked(t, dir, n)
	bin := assistantBin()
	pipeline := fmt.Sprintf(`%s --data %s list --status waiting --output csv | sed 's/,,/,approve,/' | %s --data %s --output json decide -`, bin, dir, bin, dir)
	began := time.Now()
	out, err := exec.Command("sh", "-c", pipeline).Output()
	if err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	t.Logf("list | sed | decide of %d tasks: %s", n, time.Since(began).Round(time.Millisecond))
	var rep decideReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != "done" || rep.Batch.Of != "decisions" || rep.Batch.Position != n || rep.Batch.Counts["submitted"] != n || len(rep.Rows) != n {
		t.Fatalf("decide: status %s, %s %d of %d, counts %v, %d rows; want done, all %d submitted", rep.Status, rep.Batch.Of, rep.Batch.Position, rep.Batch.Total, rep.Batch.Counts, len(rep.Rows), n)
	}
	checkAppliedOnce(t, dir, n)
	stdout, _, code := run(t, dir, "--output", "csv", "show", rep.Task, "--rows")
	if lines := strings.Count(stdout, "\n"); code != 0 || lines != n+1 || !strings.HasPrefix(stdout, "line,task,action,draft,outcome,error_code,error,duplicate_of\n") {
		t.Errorf("show --rows --output csv: exit %d, %d lines; want 0 and a header and %d rows", code, lines, n)
	}
	// Nothing waits any more: the list prints only its header.
	if stdout, _, _ := run(t, dir, "--output", "csv", "list", "--status", "waiting"); stdout != "task,action,draft\n" {
		t.Errorf("list --output csv after decide = %q, want the header only", stdout)
	}
	verifyClean(t, dir)
}

// TestDecideRowsRefused gives one decide file rows that the answer path
// refuses: each row is reported with the code `assistant resume` exits
// with for the same answer, and the other rows are applied.
func TestDecideRowsRefused(t *testing.T) {
	dir := t.TempDir()
	parked(t, dir, 5)
	mustRun(t, dir, "resume", "row-0001", "--action", "cancel") // ended: cancelled
	mustRun(t, dir, "start", "why", "A3001")                    // waits for a reason
	shop := filepath.Join(t.TempDir(), "shop.csv")
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339) // with its zone: an import refuses a bare date
	if err := os.WriteFile(shop, []byte("order_id,user,item,delivered_at,final_sale\nBOB1,bob,Lamp,"+day+",false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "--user", "bob", "orders", "import", shop)
	mustRun(t, dir, "--user", "bob", "start", "bobs", "BOB1", "--reason", "r")
	draft := query(t, dir, "business.sqlite", `SELECT draft_id FROM drafts WHERE task_id = 'row-0004'`)
	file := "task,action,draft\n" +
		"row-0000,approve,d_not-this-one\n" + // line 2: invalid_input
		"row-0001,approve,\n" + // line 3: conflict (ended cancelled)
		"nobody,approve,\n" + // line 4: not_found
		"bobs,approve,\n" + // line 5: not_found, as an unknown task
		"why,approve,\n" + // line 6: invalid_input (waits for a reason)
		"row-0002,approve,\n" + // line 7: submitted
		"row-0002,cancel,\n" + // line 8: duplicate_task of line 7
		"row-0003,cancel,\n" + // line 9: cancelled
		"row-0004,approve," + draft + "\n" // line 10: submitted
	path := filepath.Join(t.TempDir(), "decisions.csv")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, stderr, code := decide(t, dir, "", nil, path)
	if code != 0 {
		t.Fatalf("decide: exit %d, %s", code, stderr)
	}
	want := []struct {
		outcome, code string
		resume        []string // the same answer as one command; nil: none
		exit          int
	}{
		{"invalid_input", "invalid_input", []string{"resume", "row-0000", "--action", "approve", "--draft", "d_not-this-one"}, 2},
		{"conflict", "conflict", []string{"resume", "row-0001", "--action", "approve"}, 3},
		{"not_found", "not_found", []string{"resume", "nobody", "--action", "approve"}, 4},
		{"not_found", "not_found", []string{"resume", "bobs", "--action", "approve"}, 4},
		{"invalid_input", "invalid_input", []string{"resume", "why", "--action", "approve"}, 2},
		{"submitted", "", nil, 0},
		{"duplicate_task", "conflict", nil, 0},
		{"cancelled", "", nil, 0},
		{"submitted", "", nil, 0},
	}
	if len(rep.Rows) != len(want) {
		t.Fatalf("%d rows reported, want %d: %+v", len(rep.Rows), len(want), rep.Rows)
	}
	for i, w := range want {
		r := rep.Rows[i]
		if r.Line != i+2 || r.Outcome != w.outcome || r.ErrorCode != w.code || (w.code != "") != (r.Error != "") {
			t.Errorf("line %d (%s): outcome %q, code %q, error %q; want %q, %q", r.Line, r.Task, r.Outcome, r.ErrorCode, r.Error, w.outcome, w.code)
		}
		if w.resume == nil {
			continue
		}
		if _, _, code := run(t, dir, w.resume...); code != w.exit {
			t.Errorf("%v exits %d, want %d: the row's code must be the command's", w.resume, code, w.exit)
		}
	}
	if d := rep.Rows[6].DuplicateOf; d == nil || *d != 7 {
		t.Errorf("duplicate row names line %v, want 7", d)
	}
	for task, n := range map[string]string{"row-0000": "0", "row-0001": "0", "row-0002": "1", "row-0003": "0", "row-0004": "1", "bobs": "0"} {
		if got := applications(t, dir, task); got != n {
			t.Errorf("%s has %s applications, want %s", task, got, n)
		}
	}
	if got := record(t, dir, "bobs", "status"); got != "waiting" {
		t.Errorf("bob's task is %s after demo-user's decide, want waiting", got)
	}

	t.Run("SameFileAgainPrintsTheReport", func(t *testing.T) {
		again, _, code := decide(t, dir, "", nil, path)
		if code != 0 || again.Task != rep.Task || again.Batch.Counts["submitted"] != 2 {
			t.Errorf("decide again: exit %d, task %s, counts %v; want the same run's report", code, again.Task, again.Batch.Counts)
		}
		if got := applications(t, dir, "row-0002"); got != "1" {
			t.Errorf("row-0002 has %s applications after the same file again, want 1", got)
		}
	})
	t.Run("BadFileRefusedWhole", func(t *testing.T) {
		before := fileSums(t, dir)
		_, stderr, code := decide(t, dir, "task,action\nrow-0000,\n", nil, "-")
		if code != 2 || !strings.Contains(stderr, "line 2") || !strings.Contains(stderr, "action is empty") {
			t.Errorf("empty action: exit %d, %q; want 2 naming line 2", code, stderr)
		}
		sameFiles(t, dir, before, "a refused decide file")
	})
	t.Run("CSVOnlyForListAndShowRows", func(t *testing.T) {
		for _, args := range [][]string{{"show", "row-0002"}, {"history", "row-0002"}, {"decide", path}} {
			_, stderr, code := run(t, dir, append([]string{"--output", "csv"}, args...)...)
			if code != 2 || !strings.Contains(stderr, "list and show --rows") {
				t.Errorf("--output csv %s: exit %d, %q; want 2 naming list and show --rows", args[0], code, stderr)
			}
		}
	})
	verifyClean(t, dir)
}

// TestDecideInconsistentTaskIsARowRefusal: a task whose two files
// disagree (an older business.sqlite restored under a checkpoint that
// says submitted) is one row's refusal, code inconsistent, with resume's
// message; it does not end the run (it ended it with exit 1, left running
// at position 0, the other rows' outcomes unreported). The task is left
// as it was, the other rows are decided once, and the row's code is the
// one resume exits with for the same answer (1).
func TestDecideInconsistentTaskIsARowRefusal(t *testing.T) {
	for _, chunk := range []string{"100", "1"} {
		t.Run("chunk"+chunk, func(t *testing.T) {
			dir := t.TempDir()
			file := parked(t, dir, 5) + "late,approve\n"
			older := snapshotFiles(t, dir)
			mustRun(t, dir, "resume", "row-0002", "--action", "approve")
			// A task the older business file has no record of, whose run
			// the checkpoint file holds: resume says inconsistent too (it
			// was reported not_found).
			mustRun(t, dir, "start", "late", "A3001", "--reason", "size")
			copyTo(t, older, dir, "business.sqlite")

			rep, stderr, code := decide(t, dir, file, nil, "-", "--chunk", chunk)
			if code != 0 {
				t.Fatalf("decide: exit %d, want 0 with the row refused: %s", code, stderr)
			}
			if rep.Status != "done" || rep.Batch.Position != 6 || rep.Batch.Counts["submitted"] != 4 || rep.Batch.Counts["inconsistent"] != 2 {
				t.Fatalf("decide: %s at %d, counts %v; want done at 6, 4 submitted, 2 inconsistent", rep.Status, rep.Batch.Position, rep.Batch.Counts)
			}
			for _, r := range rep.Rows {
				want := "submitted"
				if r.Task == "row-0002" || r.Task == "late" {
					want = "inconsistent"
					if r.ErrorCode != "inconsistent" || !strings.Contains(r.Error, "task "+r.Task+" is inconsistent") || !strings.Contains(r.Error, "nothing was written") {
						t.Errorf("%s: code %q, error %q; want inconsistent with resume's message", r.Task, r.ErrorCode, r.Error)
					}
				}
				if r.Outcome != want {
					t.Errorf("line %d (%s): %s, want %s", r.Line, r.Task, r.Outcome, want)
				}
			}
			if got := record(t, dir, "row-0002", "status"); got != "waiting" {
				t.Errorf("row-0002's record is %s, want waiting (never rewritten)", got)
			}
			if got := applications(t, dir, "row-0002"); got != "0" {
				t.Errorf("row-0002 has %s applications, want 0", got)
			}
			for _, task := range []string{"row-0000", "row-0001", "row-0003", "row-0004"} {
				if got := applications(t, dir, task); got != "1" {
					t.Errorf("%s has %s applications, want 1", task, got)
				}
			}
			for _, task := range []string{"row-0002", "late"} {
				if _, _, code := run(t, dir, "resume", task, "--action", "approve"); code != 1 {
					t.Errorf("resume %s: exit %d, want 1 (the row's code must be the command's)", task, code)
				}
			}
			if again, _, code := decide(t, dir, file, nil, "-", "--chunk", chunk); code != 0 || again.Task != rep.Task || again.Batch.Counts["inconsistent"] != 2 {
				t.Errorf("the same file again: exit %d, %s, counts %v; want the same run's report", code, again.Task, again.Batch.Counts)
			}
		})
	}
}

// TestBatchInconsistentTaskIsARowRefusal: the same for batch rows whose
// tasks the two files disagree on, the business file restored from
// before: r2's run the checkpoint file holds while the business file has
// no record of it (it failed the batch with exit 1), r4's submitted while
// its record waits (it was reported draft_ready). Each row is
// inconsistent, with start's message; the other rows run, the batch ends
// done.
func TestBatchInconsistentTaskIsARowRefusal(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "r4", "A3004", "--reason", "broken")
	older := snapshotFiles(t, dir)
	mustRun(t, dir, "start", "r2", "A3002", "--reason", "wrong color")
	mustRun(t, dir, "resume", "r4", "--action", "approve")
	copyTo(t, older, dir, "business.sqlite")
	file := filepath.Join(t.TempDir(), "b.csv")
	if err := os.WriteFile(file, []byte("task,order,reason\nr1,A3001,too big\nr2,A3002,wrong color\nr4,A3004,broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := mustRun(t, dir, "batch", "b1", file)
	b, _ := v["batch"].(map[string]any)
	counts, _ := b["counts"].(map[string]any)
	if v["status"] != "done" || counts["draft_ready"] != 1.0 || counts["inconsistent"] != 2.0 {
		t.Fatalf("batch: %v, counts %v; want done, 1 draft_ready, 2 inconsistent", v["status"], counts)
	}
	out, _, code := run(t, dir, "--output", "csv", "show", "b1", "--rows")
	for _, want := range []string{"3,r2,A3002,inconsistent,inconsistent,\"task r2 is inconsistent", "4,r4,A3004,inconsistent,inconsistent,\"task r4 is inconsistent"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show b1 --rows: exit %d\n%s\nwant %s… (start's message)", code, out, want)
		}
	}
	if _, _, code := run(t, dir, "start", "r4", "A3004", "--reason", "broken"); code != 1 {
		t.Errorf("start r4: exit %d, want 1 (the row's code must be the command's)", code)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id = 'r2'`); got != "0" {
		t.Errorf("r2 has %s records, want none (nothing written)", got)
	}
}

// decideFaultPoints are the points a decide run passes: its graph's node
// (rows), the points of its chunk, and those of the return flow its rows
// run (review, submit).
var decideFaultPoints = []string{
	"before:rows", "after:rows", "after-checkpoint:rows",
	"decide:after-row", "decide:between-commits", "decide:before-release",
	"after:review", "after-checkpoint:review", "before:submit", "submit:after-business-commit",
}

// TestDecideKilledAtFaultPoints kills a decide run of 120 approvals with
// SIGKILL at each of its fault points, then finishes it with recover (or
// with the same decide command again): every task is submitted with one
// application and one recorded decision, and the run's report says so.
func TestDecideKilledAtFaultPoints(t *testing.T) {
	const n = 120
	tmpl := t.TempDir()
	file := parked(t, tmpl, n)
	for i, point := range decideFaultPoints {
		t.Run(strings.NewReplacer(":", "_", "-", "_").Replace(point), func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"business.sqlite", "checkpoints.sqlite"} {
				b, err := os.ReadFile(filepath.Join(tmpl, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, _, code := decide(t, dir, file, []string{"ASSISTANT_FAULT=" + point}, "-", "--chunk", "50")
			if code != 137 {
				t.Fatalf("decide with %s exited %d, want 137 (killed at the point)", point, code)
			}
			if i%2 == 0 {
				if got := mustRun(t, dir, "recover"); len(got["recovered"].([]any)) == 0 {
					t.Fatalf("recover found nothing to recover: %v", got)
				}
			}
			rep, stderr, code := decide(t, dir, file, nil, "-")
			if code != 0 || rep.Status != "done" || rep.Batch.Counts["submitted"] != n {
				t.Fatalf("decide after the kill: exit %d (%s), status %s, counts %v; want done, %d submitted", code, stderr, rep.Status, rep.Batch.Counts, n)
			}
			for _, r := range rep.Rows {
				if r.Outcome != "submitted" || r.ErrorCode != "" {
					t.Errorf("line %d (%s): %s %s %s after recovery, want submitted", r.Line, r.Task, r.Outcome, r.ErrorCode, r.Error)
				}
			}
			checkAppliedOnce(t, dir, n)
			if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE status IN ('running', 'interrupted')`); got != "0" {
				t.Errorf("%s tasks left running", got)
			}
			verifyClean(t, dir)
		})
	}
}

// TestDecideWaitStopResume: a decide run is a task: wait on it, stop it
// part-way and resume it.
func TestDecideWaitStopResume(t *testing.T) {
	dir := t.TempDir()
	file := parked(t, dir, 3000)
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "decide", "-", "--id", "d1", "--chunk", "10", "--exit-status")
	c.Stdin = strings.NewReader(file)
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "decide d1 to start", func() bool {
		return query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id = 'd1' AND status = 'running'`) == "1"
	})
	mustRun(t, dir, "stop", "d1")
	if code := wait(t, c); code != 8 {
		t.Fatalf("stopped decide exited %d, want 8 (it saved and reports interrupted; 0 only once every row was handled)", code)
	}
	if got := record(t, dir, "d1", "status"); got != "interrupted" {
		t.Fatalf("d1 after stop: %s, want interrupted", got)
	}
	mustRun(t, dir, "resume", "d1")
	if _, stderr, code := run(t, dir, "wait", "d1"); code != 0 {
		t.Fatalf("wait d1: exit %d, %s", code, stderr)
	}
	checkAppliedOnce(t, dir, 3000)
	verifyClean(t, dir)
}

// TestBatchDraftTTLDuplicatesAndRows: --draft-ttl is every row's draft
// validity and part of the batch's input; a repeated order runs once and
// the repeats are reported duplicate_order; show --rows reports every row,
// unknown orders included, in JSON and CSV (golden files).
func TestBatchDraftTTLDuplicatesAndRows(t *testing.T) {
	dir := t.TempDir()
	batchFile(t, dir, 2) // imports R00000 and R00001
	rows := filepath.Join(t.TempDir(), "rows.csv")
	file := "task,order,reason\n" +
		"t1,R00000,too small\n" +
		"t2,R00001,\n" +
		"t3,R00000,again\n" + // duplicate of line 2
		"t4,NOPE,lost\n" + // unknown order
		"t5,A3007,final sale\n" + // refused by the flow
		"t6,R00000,and again\n" // duplicate of line 2
	if err := os.WriteFile(rows, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ttl := range []string{"1500ms", "0s", "8d"} {
		if _, stderr, code := run(t, dir, "batch", "b1", rows, "--draft-ttl", ttl); code != 2 {
			t.Errorf("--draft-ttl %s: exit %d, %q; want 2", ttl, code, stderr)
		}
	}
	began := time.Now().UTC()
	v := mustRun(t, dir, "batch", "b1", rows, "--draft-ttl", "2h")
	counts := v["batch"].(map[string]any)["counts"].(map[string]any)
	if counts["duplicate_order"] != 2.0 || counts["not_found"] != 1.0 || counts["draft_ready"] != 1.0 {
		t.Errorf("counts %v; want 2 duplicate_order, 1 not_found, 1 draft_ready", counts)
	}
	expires, err := time.Parse(time.RFC3339Nano, query(t, dir, "business.sqlite", `SELECT expires_at FROM drafts WHERE task_id = 't1'`))
	if err != nil {
		t.Fatal(err)
	}
	if d := expires.Sub(began); d < 2*time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
		t.Errorf("t1's draft expires %s after the batch began, want 2h", d)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id IN ('t3', 't6')`); got != "0" {
		t.Errorf("%s drafts made for duplicate rows, want 0", got)
	}
	if _, stderr, code := run(t, dir, "batch", "b1", rows, "--draft-ttl", "3h"); code != 3 {
		t.Errorf("same batch id, other --draft-ttl: exit %d, %q; want 3", code, stderr)
	}
	if _, stderr, code := run(t, dir, "batch", "b1", rows, "--draft-ttl", "7200s"); code != 0 {
		t.Errorf("same batch, same --draft-ttl written otherwise: exit %d, %q; want 0", code, stderr)
	}
	for _, g := range []struct{ output, golden string }{{"json", "batch_rows_json.golden"}, {"csv", "batch_rows_csv.golden"}} {
		stdout, stderr, code := run(t, dir, "--output", g.output, "show", "b1", "--rows")
		if code != 0 {
			t.Fatalf("show --rows --output %s: exit %d, %s", g.output, code, stderr)
		}
		golden(t, filepath.Join("testdata", "decide", g.golden), stdout)
	}
	if _, stderr, code := run(t, dir, "show", "t1", "--rows"); code != 2 || !strings.Contains(stderr, "not a batch") {
		t.Errorf("show --rows of a return task: exit %d, %q; want 2", code, stderr)
	}
	verifyClean(t, dir)
}

// golden compares got with the file at path; UPDATE_GOLDEN=1 rewrites it.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
