package e2e

// wait and the outcome exit codes (docs/ci.md "How wait waits", "Exit codes";
// docs/ci.md "The script", "Exit codes a script sees").

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCIWaitScript runs testdata/ci_wait.sh, the CI example of
// docs/ci.md, three times at once: a person approves one task and cancels
// another from other processes a moment later, and lets the third task's
// draft (3 s) expire. Each script exits by its task's outcome: 0, 5, 6.
func TestCIWaitScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeDataDir(t, dir) // the data dir, before three starts race to make it
	script, err := filepath.Abs("testdata/ci_wait.sh")
	if err != nil {
		t.Fatal(err)
	}
	type job struct {
		task, order, answer string
		ttl                 string // the draft's validity: long where a person answers, short where it runs out
		code                int
		says                string
		out                 *bytes.Buffer
		done                <-chan int
	}
	jobs := []*job{
		{task: "ci-approve", order: "A3001", answer: "approve", ttl: "1h", code: 0, says: "ci-approve: submitted"},
		{task: "ci-cancel", order: "A3002", answer: "cancel", ttl: "1h", code: 5, says: "ci-cancel: cancelled by a person"},
		{task: "ci-expire", order: "A3003", ttl: "3s", code: 6, says: "ci-expire: failed: draft_expired"},
	}
	for _, j := range jobs {
		c := exec.Command("sh", script, j.task, j.order, "damaged in transit")
		c.Dir = dir
		c.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "DATA="+dir, "TTL="+j.ttl)
		j.out = &bytes.Buffer{}
		c.Stdout, c.Stderr = j.out, j.out
		j.done = exited(t, c)
	}
	for _, j := range jobs {
		eventually(t, j.task+" waits for approval", func() bool {
			out, _, code := run(t, dir, "show", j.task)
			return code == 0 && statusOf(t, out) == "waiting"
		})
	}
	time.Sleep(time.Second) // a person takes a moment; the scripts block meanwhile
	for _, j := range jobs {
		if j.answer == "" {
			continue // its draft runs out on its own clock, however slow the machine
		}
		stillRunning(t, "ci_wait.sh "+j.task, j.done)
		mustRun(t, dir, "resume", j.task, "--action", j.answer)
	}
	for _, j := range jobs {
		if code := <-j.done; code != j.code || strings.TrimSpace(j.out.String()) != j.says {
			t.Errorf("ci_wait.sh %s: exit %d, printed %q; want %d, %q", j.task, code, j.out.String(), j.code, j.says)
		}
	}
}

// TestWaitOutcomes is wait in a process of its own against a task that
// another process decides, ends, stops or abandons.
func TestWaitOutcomes(t *testing.T) {
	t.Parallel()
	t.Run("TimeoutOnWaitingTaskIs7", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "r1", "A3003", "--reason", "size")
		out, errb, code := run(t, dir, "wait", "r1", "--timeout", "1s")
		if code != 7 || statusOf(t, out) != "waiting" || !strings.Contains(errb, "--timeout 1s passed") {
			t.Fatalf("wait --timeout 1s: exit %d, stderr %q, stdout %s; want 7, waiting", code, errb, out)
		}
	})

	t.Run("ExpiredDraftIs6AndWaitWritesNothing", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "r1", "A3003", "--reason", "size", "--draft-ttl", "1s")
		out, _, code := run(t, dir, "wait", "r1", "--timeout", "1m")
		var v struct {
			Status string
			Error  struct{ Code string }
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil || code != 6 || v.Status != "failed" || v.Error.Code != "draft_expired" {
			t.Fatalf("wait on a draft that expires: exit %d, stdout %s; want 6, failed, draft_expired", code, out)
		}
		if got := record(t, dir, "r1", "status"); got != "waiting" {
			t.Errorf("the record says %s after wait, want waiting: wait writes nothing", got)
		}
	})

	t.Run("StoppedTaskIs8", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		proc, out := pausedBatch(t, dir, batchFile(t, dir, signalledRows))
		stopPaused(t, dir, "b1", proc)
		// A stop from another process is no signal to this one: without
		// --exit-status the batch command exits 0, status interrupted.
		checkBatchStopped(t, dir, proc, out, "stopped batch", 1, 0)
		out2, errb, code := run(t, dir, "wait", "b1")
		if code != 8 || statusOf(t, out2) != "interrupted" || !strings.Contains(errb, "resume b1") {
			t.Fatalf("wait on a stopped batch: exit %d, stderr %q; want 8 and the resume hint", code, errb)
		}
		if _, _, code := run(t, dir, "show", "b1", "--exit-status"); code != 8 {
			t.Errorf("show --exit-status of a stopped batch: exit %d, want 8", code)
		}
	})

	t.Run("StoppedBatchWithExitStatusIs8", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir() // batchFile's import makes the data dir
		p, _ := pausedBatch(t, dir, batchFile(t, dir, signalledRows), "--exit-status")
		stopPaused(t, dir, "b1", p)
		if code := exitWithin(t, p.done, time.Minute); code != 8 {
			t.Fatalf("batch --exit-status stopped by another process: exit %d, want 8", code)
		}
	})

	t.Run("ProcessGoneIs8AtOnce", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		proc, _ := pausedBatch(t, dir, batchFile(t, dir, signalledRows))
		_ = proc.Process.Signal(syscall.SIGKILL) // a crash: nothing is cleaned up
		exitWithin(t, proc.done, time.Minute)
		out, errb, code := run(t, dir, "wait", "b1")
		if code != 8 || statusOf(t, out) != "running" || !strings.Contains(errb, "recover") {
			t.Fatalf("wait on a batch whose process is gone: exit %d, stderr %q; want 8 and the recover hint", code, errb)
		}
		if got := record(t, dir, "b1", "status"); got != "running" {
			t.Errorf("the record says %s after wait, want running: wait recovers nothing", got)
		}
	})

	t.Run("RunningBatchIsWaitedFor", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		proc, _ := pausedBatch(t, dir, batchFile(t, dir, signalledRows))
		proc.letRun(t)
		out, errb, code := run(t, dir, "wait", "b1")
		if code != 0 || statusOf(t, out) != "done" {
			t.Fatalf("wait on a running batch: exit %d, stderr %q, stdout %s; want 0, done", code, errb, out)
		}
		exitWithin(t, proc.done, time.Minute)
	})

	t.Run("UnknownTaskIs4AtOnce", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "r1", "A3003", "--reason", "size")
		if _, _, code := run(t, dir, "wait", "r2"); code != 4 {
			t.Errorf("wait on an unknown task: exit %d, want 4", code)
		}
		c := exec.Command(assistantBin(), "--data", dir, "--user", "other-user", "wait", "r1")
		if code := exitOf(t, c.Run()); code != 4 {
			t.Errorf("wait on another user's task: exit %d, want 4", code)
		}
	})

	t.Run("SignalEndsTheWait", func(t *testing.T) {
		t.Parallel()
		for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
			dir := t.TempDir()
			mustRun(t, dir, "start", "r1", "A3003", "--reason", "size")
			c := exec.Command(assistantBin(), "--data", dir, "wait", "r1")
			var errb bytes.Buffer
			c.Stderr = &errb
			done := exited(t, c)
			eventually(t, "wait has its files open", func() bool { return hasOpen(c.Process.Pid, "business.sqlite") })
			stillRunning(t, "wait", done)
			if err := c.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := <-done; code != want {
				t.Errorf("wait ended by %s: exit %d, want %d; stderr %q", sig, code, want, errb.String())
			}
		}
	})
}

// TestExitStatus is start, resume and show with --exit-status in separate
// processes: the outcome decides the exit code; without the flag the same
// commands exit 0.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"start", "w1", "A3003", "--reason", "size", "--exit-status"}, 7},
		{[]string{"show", "w1", "--exit-status"}, 7},
		{[]string{"show", "w1"}, 0},
		{[]string{"start", "f1", "A3007", "--reason", "size", "--exit-status"}, 6},
		{[]string{"show", "f1", "--exit-status"}, 6},
		{[]string{"start", "c1", "A3004", "--reason", "broken"}, 0},
		{[]string{"resume", "c1", "--action", "cancel", "--exit-status"}, 5},
		{[]string{"show", "c1", "--exit-status"}, 5},
		{[]string{"resume", "w1", "--action", "approve", "--exit-status"}, 0},
		{[]string{"show", "w1", "--exit-status"}, 0},
	} {
		if _, errb, code := run(t, dir, tc.args...); code != tc.code {
			t.Errorf("assistant %s: exit %d, want %d; stderr %q", strings.Join(tc.args, " "), code, tc.code, errb)
		}
	}
}

// startWait starts `assistant wait TASK` and returns once it waits for its
// next look: it has both files of the data dir open and sleeps, in two
// looks at it in a row (opening the files, it reads and closes them more
// than once). The tests below check its end, not this start.
func startWait(t *testing.T, dir, task string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "wait", task)
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = new(bytes.Buffer), &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waiting := 0
	eventually(t, "wait waits for its next look", func() bool {
		pid := c.Process.Pid
		if hasOpen(pid, "business.sqlite") && hasOpen(pid, "checkpoints.sqlite") && asleep(pid) {
			waiting++
		} else {
			waiting = 0
		}
		return waiting == 2
	})
	return c, &stderr
}

// endOf waits for c to exit, at most a minute, and returns its exit code.
func endOf(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return exitOf(t, err)
	case <-time.After(time.Minute):
		_ = c.Process.Kill()
		<-done
		t.Fatal("the command did not end within a minute")
	}
	return -1
}

// TestWaitDataDirDeleted: wait ends exit 4 with one line when its data dir
// is deleted under it, instead of waiting for ever.
func TestWaitDataDirDeleted(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "r1", "A3003", "--reason", "x")
	c, stderr := startWait(t, dir, "r1")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if code := endOf(t, c); code != 4 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "was deleted while waiting") {
		t.Errorf("wait after its data dir was deleted: exit %d, stderr %q; want exit 4 and one line", code, stderr.String())
	}
}
