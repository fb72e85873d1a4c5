package e2e

import (
	"bytes"
	"database/sql"
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

// runIn is run with env (KEY=VALUE items) added to the environment.
func runIn(tb testing.TB, dir string, env []string, args ...string) (string, string, int) {
	tb.Helper()
	return runEnv(tb, "", env, append([]string{"--data", dir, "--output", "json"}, args...)...)
}

// holdOn sets the lease of task in data dir dir to last ttl from now,
// keeping its holder: a paused holder renews nothing, and the test must
// not depend on how fast it runs before the lease would lapse.
func holdOn(t *testing.T, dir, task string, ttl time.Duration) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE tasks SET lease_until = ? WHERE task_id = ?`, time.Now().UTC().Add(ttl).Format(time.RFC3339Nano), task); err != nil {
		t.Fatal(err)
	}
}

// TestStoppedButHeldHintsOnlyWhatWorks: a task is stopped while the
// process that runs it is paused (on this host, or on another host before
// its lease lapses), so that process still holds it. Every hint offers
// only what works now: resume, or an answer, is refused (exit 3) saying the task is
// stopped and who still holds it until when, offering resume for later and
// never stop; a second stop says the same (exit 3), and so does show's
// card. Once the holder has let go, the resume offered works.
func TestStoppedButHeldHintsOnlyWhatWorks(t *testing.T) {
	tests := []struct {
		name         string
		holder, rest []string // environments of the holder and of the other commands
		until        string   // how the hint says when the hold ends
	}{
		{"SameHost", nil, nil, "or exits"},
		{"OtherHost", []string{"ASSISTANT_HOST=ha"}, []string{"ASSISTANT_HOST=hb"}, "its lease lapses at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mustRun(t, dir, "start", "t1", "A3003", "--reason", "size")
			holder, _, _ := backgroundEnv(t, dir, append([]string{"ASSISTANT_FAULT=before:submit@pause"}, tt.holder...), "resume", "t1", "--action", "approve")
			eventually(t, "the approving process pauses before submit", func() bool { return stopped(holder.Process.Pid) })
			// The paused holder renews nothing; keep its lease from lapsing
			// while the test runs, as a holder that is merely slow.
			holdOn(t, dir, "t1", time.Hour)
			if out, errOut, code := runIn(t, dir, tt.rest, "stop", "t1", "--wait", "100ms"); code != 0 || !strings.Contains(out, `"interrupted"`) {
				t.Fatalf("stop: exit %d, %s%s", code, out, errOut)
			}
			// check: text says the task is stopped, who holds it and
			// until when (until "" for the card, which gives the lease's
			// expiry), and offers resume for later, never stop.
			check := func(what, text, until string) {
				t.Helper()
				for _, want := range []string{"stopped", fmt.Sprintf("pid %d", holder.Process.Pid), "still holds it", until, "resume t1"} {
					if !strings.Contains(strings.ToLower(text), want) {
						t.Errorf("%s: %q does not say %q", what, text, want)
					}
				}
				if strings.Contains(text, "stop t1`") || strings.Contains(text, "stop t1\n") {
					t.Errorf("%s: %q offers stop again", what, text)
				}
			}
			_, errOut, code := runIn(t, dir, tt.rest, "resume", "t1")
			if code != 3 {
				t.Errorf("resume while held: exit %d, want 3", code)
			}
			check("resume", errOut, tt.until)
			_, errOut, code = runIn(t, dir, tt.rest, "resume", "t1", "--action", "approve")
			if code != 3 || strings.Contains(errOut, "running it now") {
				t.Errorf("approve while held: exit %d %q, want 3, not running", code, errOut)
			}
			check("approve", errOut, tt.until)
			_, errOut, code = runIn(t, dir, tt.rest, "stop", "t1")
			if code != 3 || !strings.Contains(errOut, "already stopped") {
				t.Errorf("second stop: exit %d %q, want 3 already stopped", code, errOut)
			}
			check("second stop", errOut, tt.until)
			out, _, code := runIn(t, dir, tt.rest, "show", "t1", "--output", "text")
			if code != 0 {
				t.Fatalf("show: exit %d", code)
			}
			check("show's card", out, "lease until")
			if strings.Contains(out, "Continue it: ") {
				t.Errorf("show's card offers a resume now: %q", out)
			}
			// The holder goes on, sees the stop and lets go; then the
			// resume offered works.
			_ = holder.Process.Signal(syscall.SIGCONT)
			if code := wait(t, holder); code != 0 {
				t.Fatalf("the stopped approve: exit %d", code)
			}
			if out, errOut, code := runIn(t, dir, tt.rest, "resume", "t1"); code != 0 || !strings.Contains(out, `"done"`) {
				t.Errorf("resume after the holder let go: exit %d, %s%s", code, out, errOut)
			}
		})
	}
}

// listStatus is the status `list` (with args) shows for task; "" when it
// does not show it.
func listStatus(t *testing.T, dir, task string, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, dir, append([]string{"list"}, args...)...)
	var got struct {
		Tasks []struct{ Task, Status string }
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("list: exit %d %v, %s", code, err, errOut)
	}
	for _, x := range got.Tasks {
		if x.Task == task {
			return x.Status
		}
	}
	return ""
}

// TestStopTooLate: a stop lands after the run's last step (the submit's
// checkpoint written, the approving process not yet let go). The stop
// stopped nothing, and says so: exit 3 "too late", naming the application,
// never exit 0 with "done". When the holder lets go within stop's wait,
// the record is set to done; when it lets go later, the record stays
// interrupted until a resume, but list shows done, as show does. Either
// way there is one application.
func TestStopTooLate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		wait   string
		record string // the record's status after both commands
	}{
		{"HolderLetsGoWithinTheWait", "15s", "done"},
		// The approve's own release sets the record done (it ended after
		// a stop it saw too late).
		{"HolderLetsGoAfterTheWait", "100ms", "done"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mustRun(t, dir, "start", "t1", "A3003", "--reason", "size")
			holder, hout, _ := backgroundEnv(t, dir, []string{"ASSISTANT_FAULT=after-checkpoint:submit@pause"}, "resume", "t1", "--action", "approve")
			eventually(t, "the approving process pauses after submit's checkpoint", func() bool { return stopped(holder.Process.Pid) })
			stop, sout, serr := background(t, dir, "stop", "t1", "--wait", tt.wait)
			eventually(t, "the stop is written", func() bool { return record(t, dir, "t1", "status") == "interrupted" })
			if tt.wait != "15s" {
				if code := wait(t, stop); code != 3 {
					t.Errorf("stop while the holder is paused: exit %d, want 3; %s%s", code, sout, serr)
				}
			}
			_ = holder.Process.Signal(syscall.SIGCONT)
			if code := wait(t, holder); code != 0 || !strings.Contains(hout.String(), `"done"`) {
				t.Fatalf("approve: exit %d, %s", code, hout)
			}
			if tt.wait == "15s" {
				if code := wait(t, stop); code != 3 {
					t.Errorf("stop: exit %d, want 3; %s%s", code, sout, serr)
				}
			}
			if !strings.Contains(serr.String(), "too late") || !strings.Contains(serr.String(), "application app_") {
				t.Errorf("stop's error %q does not say it came too late, after the application", serr)
			}
			if strings.Contains(sout.String(), `"status": "done"`) {
				t.Errorf("stop printed the task done: %s", sout)
			}
			if got := record(t, dir, "t1", "status"); got != tt.record {
				t.Errorf("record: %s, want %s", got, tt.record)
			}
			if got := listStatus(t, dir, "t1"); got != "done" {
				t.Errorf("list: %q, want done as show says", got)
			}
			if got := listStatus(t, dir, "t1", "--status", "done"); got != "done" {
				t.Errorf("list --status done: %q, want done", got)
			}
			if got := listStatus(t, dir, "t1", "--status", "interrupted"); got != "" {
				t.Errorf("list --status interrupted: %q, want t1 left out", got)
			}
			if v := mustRun(t, dir, "show", "t1"); v["status"] != "done" {
				t.Errorf("show: %v, want done", v["status"])
			}
			if n := applications(t, dir, "t1"); n != "1" {
				t.Errorf("applications: %s, want 1", n)
			}
		})
	}
}
