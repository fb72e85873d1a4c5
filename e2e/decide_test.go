package e2e

// decide (docs/batch.md "decide"; docs/json.md "decide and show --rows"):
// decisions in bulk from a file or a pipe, each row's outcome the one
// resume gives for the same answer.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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

// parked makes n tasks row-0000… waiting for approval in dir (a batch
// "parked" of its own orders) and returns a decide file approving them
// all. A new data dir is a copy of the fixture that batch made.
func parked(t *testing.T, dir string, n int) string {
	t.Helper()
	park := func(tb testing.TB, dir string) {
		tb.Helper()
		mustRun(tb, dir, "batch", "parked", batchFile(tb, dir, n))
	}
	if !fromFixture(t, dir, fmt.Sprintf("parked-%d", n), park) {
		park(t, dir)
	}
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
	t.Parallel()
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
	t.Parallel()
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

// TestDecideWaitStopResume: a decide run is a task: wait on it, stop it
// part-way and resume it.
func TestDecideWaitStopResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// As many rows as rowsCommands' decide, from the same fixture: in
	// chunks of 10, stopped at the first chunk's end, far from done.
	n := rowsCommands[1].n
	file := parked(t, dir, n)
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "decide", "-", "--id", "d1", "--chunk", "10", "--exit-status")
	c.Stdin = strings.NewReader(file)
	p := rowsPartWay(t, c)
	stopPaused(t, dir, "d1", p)
	if code := exitWithin(t, p.done, time.Minute); code != 8 {
		t.Fatalf("stopped decide exited %d, want 8 (it saved and reports interrupted; 0 only once every row was handled)", code)
	}
	if got := record(t, dir, "d1", "status"); got != "interrupted" {
		t.Fatalf("d1 after stop: %s, want interrupted", got)
	}
	mustRun(t, dir, "resume", "d1")
	if _, stderr, code := run(t, dir, "wait", "d1"); code != 0 {
		t.Fatalf("wait d1: exit %d, %s", code, stderr)
	}
	checkAppliedOnce(t, dir, n)
	verifyClean(t, dir)
}

// TestDecideAgainSaysItRan: the same file given again after its run
// finished prints the same report, decides nothing, and says on stderr, in
// one line, when the run ran and how many rows were refused, and how to run
// the file again; the first run says nothing. A row naming the user's own
// batch is invalid_input with resume's message; --id NEW runs the file as a
// new run.
func TestDecideAgainSaysItRan(t *testing.T) {
	t.Parallel()
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

// TestDecideFromPipes gives decide its file through inputs it cannot seek
// back through: each is read as `decide -` reads stdin, with the same
// report and the same run id (a hash of the user and the file's bytes,
// whatever names them).
func TestDecideFromPipes(t *testing.T) {
	t.Parallel()
	ref := t.TempDir()
	file := parked(t, ref, 3)
	want, errOut, code := decide(t, ref, file, nil, "-")
	if code != 0 || want.Status != "done" || want.Batch.Counts["submitted"] != 3 {
		t.Fatalf("decide -: exit %d, %+v\n%s", code, want, errOut)
	}
	bin := assistantBin()
	for name, how := range map[string]func(t *testing.T, dir, csv string) *exec.Cmd{
		"/dev/stdin": func(t *testing.T, dir, csv string) *exec.Cmd {
			c := exec.Command(bin, "--data", dir, "--output", "json", "decide", "/dev/stdin")
			c.Stdin = strings.NewReader(file) // a pipe
			return c
		},
		"process substitution": func(t *testing.T, dir, csv string) *exec.Cmd {
			return exec.Command("bash", "-c", fmt.Sprintf("%q --data %q --output json decide <(cat %q)", bin, dir, csv))
		},
		"named pipe": func(t *testing.T, dir, csv string) *exec.Cmd {
			ff := filepath.Join(t.TempDir(), "ff")
			if err := syscall.Mkfifo(ff, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			return exec.Command("bash", "-c", fmt.Sprintf("cat %q > %q & %q --data %q --output json decide %q; s=$?; wait; exit $s", csv, ff, bin, dir, ff))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			parked(t, dir, 3)
			csv := filepath.Join(t.TempDir(), "dec.csv")
			if err := os.WriteFile(csv, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			c := how(t, dir, csv)
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			if code := exitOf(t, c.Run()); code != 0 {
				t.Fatalf("decide from %s: exit %d\n%s", name, code, errb.String())
			}
			var got decideReport
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("decide from %s: %v\n%s", name, err, out.String())
			}
			if got.Task != want.Task || got.Status != want.Status || fmt.Sprint(got.Batch.Counts) != fmt.Sprint(want.Batch.Counts) || len(got.Rows) != len(want.Rows) {
				t.Fatalf("decide from %s: run %s %s %v, %d rows; want decide -'s: %s %s %v, %d rows",
					name, got.Task, got.Status, got.Batch.Counts, len(got.Rows), want.Task, want.Status, want.Batch.Counts, len(want.Rows))
			}
			checkAppliedOnce(t, dir, 3)
		})
	}
}

// TestDecideStdinSpool: decide - keeps stdin in a temporary file to read
// it twice (check, then store the rows a page at a time); the file is
// gone once the command ends, also when it is killed part-way (verify then
// tells each row's task as show does), and the run then finished by the
// same command again decides every row once.
func TestDecideStdinSpool(t *testing.T) {
	t.Parallel()
	const n = 150
	dir := t.TempDir()
	file := parked(t, dir, n)
	tmp := t.TempDir()
	left := func(when string) {
		t.Helper()
		ents, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			t.Errorf("%s: %s left in TMPDIR", when, e.Name())
		}
	}
	_, _, code := decide(t, dir, file, []string{"TMPDIR=" + tmp, "ASSISTANT_FAULT=decide:between-commits"}, "-", "--chunk", "50")
	if code != 137 {
		t.Fatalf("decide killed at decide:between-commits exited %d, want 137", code)
	}
	left("killed")
	var first []string // the first chunk's, business commit made, checkpoints not
	for i := range 60 {
		first = append(first, fmt.Sprintf("row-%04d", i))
	}
	verifyAgreesWithShow(t, place{flags: []string{"--data", dir}, dir: dir}, "demo-user", first)
	rep, stderr, code := decide(t, dir, file, []string{"TMPDIR=" + tmp}, "-")
	if code != 0 || rep.Status != "done" || rep.Batch.Counts["submitted"] != n || len(rep.Rows) != n {
		t.Fatalf("decide again: exit %d (%s), status %s, counts %v, %d rows; want done, %d submitted", code, stderr, rep.Status, rep.Batch.Counts, len(rep.Rows), n)
	}
	left("done")
	checkAppliedOnce(t, dir, n)
	verifyClean(t, dir)
}

// TestDecideRowErrorsPasteAsResumes: a decide row's error is the message
// resume prints for the same answer, its quoted commands carrying the
// global flags (--data, --user) in the JSON and text report and in show
// --rows (json, csv, text) alike; the text card of a decide run is titled
// "Decide run", as show --rows titles it.
func TestDecideRowErrorsPasteAsResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
	v1, _ := as(t, dir, "ci-bot", 0, "start", "d2", "C2", "--reason", "broken")
	as(t, dir, "alice", 0, "resume", "d2", "--action", "edit", "--reason", "wrong size")
	file := t.TempDir() + "/dec.csv"
	if err := os.WriteFile(file, []byte("task,action,draft\nnosuch,approve,\nd2,approve,"+v1.Draft.DraftID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, args := range [][]string{{"resume", "nosuch", "--action", "approve"}, {"resume", "d2", "--action", "approve", "--draft", v1.Draft.DraftID}} {
		out, _, _ := run(t, dir, append([]string{"--user", "alice"}, args...)...)
		var e struct {
			Error struct{ Message, Hint string }
		}
		if err := jsonUnmarshal(out, &e); err != nil || !strings.Contains(e.Error.Hint, "`assistant --data "+dir+" --user alice ") {
			t.Fatalf("resume %v: %q, %v; want a hint with a pasteable command", args, out, err)
		}
		want = append(want, e.Error.Message+"; "+e.Error.Hint)
	}
	out, _, code := run(t, dir, "--user", "alice", "decide", file)
	var rep struct {
		Task string
		Rows []struct{ Error string }
	}
	if err := jsonUnmarshal(out, &rep); err != nil || code != 0 || len(rep.Rows) != 2 {
		t.Fatalf("decide: exit %d, %v\n%s", code, err, out)
	}
	for i, r := range rep.Rows {
		if r.Error != want[i] {
			t.Errorf("decide row %d error %q;\nresume says %q", i+1, r.Error, want[i])
		}
	}
	for _, output := range []string{"json", "csv", "text"} {
		out, _, _ := run(t, dir, "--user", "alice", "show", rep.Task, "--rows", "--output", output)
		for _, w := range want {
			if output != "json" && !strings.Contains(out, w) {
				t.Errorf("show --rows --output %s lacks %q:\n%s", output, w, out)
			}
		}
		if output == "json" && !strings.Contains(out, "--user alice show d2") {
			t.Errorf("show --rows json: no pasteable command:\n%s", out)
		}
	}
	text, _, _ := run(t, dir, "--user", "alice", "--output", "text", "decide", file, "--id", "again")
	if !strings.HasPrefix(text, "Decide run again ·") || !strings.Contains(text, want[1]) {
		t.Errorf("decide text report:\n%s\nwant it titled \"Decide run again\" with the row errors resume prints", text)
	}
	_, stderr, _ := run(t, dir, "--user", "ci-bot", "approvers", "revoke", "ci-bot")
	if strings.Contains(stderr, "grant another") || !strings.Contains(stderr, "owns the tasks") {
		t.Errorf("revoke of oneself: %q; want no word of granting", stderr)
	}
}

// TestViewsAgreeWhileADecideIsBetweenItsCommits (docs/json.md "The state
// as it is now"): while a decide run that lives is paused between its
// chunk's commits, or before it lets go of the chunk's tasks, list,
// list --status, show and history tell each row's task alike (done: its
// application is made), and the run then ends with one application a row.
func TestViewsAgreeWhileADecideIsBetweenItsCommits(t *testing.T) {
	t.Parallel()
	const n = 20
	tmpl := t.TempDir()
	file := parked(t, tmpl, n)
	rows := []string{"row-0000", "row-0019"}
	for _, point := range []string{"decide:between-commits", "decide:before-release"} {
		t.Run(strings.ReplaceAll(point, ":", "_"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyTo(t, tmpl, dir, "business.sqlite", "checkpoints.sqlite")
			path := filepath.Join(t.TempDir(), "dec.csv")
			if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "decide", path)
			c.Env = append(os.Environ(), "ASSISTANT_FAULT="+point+"@pause")
			p := startPaused(t, c, point)
			listAgreesWithShow(t, dir, rows)
			historyAgreesWithShow(t, place{flags: []string{"--data", dir}, dir: dir}, "demo-user", rows)
			out, errOut, _ := run(t, dir, "list", "--status", "done")
			for _, task := range rows {
				if !strings.Contains(out, `"task": "`+task+`"`) {
					t.Errorf("list --status done lacks %s, which show says is done:\n%s%s", task, out, errOut)
				}
			}
			if code := p.goOn(t); code != 0 {
				t.Fatalf("the decide run: exit %d, %s", code, p.stderr)
			}
			checkAppliedOnce(t, dir, n)
		})
	}
}
