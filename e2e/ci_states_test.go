package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"assistant/internal/testkit"
)

// The tests of this file are cases 3, 4 and 5 of issue 15 (a shell script
// in CI): an expired draft is a state that recover ends, an answer to a
// task that has ended says so, and the draft validity is part of a start's
// input; each in separate processes of the built binary.

// fileSums is the SHA-256 of each store file of dir and its -wal, by name
// (a missing file is ""), to tell that a command changed no file.
func fileSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for _, f := range []string{"business.sqlite", "checkpoints.sqlite"} {
		for _, name := range []string{f, f + "-wal"} {
			sums[name] = testkit.FileSHA256(t, filepath.Join(dir, name))
		}
	}
	return sums
}

// sameFiles fails the test when a store file of dir changed since before.
func sameFiles(t *testing.T, dir string, before map[string]string, what string) {
	t.Helper()
	for name, sum := range fileSums(t, dir) {
		if sum != before[name] {
			t.Errorf("%s changed %s", what, name)
		}
	}
}

// refused runs args, which must exit with code and print one line on
// stderr holding want, and change no file.
func refused(t *testing.T, dir string, code int, want string, args ...string) {
	t.Helper()
	before := fileSums(t, dir)
	_, stderr, got := run(t, dir, args...)
	if got != code || !strings.Contains(stderr, want) || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 {
		t.Errorf("assistant %s: exit %d, stderr %q; want exit %d and one line with %q", strings.Join(args, " "), got, stderr, code, want)
	}
	sameFiles(t, dir, before, "assistant "+strings.Join(args, " "))
}

// listed runs list with args and returns "task=status" of each task, in
// order, joined by spaces.
func listed(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, stderr, code := run(t, dir, append([]string{"list"}, args...)...)
	if code != 0 {
		t.Fatalf("list %v: exit %d, %s", args, code, stderr)
	}
	var v struct {
		Tasks []struct{ Task, Status string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("list %v: %v\n%s", args, err, out)
	}
	var got []string
	for _, tk := range v.Tasks {
		got = append(got, tk.Task+"="+tk.Status)
	}
	return strings.Join(got, " ")
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

// TestCIExpiredDraftIsAState is case 3: past its expires_at a waiting
// draft shows as expired (show's JSON, list, the card, which offers a new
// start instead of approve) while show writes nothing; recover ends it
// failed with draft_expired through the engine, nothing is submitted, an
// approve afterwards is exit 3, and prune (after a dry run that changes no
// file) removes its old checkpoints.
func TestCIExpiredDraftIsAState(t *testing.T) {
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
	if d := v["draft"].(map[string]any); d["expired"] != true || v["status"] != "waiting" {
		t.Fatalf("show e1: status %v, draft %v; want waiting with expired true", v["status"], d)
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
		"":                 "e1=expired w1=waiting",
		"--status waiting": "w1=waiting",
		"--status expired": "e1=expired",
		"--status waiting,expired --status failed": "e1=expired w1=waiting",
		"--limit 1": "e1=expired",
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

// TestCIAnswerToEndedTask is case 4: an answer to a task that has ended is
// the answer it recorded (exit 0, the outcome) or exit 3 with one line
// saying what the task ended as; a --draft that is not the task's is exit
// 2; none changes a file.
func TestCIAnswerToEndedTask(t *testing.T) {
	dir := t.TempDir()
	c1 := mustRun(t, dir, "start", "c1", "A3003", "--reason", "size")
	draft := c1["draft"].(map[string]any)["draft_id"].(string)
	mustRun(t, dir, "resume", "c1", "--action", "cancel")
	refused(t, dir, 2, "--draft d_wrong", "resume", "c1", "--action", "approve", "--draft", "d_wrong")
	refused(t, dir, 2, "--draft d_wrong", "resume", "c1", "--action", "cancel", "--draft", "d_wrong")
	refused(t, dir, 3, "task c1 ended as cancelled; the answer approve changes nothing", "resume", "c1", "--action", "approve")
	refused(t, dir, 3, "task c1 ended as cancelled", "resume", "c1", "--action", "approve", "--draft", draft)
	if v := mustRun(t, dir, "resume", "c1", "--action", "cancel", "--draft", draft); v["status"] != "cancelled" {
		t.Errorf("cancel again: %v, want the outcome cancelled", v["status"])
	}

	mustRun(t, dir, "start", "d1", "A3004", "--reason", "size")
	mustRun(t, dir, "resume", "d1", "--action", "approve")
	if v := mustRun(t, dir, "resume", "d1", "--action", "approve"); v["status"] != "done" || v["result"].(map[string]any)["reused"] != true {
		t.Errorf("approve again: %v %v, want done with the application reused", v["status"], v["result"])
	}
	refused(t, dir, 3, "task d1 ended as done; the answer cancel changes nothing", "resume", "d1", "--action", "cancel")
	if applications(t, dir, "c1") != "0" || applications(t, dir, "d1") != "1" {
		t.Errorf("applications: c1 %s, d1 %s; want 0 and 1", applications(t, dir, "c1"), applications(t, dir, "d1"))
	}
	verifyClean(t, dir)
}

// TestCIDraftTTLIsInput is case 5: the draft validity is part of a start's
// input (another --draft-ttl for a task id is exit 3, the first window
// stays), and a sub-second validity is refused (exit 2), never cut to
// whole seconds.
func TestCIDraftTTLIsInput(t *testing.T) {
	dir := t.TempDir()
	first := mustRun(t, dir, "start", "t5", "A3003", "--reason", "size", "--draft-ttl", "60s")
	window := first["draft"].(map[string]any)["expires_at"]
	refused(t, dir, 3, "t5", "start", "t5", "A3003", "--reason", "size", "--draft-ttl", "120s")
	refused(t, dir, 3, "t5", "start", "t5", "A3003", "--reason", "size")
	again := mustRun(t, dir, "start", "t5", "A3003", "--reason", "size", "--draft-ttl", "1m")
	if again["draft"].(map[string]any)["expires_at"] != window {
		t.Errorf("the same start again: expires_at %v, want the first window %v", again["draft"], window)
	}

	mustRun(t, dir, "start", "t6", "A3004", "--reason", "size")
	mustRun(t, dir, "start", "t6", "A3004", "--reason", "size", "--draft-ttl", "300s") // the default, given

	refused(t, dir, 2, "1.999s", "start", "t7", "A3001", "--reason", "size", "--draft-ttl", "1999ms")
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id = 't7'`); got != "0" {
		t.Errorf("a refused start recorded t7")
	}
	fresh := filepath.Join(t.TempDir(), "data")
	if _, stderr, code := run(t, fresh, "start", "t8", "A3001", "--reason", "size", "--draft-ttl", "1500ms"); code != 2 || stderr == "" {
		t.Errorf("--draft-ttl 1500ms on a new data dir: exit %d, %q; want 2", code, stderr)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a refused start made the data dir: %v", err)
	}
	verifyClean(t, dir)
}

// TestCIListFlags is the list part of case 6 that this file's cases use:
// --batch keeps the tasks of one batch's rows, --limit the first N.
func TestCIListFlags(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "alone", "A3001", "--reason", "size")
	mustRun(t, dir, "batch", "b1", batchFile(t, dir, 3))
	if got := listed(t, dir, "--batch", "b1"); got != "row-0000=waiting row-0001=waiting row-0002=waiting" {
		t.Errorf("list --batch b1: %s, want its three rows", got)
	}
	if got := listed(t, dir, "--batch", "b1", "--limit", "2", "--status", "waiting"); got != "row-0000=waiting row-0001=waiting" {
		t.Errorf("list --batch b1 --limit 2: %s, want the first two rows", got)
	}
	refused(t, dir, 4, "b9", "list", "--batch", "b9")
	refused(t, dir, 2, "--limit", "list", "--limit", "-1")
}
