package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// backgroundEnv is background with env (KEY=VALUE items) added to the
// process's environment.
func backgroundEnv(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json"}, args...)...)
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c, &out, &errb
}

// crashedAtReview leaves task t1 running with its holder gone: an approve
// killed before review.
func crashedAtReview(t *testing.T, dir string) {
	t.Helper()
	mustRun(t, dir, "start", "t1", "A3003", "--reason", "size")
	c, _, _ := backgroundEnv(t, dir, []string{"ASSISTANT_FAULT=before:review"}, "resume", "t1", "--action", "approve")
	if code := wait(t, c); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("approve with before:review: exit %d, want killed", code)
	}
	if s := record(t, dir, "t1", "status"); s != "running" {
		t.Fatalf("after the crash t1 is %s, want running", s)
	}
}

// TestRecoverLeavesAStopThatCameAfterItsLook: recover has chosen a task
// left running (its holder killed) and an operator stops it before
// recover takes its lease. The stop stands: stop reports interrupted,
// recover does not run the task (reports it interrupted, exit 0), nothing
// is submitted, and the record, list and show all say interrupted; a
// deliberate resume continues it.
func TestRecoverLeavesAStopThatCameAfterItsLook(t *testing.T) {
	dir := t.TempDir()
	crashedAtReview(t, dir)
	rec, out, errb := backgroundEnv(t, dir, []string{"ASSISTANT_FAULT=recover:before-lease@pause"}, "recover")
	eventually(t, "recover pauses before its lease", func() bool { return stopped(rec.Process.Pid) })
	if v := mustRun(t, dir, "stop", "t1", "--wait", "1s"); v["status"] != "interrupted" {
		t.Fatalf("stop: status %v, want interrupted", v["status"])
	}
	_ = rec.Process.Signal(syscall.SIGCONT)
	if code := wait(t, rec); code != 0 {
		t.Fatalf("recover: exit %d, %s", code, errb)
	}
	var got struct {
		Recovered []struct {
			Task, Status string
			Recovery     any
		}
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("recover output %q: %v", out, err)
	}
	if len(got.Recovered) != 1 || got.Recovered[0].Task != "t1" || got.Recovered[0].Status != "interrupted" || got.Recovered[0].Recovery != nil {
		t.Errorf("recover reported %s, want t1 interrupted, not recovered", out)
	}
	if s := record(t, dir, "t1", "status"); s != "interrupted" {
		t.Errorf("record after recover: %s, want interrupted", s)
	}
	if n := applications(t, dir, "t1"); n != "0" {
		t.Errorf("applications after recover: %s, want 0", n)
	}
	if v := mustRun(t, dir, "show", "t1"); v["status"] != "interrupted" {
		t.Errorf("show: %v, want interrupted", v["status"])
	}
	if v := mustRun(t, dir, "resume", "t1"); v["status"] != "done" {
		t.Errorf("a deliberate resume: %v, want done", v["status"])
	}
}
