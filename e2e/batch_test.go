package e2e

// batch (docs/batch.md "batch"; docs/recovery.md "Batch chunks"): rows and
// their report, the same batch or decide command given again, and
// batches that overlap.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBatchDraftTTLDuplicatesAndRows: --draft-ttl is every row's draft
// validity and part of the batch's input; a repeated order runs once and
// the repeats are reported duplicate_order; show --rows reports every row,
// unknown orders included, in JSON and CSV (golden files).
func TestBatchDraftTTLDuplicatesAndRows(t *testing.T) {
	t.Parallel()
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

// TestBatchRowBusy runs a batch whose row a live process is running
// part-way: the batch stops with exit 3 (busy), naming the batch and the row
// in one line, with none of the engine's thread and node names.
func TestBatchRowBusy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runningElsewhere(t, dir)
	file := filepath.Join(t.TempDir(), "rows.csv")
	if err := os.WriteFile(file, []byte("task,order,reason\nt1,A3001,too small\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, dir, "batch", "b1", file)
	want := "assistant: batch b1: row 1 (task t1): conflict: task t1 is busy"
	if code != 3 || !strings.HasPrefix(stderr, want) || strings.Contains(stderr, "node rows") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("batch with a busy row: exit %d, stderr %q; want 3 and one line starting %q", code, stderr, want)
	}
}

// TestBatchRowOfAnotherUsersTask: a batch row whose task id is another
// user's task says "task id … is already taken", with the same order and
// reason too, never "already exists with other input"; it names `show`
// only to a person who may see that task. The user's own task with other
// input keeps "already exists with other input".
func TestBatchRowOfAnotherUsersTask(t *testing.T) {
	t.Parallel()
	for name, make := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := make(t)
			s.ownerOrders(t)
			s.want(t, nil, 0, "owner", "start", "r1", "Z1", "--reason", "size")
			s.want(t, nil, 0, "owner", "start", "r2", "Z2", "--reason", "size")
			file := filepath.Join(t.TempDir(), "rows.csv")
			if err := os.WriteFile(file, []byte("task,order,reason\nr1,Z1,size\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(t.TempDir(), "own.csv")
			if err := os.WriteFile(own, []byte("task,order,reason\nr2,Z3,size\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				user, batch, file, says, not string
			}{
				{"dave", "b1", file, "task id r1 is already taken; the row was not run; choose another task id", "show"},
				{"alice", "b2", file, "task id r1 is already taken; the row was not run; choose another task id, or see that task with `assistant ", "other input"},
				{"owner", "b3", own, "task r2 already exists with other input", "taken"},
			} {
				s.run(t, nil, c.user, "batch", c.batch, c.file)
				v, _ := s.want(t, nil, 0, c.user, "show", c.batch, "--rows")
				raw, _ := json.Marshal(v)
				got := string(raw)
				if !strings.Contains(got, jsonText(c.says)) || strings.Contains(got, c.not) && c.not != "show" {
					t.Errorf("%s's batch row: %s\nwant %q, not %q", c.user, got, c.says, c.not)
				}
				if c.not == "show" && strings.Contains(got, "assistant show r1") {
					t.Errorf("%s, who may not see r1, is offered show: %s", c.user, got)
				}
			}
		})
	}
}

// rowsCommand is a command that walks rows as a batch task: batch or
// decide.
type rowsCommand struct {
	name string
	id   string // the batch task's id
	n    int    // rows: several chunks (returns.DefaultBatchChunk), so that a cut at the first chunk's end (rowsPartWay) is part-way
	// prepare makes dir ready for the command and returns its arguments
	// (after the global flags) and its stdin.
	prepare func(t *testing.T, dir string, n int) (args []string, stdin string)
	// checkDone checks that every row ran exactly once and dir is clean.
	checkDone func(t *testing.T, dir string, n int)
}

var rowsCommands = []rowsCommand{
	{
		name: "batch", id: "b1", n: 300,
		prepare: func(t *testing.T, dir string, n int) ([]string, string) {
			return []string{"batch", "b1", batchFile(t, dir, n), "--exit-status"}, ""
		},
		checkDone: func(t *testing.T, dir string, n int) { checkBatchDone(t, dir, "b1", n) },
	},
	{
		name: "decide", id: "d1", n: 300,
		prepare: func(t *testing.T, dir string, n int) ([]string, string) {
			return []string{"decide", "-", "--id", "d1", "--exit-status"}, parked(t, dir, n)
		},
		checkDone: func(t *testing.T, dir string, n int) {
			if v := mustRun(t, dir, "show", "d1"); v["status"] != "done" {
				t.Errorf("d1 status = %v, want done", v["status"])
			}
			checkAppliedOnce(t, dir, n)
			verifyClean(t, dir)
		},
	},
}

// startRows starts a command in dir with args and stdin as a process
// of its own; its stdout and stderr land in the returned buffers. A
// process the test leaves paused or running is ended at cleanup.
func startRows(t *testing.T, dir string, args []string, stdin string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), withDefaults(args, "--data", dir, "--output", "json")...)
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	return c, &out, &errb
}

// pausedRows starts args in dir with stdin as startRows does, parked at
// its first chunk's end (rowsPartWay); its stdout lands in the returned
// buffer, its stderr in the proc's.
func pausedRows(t *testing.T, dir string, args []string, stdin string) (proc, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), withDefaults(args, "--data", dir, "--output", "json")...)
	c.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	c.Stdout = &out
	return rowsPartWay(t, c), &out
}

// runRows runs args in dir with stdin to its end and returns stdout,
// stderr and the exit code.
func runRows(t *testing.T, dir string, args []string, stdin string) (string, string, int) {
	t.Helper()
	c, out, errb := startRows(t, dir, args, stdin)
	code := exitOf(t, c.Wait())
	return out.String(), errb.String(), code
}

// rowsView is the part of a batch task's view these tests read.
type rowsView struct {
	Status string `json:"status"`
	Batch  struct {
		Position int `json:"position"`
		Total    int `json:"total"`
	} `json:"batch"`
	Holder *struct {
		PID   int  `json:"pid"`
		Alive bool `json:"alive"`
	} `json:"holder"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func showRows(t *testing.T, dir, id string) rowsView {
	t.Helper()
	out, errb, code := run(t, dir, "show", id)
	if code != 0 {
		t.Fatalf("show %s: exit %d: %s", id, code, errb)
	}
	return decodeRows(t, out)
}

func decodeRows(t *testing.T, out string) rowsView {
	t.Helper()
	var v rowsView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout is not one JSON view: %v\n%s", err, out)
	}
	return v
}

// TestRowsCommandAgainContinues cuts a batch, and a decide run, short
// part-way (at its first chunk's end) — SIGINT, a stop from another
// process, SIGKILL — and gives the same command again, as a CI retry of
// `assistant batch … && deploy` would: the first exits non-zero (130, 8,
// 137), the second continues the run to its last row and exits 0, every
// row run once; it never exits 0 on the first's stopped run.
func TestRowsCommandAgainContinues(t *testing.T) {
	t.Parallel()
	cuts := []struct {
		name string
		cut  func(t *testing.T, dir, id string, p proc)
		code int    // the first process's exit
		left string // the status it leaves
	}{
		{"SIGINT", func(t *testing.T, _, _ string, p proc) {
			_ = p.Process.Signal(syscall.SIGINT)
			p.letRun(t)
		}, 130, "interrupted"},
		{"Stop", func(t *testing.T, dir, id string, p proc) {
			mustRun(t, dir, "stop", id, "--wait", "0")
			p.letRun(t)
		}, 8, "interrupted"},
		// SIGKILL: no cleanup at all, as in a crash; the run is left
		// running with its process gone.
		{"SIGKILL", func(t *testing.T, _, _ string, p proc) { _ = p.Process.Kill() }, 137, "running"},
	}
	for _, rc := range rowsCommands {
		for _, cut := range cuts {
			t.Run(rc.name+"/"+cut.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				args, stdin := rc.prepare(t, dir, rc.n)
				first, out := pausedRows(t, dir, args, stdin)
				cut.cut(t, dir, rc.id, first)
				if code := exitWithin(t, first.done, time.Minute); code != cut.code {
					t.Fatalf("%s cut by %s: exit %d, want %d; stderr %q", rc.name, cut.name, code, cut.code, first.stderr)
				}
				if cut.left == "interrupted" {
					if v := decodeRows(t, out.String()); v.Status != "interrupted" {
						t.Errorf("%s cut by %s printed status %s, want interrupted", rc.name, cut.name, v.Status)
					}
				}
				v := showRows(t, dir, rc.id)
				if v.Status != cut.left || v.Batch.Position >= rc.n {
					t.Fatalf("after %s: status %s at %d of %d; want %s part-way (the case under test)", cut.name, v.Status, v.Batch.Position, rc.n, cut.left)
				}
				if cut.name == "SIGINT" {
					// The card tells no operator stop that did not happen.
					text, _, _ := run(t, dir, "show", rc.id, "--output", "text")
					if !strings.Contains(text, "Stopped (by `assistant stop` or a signal)") {
						t.Errorf("text card of a run stopped by SIGINT:\n%s", text)
					}
				}

				again, errAgain, code := runRows(t, dir, args, stdin)
				if code != 0 {
					t.Fatalf("%s again after %s: exit %d, want 0 (continued to its end); stderr %q", rc.name, cut.name, code, errAgain)
				}
				if v := decodeRows(t, again); v.Status != "done" || v.Batch.Position != rc.n || v.Batch.Total != rc.n {
					t.Fatalf("%s again after %s: status %s at %d of %d, want done at %d", rc.name, cut.name, v.Status, v.Batch.Position, v.Batch.Total, rc.n)
				}
				rc.checkDone(t, dir, rc.n)

				// A third time: the finished run is reported, exit 0, and
				// nothing runs again.
				third, errThird, code := runRows(t, dir, args, stdin)
				if v := decodeRows(t, third); code != 0 || v.Status != "done" {
					t.Fatalf("%s a third time: exit %d, status %s; want 0, done; stderr %q", rc.name, code, v.Status, errThird)
				}
				rc.checkDone(t, dir, rc.n)
			})
		}
	}
}

// TestRowsCommandAgainWhileRunning gives a batch command, and a decide
// command, again while the first process still runs it (paused with
// SIGSTOP, so that it is alive and holds the run): exit 3 naming that
// process, with nothing run; another file for the same id is exit 3 too.
// Once the first is let go (SIGCONT) it finishes, every row run once.
func TestRowsCommandAgainWhileRunning(t *testing.T) {
	t.Parallel()
	for _, rc := range rowsCommands {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args, stdin := rc.prepare(t, dir, rc.n)
			first, out := pausedRows(t, dir, args, stdin)
			before := showRows(t, dir, rc.id)
			if before.Status != "running" || before.Holder == nil || !before.Holder.Alive || before.Batch.Position >= rc.n {
				t.Fatalf("paused first process: %+v; want running part-way with its holder alive (the case under test)", before)
			}

			stdout, stderr, code := runRows(t, dir, args, stdin)
			pid := fmt.Sprintf("pid %d", first.Process.Pid)
			if code != 3 || !strings.Contains(stderr, pid) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%s again while pid %d runs it: exit %d, stderr %q; want 3 and one line naming %s", rc.name, first.Process.Pid, code, stderr, pid)
			}
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(stdout), &e); err != nil || e.Error.Code != "conflict" {
				t.Errorf("%s again while running: stdout %.300q…, want the error object with code conflict", rc.name, stdout)
			}
			if after := showRows(t, dir, rc.id); after.Batch.Position != before.Batch.Position || after.Holder == nil || after.Holder.PID != first.Process.Pid {
				t.Errorf("%s again while running changed the run: %+v, was %+v", rc.name, after, before)
			}

			// Another file for the same id: the input binding refuses it.
			other := args
			otherIn := stdin
			if rc.name == "batch" {
				other = []string{"batch", rc.id, batchFile(t, t.TempDir(), 3)}
			} else {
				otherIn = "task,action\nrow-0000,cancel\n"
			}
			if _, stderr, code := runRows(t, dir, other, otherIn); code != 3 || !strings.Contains(stderr, "other input") {
				t.Errorf("%s %s with another file: exit %d, stderr %q; want 3, other input", rc.name, rc.id, code, stderr)
			}

			first.letRun(t)
			if code := exitWithin(t, first.done, time.Minute); code != 0 {
				t.Fatalf("first %s after SIGCONT: exit %d, want 0; stderr %q", rc.name, code, first.stderr)
			}
			if v := decodeRows(t, out.String()); v.Status != "done" || v.Batch.Position != rc.n {
				t.Fatalf("first %s after SIGCONT: status %s at %d, want done at %d", rc.name, v.Status, v.Batch.Position, rc.n)
			}
			rc.checkDone(t, dir, rc.n)
		})
	}
}

// TestOverlappingBatches: two batches over the same rows, run at the same
// time (the second with --allow-overlap), both finish; each row's task is run once (one task, one draft), and
// nothing is left running without a holder.
func TestOverlappingBatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := batchFile(t, dir, 3000)
	makeDataDir(t, dir) // make the data dir before both start
	b1, out1, err1 := background(t, dir, "batch", "b1", rows)
	waitPosition(t, dir, "b1", 100, b1)
	b2, out2, err2 := background(t, dir, "batch", "b2", rows, "--allow-overlap")
	for _, b := range []struct {
		name     string
		proc     *exec.Cmd
		out, err *bytes.Buffer
	}{{"b1", b1, out1, err1}, {"b2", b2, out2, err2}} {
		code := wait(t, b.proc)
		var v struct{ Status string }
		_ = json.Unmarshal(b.out.Bytes(), &v)
		if code != 0 || v.Status != "done" {
			t.Errorf("%s: exit %d, status %q, stderr %q; want 0 and done", b.name, code, v.Status, b.err.String())
		}
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'row-%'`); got != "3000" {
		t.Errorf("%s row tasks, want 3000", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id LIKE 'row-%'`); got != "3000" {
		t.Errorf("%s drafts, want 3000 (one per row)", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE status = 'running'`); got != "0" {
		t.Errorf("%s tasks left running", got)
	}
}

// runOn runs the binary on the stores of st with env added, json output,
// and returns stdout, stderr and the exit code.
func runOn(tb testing.TB, st faultStore, env []string, args ...string) (string, string, int) {
	tb.Helper()
	c := exec.Command(assistantBin(), withDefaults(args, append(st.flags(), "--output", "json")...)...)
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	code := exitOf(tb, c.Run())
	return out.String(), errb.String(), code
}

// overlapFile writes a batch file of tasks prefix-N for orders R000N,
// N from..to-1, and returns its path.
func overlapFile(t *testing.T, prefix string, from, to int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("task,order,reason\n")
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%s-%02d,R%05d,too small\n", prefix, i, i)
	}
	return writeFile(t, prefix+".csv", b.String())
}

// TestBatchOverlap (docs/batch.md "Two batches over the same orders"): a
// new batch over orders that a running batch (here one whose process was
// killed), or a stopped one, of the same user holds, or that a task of a
// finished batch still waits on, is refused before it
// starts: exit 3 naming that batch and some of the orders, nothing
// written. --allow-overlap starts it anyway; a finished batch whose tasks
// all ended holds nothing; the same batch given again continues; other
// orders start. On
// SQLite and on PostgreSQL.
func TestBatchOverlap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// first leaves batch b1 over orders 0-9: "killed" (running, its
		// process gone), "stopped" (then stopped), "done".
		first string
		// args run after it; file is b2's, over orders 5-14, unless own.
		args     []string
		wantCode int
		says     []string
	}{
		{"RunningBatchHoldsItsOrders", "killed", []string{"batch", "b2", "@b2"}, 3, []string{"batch b1 (running) already holds 5 of this file's orders (R00005, R00006, R00007, …)", "nothing was written", "show b1", "--allow-overlap"}},
		{"StoppedBatchHoldsItsOrders", "stopped", []string{"batch", "b2", "@b2"}, 3, []string{"batch b1 (stopped) already holds 5", "resume b1", "--allow-overlap"}},
		{"AllowOverlapStartsAnyway", "killed", []string{"batch", "b2", "@b2", "--allow-overlap"}, 0, nil},
		{"FinishedBatchsWaitingTasksHoldTheirOrders", "done", []string{"batch", "b2", "@b2"}, 3, []string{"5 of this file's orders already have a task that has not ended (b1-05, b1-06, b1-07, …)", "nothing was written", "list --status waiting", "--allow-overlap"}},
		{"FinishedBatchWhoseTasksEndedHoldsNothing", "decided", []string{"batch", "b2", "@b2"}, 0, nil},
		{"SameBatchAgainContinues", "killed", []string{"batch", "b1", "@b1"}, 0, nil},
		{"OtherOrdersStart", "killed", []string{"batch", "b3", "@b3"}, 0, nil},
	}
	for _, kind := range []storeKind{sqliteKind, postgresKind} {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			var orders strings.Builder
			orders.WriteString("order_id,user,item,delivered_at,final_sale\n")
			day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
			for i := range 20 {
				fmt.Fprintf(&orders, "R%05d,demo-user,Item %d,%s,false\n", i, i, day)
			}
			ordersFile := writeFile(t, "orders.csv", orders.String())
			files := map[string]string{"@b1": overlapFile(t, "b1", 0, 10), "@b2": overlapFile(t, "b2", 5, 15), "@b3": overlapFile(t, "b3", 10, 20)}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					st := kind.make(t)
					if _, stderr, code := runOn(t, st, nil, "orders", "import", ordersFile); code != 0 {
						t.Fatalf("orders import: exit %d, %s", code, stderr)
					}
					var env []string
					finished := tc.first == "done" || tc.first == "decided"
					if !finished {
						env = []string{"ASSISTANT_FAULT=batch:after-row"}
					}
					if _, stderr, code := runOn(t, st, env, "batch", "b1", files["@b1"]); finished != (code == 0) {
						t.Fatalf("first batch: exit %d (%s)", code, stderr)
					}
					if tc.first == "decided" {
						for i := range 10 {
							if _, stderr, code := runOn(t, st, nil, "resume", fmt.Sprintf("b1-%02d", i), "--action", "cancel"); code != 0 {
								t.Fatalf("cancel b1-%02d: exit %d (%s), want 0", i, code, stderr)
							}
						}
					}
					if tc.first == "stopped" {
						if _, stderr, code := runOn(t, st, nil, "stop", "b1"); code != 0 {
							t.Fatalf("stop b1: exit %d (%s)", code, stderr)
						}
					}
					tasks := st.scalar(t, qAllTasks)
					args := make([]string, len(tc.args))
					for i, a := range tc.args {
						if f, ok := files[a]; ok {
							a = f
						}
						args[i] = a
					}
					out, stderr, code := runOn(t, st, nil, args...)
					if code != tc.wantCode {
						t.Fatalf("%v: exit %d (%s %s), want %d", tc.args, code, stderr, out, tc.wantCode)
					}
					for _, w := range tc.says {
						if !strings.Contains(stderr, w) || !strings.Contains(out, w) {
							t.Errorf("%v: stderr %q, stdout %q; want both to say %q", tc.args, stderr, out, w)
						}
					}
					if code != 0 {
						if got := st.scalar(t, qAllTasks); got != tasks {
							t.Errorf("refused batch: %s tasks, want %s (nothing written)", got, tasks)
						}
						return
					}
					if v := wantJSON(t, args, out, stderr, code); v["status"] != "done" {
						t.Errorf("%v: status %v, want done", tc.args, v["status"])
					}
				})
			}
		})
	}
}

// qAllTasks counts every task record.
var qAllTasks = storeQuery{"business.sqlite", `SELECT count(*) FROM tasks`, `SELECT count(*) FROM business.tasks`}
