package e2e

// Recover (docs/recovery.md "Recover", "Attempts", "Recovery figures",
// "Expired drafts"): continuing runs whose process is gone, the bound on
// attempts, and what recover reports.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAttemptsAreBounded: a node killed every time it runs is
// tried DefaultMaxAttempts (5) times, then the run ends failed with
// attempts_exhausted, each attempt on the timeline, and recover leaves it.
func TestAttemptsAreBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 8 {
		args := []string{"resume", "t1"}
		if i == 0 {
			args = []string{"start", "t1", "A3003", "--reason", "size"}
		}
		_, code, _ := faultRun(t, dir, "after:prepare", args)
		if want := 137; i >= 5 {
			want = 0
			if code != want {
				t.Fatalf("run %d: exit %d, want %d (the node is not tried again)", i+1, code, want)
			}
		} else if code != want {
			t.Fatalf("run %d: exit %d, want %d (killed after prepare)", i+1, code, want)
		}
	}
	v := mustRun(t, dir, "show", "t1")
	e, _ := v["error"].(map[string]any)
	if v["status"] != "failed" || e["code"] != "attempts_exhausted" {
		t.Errorf("show: status %v, error %v; want failed, attempts_exhausted", v["status"], v["error"])
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = 't1' AND node = 'prepare'`); got != "5" {
		t.Errorf("prepare attempts on the timeline = %s, want 5", got)
	}
	if got := mustRun(t, dir, "recover"); len(got["recovered"].([]any)) != 0 {
		t.Errorf("recover retried a run that ended failed: %v", got)
	}
}

// TestGiveUpWithAnApplicationEndsSubmitted: a submit whose business commit
// lands and whose checkpoint never does, attempt after attempt (killed at
// submit:after-business-commit each time), until the attempts run out: the
// task holds its application, so the guard stop ends it submitted with it,
// reused, not failed attempts_exhausted (docs/recovery.md "When the two files disagree":
// nothing marks such a task failed). Both ways the attempts run out:
// --max-attempts 1 after one kill, and the default 5 after five.
func TestGiveUpWithAnApplicationEndsSubmitted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		kills int
		flags []string
	}{
		{"max-attempts 1", 1, []string{"--max-attempts", "1"}},
		{"default attempts", 5, nil},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mustRun(t, dir, "start", "t", "A3001", "--reason", "size")
			killedAt(t, dir, "submit:after-business-commit", "resume", "t", "--action", "approve")
			for i := 1; i < tc.kills; i++ {
				killedAt(t, dir, "submit:after-business-commit", "resume", "t")
			}
			v := mustRun(t, dir, append(tc.flags, "resume", "t")...)
			res, _ := v["result"].(map[string]any)
			if v["status"] != "done" || v["stage"] != "submitted" || v["error"] != nil || res == nil || res["reused"] != true {
				t.Fatalf("resume after the attempts ran out: status %v, stage %v, error %v, result %v; want done, submitted, reused", v["status"], v["stage"], v["error"], v["result"])
			}
			if n := appsOf(t, dir, "t"); n != "1" {
				t.Errorf("%s applications, want 1", n)
			}
			if rec := recordOf(t, dir, "t"); rec != "done/submitted" {
				t.Errorf("record %s, want done/submitted", rec)
			}
			if _, _, code := run(t, dir, "wait", "t"); code != 0 {
				t.Errorf("wait t: exit %d, want 0 (submitted)", code)
			}
			verifyClean(t, dir)
		})
	}
}

// TestRecoverReportsFailures: a task recover cannot recover (its
// business file locked by another process past the busy timeout) makes it
// exit 3, naming the task on stderr; the JSON report names it too.
func TestRecoverReportsFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, code, _ := faultRun(t, dir, "after-checkpoint:lookup", []string{"start", "t1", "A3003", "--reason", "size"}); code != 137 {
		t.Fatalf("start: exit %d, want 137", code)
	}
	holdWriteLock(t, dir, "business.sqlite")
	out, stderr, code := run(t, dir, "recover")
	if code != 3 || !strings.Contains(stderr, "task t1") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("recover with t1 locked: exit %d, stderr %q; want 3 and one line naming t1", code, stderr)
	}
	if !strings.Contains(out, `"task": "t1"`) || !strings.Contains(out, `"error"`) {
		t.Errorf("recover's report does not name t1's failure: %s", out)
	}
}

// TestRecoveryFigures: recover reports what continuing a crashed
// run cost: the step the crash cut (interrupted, not counted as finished
// work), the steps kept, none redone, and the wall time.
func TestRecoveryFigures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, code, _ := faultRun(t, dir, "after:prepare", []string{"start", "t1", "A3003", "--reason", "size"}); code != 137 {
		t.Fatalf("start: exit %d, want 137", code)
	}
	out, stderr, code := run(t, dir, "recover")
	if code != 0 {
		t.Fatalf("recover: exit %d, %s", code, stderr)
	}
	var got struct {
		Recovered []struct {
			Task     string
			Recovery *struct {
				SinceCrashMS     *int64   `json:"since_crash_ms"`
				RecoveryMS       *int64   `json:"recovery_ms"`
				StepsKept        int      `json:"steps_kept"`
				StepsRedone      int      `json:"steps_redone"`
				StepsInterrupted int      `json:"steps_interrupted"`
				RedoRatio        *float64 `json:"redo_ratio"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Recovered) != 1 || got.Recovered[0].Recovery == nil {
		t.Fatalf("recover report %s (%v): want t1 with its recovery figures", out, err)
	}
	r := got.Recovered[0].Recovery
	if r.StepsKept != 1 || r.StepsRedone != 0 || r.StepsInterrupted != 1 || r.RecoveryMS == nil || r.SinceCrashMS == nil || r.RedoRatio == nil || *r.RedoRatio != 0 {
		t.Errorf("recovery figures %s; want lookup kept, prepare interrupted, none redone", fmt.Sprint(*r))
	}
}

// TestStaleTaskShownWithRecoverCommand: a batch killed part-way shows as
// running with its holder gone, its text card names the recover command,
// and recover finishes it.
func TestStaleTaskShownWithRecoverCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Killed at its first chunk's end, part-way, as a signal ends it.
	proc, _ := pausedBatch(t, dir, batchFile(t, dir, signalledRows))
	_ = proc.Process.Signal(syscall.SIGKILL)
	exitWithin(t, proc.done, time.Minute)

	v := mustRun(t, dir, "show", "b1")
	holder, _ := v["holder"].(map[string]any)
	if v["status"] != "running" || holder == nil || holder["alive"] != false {
		t.Fatalf("show of a killed batch: status %v holder %v, want running with holder gone", v["status"], v["holder"])
	}
	c := exec.Command(assistantBin(), "--data", dir, "--output", "text", "show", "b1")
	text, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte("is gone")) || !bytes.Contains(text, []byte("assistant --data "+dir+" recover")) {
		t.Errorf("text show does not say the holder is gone and how to recover:\n%s", text)
	}
	got := mustRun(t, dir, "recover")
	if list, _ := got["recovered"].([]any); len(list) == 0 {
		t.Errorf("recover recovered nothing: %v", got)
	}
	if v := mustRun(t, dir, "show", "b1"); v["status"] != "done" {
		t.Errorf("after recover: status %v, want done", v["status"])
	}
}

// TestBatchKilledAndRecovered: a batch killed (SIGKILL) at ten random
// moments, started or recovered again after each, ends done with each
// row run once.
func TestBatchKilledAndRecovered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rows := batchFile(t, dir, 5000)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("kill moments from seed %d", seed)
	for range 10 {
		// Ten kills may all land before a chunk finishes (a slow machine,
		// -race): the attempt bound is lifted, as in TestChaos.
		args := []string{"--data", dir, chaosAttempts, "recover"}
		if _, _, code := run(t, dir, "show", "b1"); code == 4 {
			// Not created yet (killed before its first commit): start it again.
			args = []string{"--data", dir, chaosAttempts, "batch", "b1", rows}
		}
		proc := exec.Command(assistantBin(), args...)
		if err := proc.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rng.IntN(450)) * time.Millisecond)
		_ = proc.Process.Signal(syscall.SIGKILL) // SIGKILL: no cleanup at all, as in a crash
		_ = proc.Wait()
	}
	// Every kill may have landed before the batch's first commit (a slow
	// machine, -race): then it is started once more, not killed.
	if _, _, code := run(t, dir, "show", "b1"); code == 4 {
		mustRun(t, dir, chaosAttempts, "batch", "b1", rows)
	}
	// Recover until nothing is left running (a recover can itself leave a
	// row half-way only if killed; this one is not).
	for range 3 {
		mustRun(t, dir, chaosAttempts, "recover")
	}
	checkBatchDone(t, dir, "b1", 5000)
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE status = 'running'`); got != "0" {
		t.Errorf("%s tasks still running after recover", got)
	}
}

// TestBatchKilledAfterLastCheckpoint kills a batch after its last checkpoint
// (the one that ends it) and before it let go of the task: the record still
// says running while the run is done. recover, resume and the same batch
// command again must each set the record right.
func TestBatchKilledAfterLastCheckpoint(t *testing.T) {
	t.Parallel()
	for _, again := range [][]string{{"recover"}, {"resume", "b1"}, {"batch", "b1", ""}} {
		t.Run(again[0], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			rows := batchFile(t, dir, 30)
			if again[0] == "batch" {
				again = []string{"batch", "b1", rows}
			}
			c := exec.Command(assistantBin(), "--data", dir, "batch", "b1", rows, "--chunk", "50")
			c.Env = append(os.Environ(), "ASSISTANT_FAULT=after-checkpoint:rows")
			if code := exitOf(t, c.Run()); code != 137 {
				t.Fatalf("batch exited %d, want 137 (killed at the point)", code)
			}
			if got := query(t, dir, "business.sqlite", `SELECT status FROM tasks WHERE task_id = 'b1'`); got != "running" {
				t.Fatalf("record after the kill = %s, want running (the case under test)", got)
			}
			mustRun(t, dir, again...)
			checkBatchDone(t, dir, "b1", 30)
			if got := query(t, dir, "business.sqlite", `SELECT status FROM tasks WHERE task_id = 'b1'`); got != "done" {
				t.Errorf("record after %s = %s, want done", again[0], got)
			}
		})
	}
}

// TestExpiredDraftIsAState: past its expires_at a waiting
// draft shows as expired and its task as failed (show's JSON, list, the
// card, which offers a new start instead of approve; list --status
// expired selects it) while show writes nothing; recover ends it
// failed with draft_expired through the engine, nothing is submitted, an
// approve afterwards is exit 3, and prune (after a dry run that changes no
// file) removes its old checkpoints.
func TestExpiredDraftIsAState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1 := mustRun(t, dir, "start", "e1", "A3003", "--reason", "size", "--draft-ttl", "1s")
	mustRun(t, dir, "start", "w1", "A3004", "--reason", "size")
	expires, err := time.Parse(time.RFC3339Nano, e1["draft"].(map[string]any)["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	// The expiry is wall-clock UTC by design: wait for it to pass.
	time.Sleep(time.Until(expires) + 100*time.Millisecond)

	before := fileSums(t, dir)
	v := mustRun(t, dir, "show", "e1")
	if d := v["draft"].(map[string]any); d["expired"] != true || v["status"] != "failed" {
		t.Fatalf("show e1: status %v, draft %v; want failed with expired true", v["status"], d)
	}
	if d := mustRun(t, dir, "show", "w1")["draft"].(map[string]any); d["expired"] != false {
		t.Fatalf("show w1: draft %v, want expired false", d)
	}
	card, stderr, code := run(t, dir, "show", "e1", "--output", "text")
	if code != 0 || strings.Contains(card, "--action approve") || !strings.Contains(card, "expired before it was approved") ||
		!strings.Contains(card, "--data "+dir+" start NEW-TASK A3003 --reason size") {
		t.Fatalf("card of e1 (exit %d, %s):\n%s\nwant it to say the draft expired and print a new start with --data", code, stderr, card)
	}
	sameFiles(t, dir, before, "show")

	for args, want := range map[string]string{
		"":                 "e1=failed w1=waiting",
		"--status waiting": "w1=waiting",
		"--status expired": "e1=failed",
		"--status failed":  "e1=failed",
		"--status waiting,expired --status failed": "e1=failed w1=waiting",
		"--limit 1": "e1=failed",
	} {
		if got := listed(t, dir, strings.Fields(args)...); got != want {
			t.Errorf("list %s: %s, want %s", args, got, want)
		}
	}
	refused(t, dir, 2, "expired", "list", "--status", "sleeping")
	if got, dry := prunedTasks(t, dir, "--dry-run"); got != "" || !dry {
		t.Errorf("prune --dry-run before recover: %q (dry_run %v), want nothing: a waiting task is not pruned", got, dry)
	}
	sameFiles(t, dir, before, "list and prune --dry-run")

	out, stderr, code := run(t, dir, "recover")
	var rec struct {
		Recovered []struct{ Task, Status, Stage, Ended string }
	}
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || len(rec.Recovered) != 1 ||
		rec.Recovered[0].Task != "e1" || rec.Recovered[0].Status != "failed" || rec.Recovered[0].Ended != "draft_expired" {
		t.Fatalf("recover: exit %d, %s%s; want e1 ended failed, draft_expired", code, out, stderr)
	}
	if got := record(t, dir, "e1", "status") + "/" + record(t, dir, "e1", "stage"); got != "failed/failed" {
		t.Errorf("record of e1: %s, want failed/failed", got)
	}
	if applications(t, dir, "e1") != "0" {
		t.Error("recover submitted the expired draft")
	}
	v = mustRun(t, dir, "show", "e1")
	if v["status"] != "failed" || v["error"].(map[string]any)["code"] != "draft_expired" {
		t.Fatalf("show e1 after recover: %v %v, want failed with draft_expired", v["status"], v["error"])
	}
	if got := listed(t, dir); got != "e1=failed w1=waiting" {
		t.Errorf("list after recover: %s", got)
	}
	refused(t, dir, 3, "task e1 ended as failed (draft_expired)", "resume", "e1", "--action", "approve")
	if again := mustRun(t, dir, "start", "e1", "A3003", "--reason", "size", "--draft-ttl", "1s"); again["status"] != "failed" {
		t.Errorf("start e1 again: %v, want its end (failed)", again["status"])
	}

	before = fileSums(t, dir)
	if got, dry := prunedTasks(t, dir, "--dry-run"); got != "e1" || !dry {
		t.Errorf("prune --dry-run after recover: %q (dry_run %v), want e1", got, dry)
	}
	sameFiles(t, dir, before, "prune --dry-run")
	if got, dry := prunedTasks(t, dir); got != "e1" || dry {
		t.Errorf("prune after recover: %q (dry_run %v), want e1 pruned", got, dry)
	}
	verifyClean(t, dir)
}

// prunedTasks runs prune with args and returns the tasks it names.
func prunedTasks(t *testing.T, dir string, args ...string) (tasks string, dryRun bool) {
	t.Helper()
	out, stderr, code := run(t, dir, append([]string{"prune", "--finished-before", "1ns"}, args...)...)
	if code != 0 {
		t.Fatalf("prune %v: exit %d, %s", args, code, stderr)
	}
	var v struct {
		DryRun bool `json:"dry_run"`
		Tasks  []struct{ Task string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("prune %v: %v\n%s", args, err, out)
	}
	var got []string
	for _, tk := range v.Tasks {
		got = append(got, tk.Task)
	}
	return strings.Join(got, " "), v.DryRun
}
