package e2e

// Operator stop (docs/recovery.md "Operator stop", docs/design.md "A stop
// is final"): a stop lands before, during or after the run's last step,
// and what every command says afterwards.

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

// approveBlocked parks t1 at approval, then starts `resume t1 --action
// approve` while this test holds the checkpoint file's write lock, and
// returns once that process holds the task (running, its lease taken): it
// is blocked saving the answer. release lets it go on.
func approveBlocked(t *testing.T, dir string) (proc *exec.Cmd, out, errb *bytes.Buffer, release func()) {
	t.Helper()
	mustRun(t, dir, "start", "t1", "A3003", "--reason", "size")
	// The resume fences the checkpoint store before it takes the lease:
	// the lock is taken once it holds the task, parked after the trail.
	proc, out, errb = backgroundEnv(t, dir, []string{"ASSISTANT_FAULT=answer:after-trail@pause"}, "resume", "t1", "--action", "approve")
	release = lockWhileParked(t, dir, proc, "answer:after-trail")
	eventually(t, "the approving process holds t1", func() bool {
		return record(t, dir, "t1", "status") == "running" && record(t, dir, "t1", "lease_owner") != ""
	})
	return proc, out, errb, release
}

// TestStopIsFinal: a stop lands while an approval waits
// for the checkpoint file (held by another process); when the file is free
// again, no step starts after the stop, nothing is submitted, the task stays
// interrupted, and the approving command says so (exit 0, status
// interrupted; not 130 as for a signal), and the stopped run adds no step
// to the timeline: the node that was due never ran, and only steps that
// ran are recorded.
func TestStopIsFinal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	proc, out, errb, release := approveBlocked(t, dir)
	if _, stderr, code := run(t, dir, "stop", "t1", "--wait", "100ms"); code != 0 {
		t.Fatalf("stop: exit %d, %s", code, stderr)
	}
	defer func() {
		// show agrees with the record: the stop stands at the question the
		// run had reached; a plain resume puts the question back.
		if v := mustRun(t, dir, "show", "t1"); v["status"] != "interrupted" {
			t.Errorf("show after the stop: %v, want interrupted", v["status"])
		}
		// The answer was saved before the stop took effect, or it was not:
		// resuming applies it, or asks the question again.
		v := mustRun(t, dir, "resume", "t1")
		switch v["status"] {
		case "waiting":
			v = mustRun(t, dir, "resume", "t1", "--action", "approve")
		case "done":
		default:
			t.Fatalf("resume after the stop: %v, want waiting or done", v["status"])
		}
		if v["status"] != "done" || applications(t, dir, "t1") != "1" {
			t.Errorf("after the stop and a resume: %v, %s applications; want done and 1", v["status"], applications(t, dir, "t1"))
		}
	}()
	eventually(t, "t1 reads interrupted", func() bool { return record(t, dir, "t1", "status") == "interrupted" })
	steps := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = 't1'`)
	release()
	code := wait(t, proc)
	var v struct{ Status string }
	_ = json.Unmarshal(out.Bytes(), &v)
	if code != 0 || v.Status != "interrupted" {
		t.Errorf("the approving command: exit %d, status %q, stderr %q; want 0 and interrupted", code, v.Status, errb.String())
	}
	if got := applications(t, dir, "t1"); got != "0" {
		t.Errorf("%s applications after the stop, want 0", got)
	}
	if got := record(t, dir, "t1", "status"); got != "interrupted" {
		t.Errorf("status after the stopped run ended = %s, want interrupted", got)
	}
	// No node ran after the stop, and the stopped run recorded none.
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = 't1'`); got != steps {
		t.Errorf("%s steps after the stopped run ended, want the %s there were at the stop", got, steps)
	}
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
	t.Parallel()
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

// TestStoppedButHeldHintsOnlyWhatWorks: a task is stopped while the
// process that runs it is paused (on this host, or on another host before
// its lease lapses), so that process still holds it. Every hint offers
// only what works now: resume, or an answer, is refused (exit 3) saying the task is
// stopped and who still holds it until when, offering resume for later and
// never stop; a second stop says the same (exit 3), and so does show's
// card. Once the holder has let go, the resume offered works.
func TestStoppedButHeldHintsOnlyWhatWorks(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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
// finds the application in its own transaction, writes nothing and says
// so at once, whatever its wait: exit 3 "too late", naming the
// application, never exit 0 with "done". The record stays running until
// the holder lets go, then reads done; there is one application.
func TestStopTooLate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		wait   string
		record string // the record's status after both commands
	}{
		{"LongWait", "15s", "done"},
		{"ShortWait", "100ms", "done"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mustRun(t, dir, "start", "t1", "A3003", "--reason", "size")
			holder, hout, _ := backgroundEnv(t, dir, []string{"ASSISTANT_FAULT=after-checkpoint:submit@pause"}, "resume", "t1", "--action", "approve")
			eventually(t, "the approving process pauses after submit's checkpoint", func() bool { return stopped(holder.Process.Pid) })
			stop, sout, serr := background(t, dir, "stop", "t1", "--wait", tt.wait)
			if code := wait(t, stop); code != 3 {
				t.Errorf("stop while the holder is paused: exit %d, want 3; %s%s", code, sout, serr)
			}
			if got := record(t, dir, "t1", "status"); got != "running" {
				t.Errorf("record after the refused stop: %s, want running (nothing written)", got)
			}
			_ = holder.Process.Signal(syscall.SIGCONT)
			if code := wait(t, holder); code != 0 || !strings.Contains(hout.String(), `"done"`) {
				t.Fatalf("approve: exit %d, %s", code, hout)
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

// TestRefusedAnswerLeavesTheStop: an answer that read a waiting task, then
// took it after another answer was saved and the task was stopped, is
// refused under the lease (the task was already answered): the stop
// stands: the refused answer does not let go of the task as running
// part-way, so no recover carries out the saved answer after the stop
// (docs/design.md "A stop is final").
func TestRefusedAnswerLeavesTheStop(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "t", "A3003", "--reason", "size")

	// The approve reads the waiting task and stops before taking it.
	approve := exec.Command(assistantBin(), "--data", dir, "--output", "json", "resume", "t", "--action", "approve")
	approve.Env = append(os.Environ(), "ASSISTANT_FAULT=resume:before-lease@pause")
	var errb bytes.Buffer
	approve.Stderr = &errb
	if err := approve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = approve.Process.Signal(syscall.SIGCONT); _ = approve.Process.Kill() })
	eventually(t, "the approve pauses before its lease", func() bool { return stopped(approve.Process.Pid) })

	// A cancel is saved and its process killed part-way; an operator
	// stops the task.
	if _, code, _ := faultRun(t, dir, "before:cancel", []string{"resume", "t", "--action", "cancel"}); code != 137 {
		t.Fatalf("cancel killed before its node: exit %d", code)
	}
	if _, stderr, code := run(t, dir, "stop", "t", "--wait", "1s"); code != 0 {
		t.Fatalf("stop: exit %d, %s", code, stderr)
	}

	// The approve goes on: the task was answered meanwhile.
	if err := approve.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := exitOf(t, approve.Wait()); code != 3 || !strings.Contains(errb.String(), `already answered "cancel"`) {
		t.Fatalf("approve: exit %d, stderr %q; want exit 3, already answered cancel", code, errb.String())
	}
	if got := listed(t, dir); got != "t=interrupted" {
		t.Fatalf("after the refused approve, list says %s; want the task interrupted", got)
	}
	mustRun(t, dir, "recover")
	if got := listed(t, dir); got != "t=interrupted" {
		t.Errorf("after recover, list says %s; want the stop to stand", got)
	}
}

// TestStopAfterTheBusinessCommit: an approve killed after submit's
// business commit, before its checkpoint, left the task running with its
// application in business.sqlite. A stop then came too late: exit 3
// naming the application, and the record, show, list and wait say done
// submitted; a second stop and a cancel are refused as on a task that
// ended; the task never reads as interrupted with no application
// (docs/storage.md "The business file is the truth").
func TestStopAfterTheBusinessCommit(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "t", "A3001", "--reason", "x")
	if _, code, _ := faultRun(t, dir, "submit:after-business-commit", []string{"resume", "t", "--action", "approve"}); code != 137 {
		t.Fatalf("approve killed after the business commit: exit %d", code)
	}
	out, stderr, code := run(t, dir, "stop", "t")
	if code != 3 || !strings.Contains(stderr, "too late") || !strings.Contains(stderr, "application app_") {
		t.Fatalf("stop: exit %d, %q%q; want exit 3, too late, naming the application", code, out, stderr)
	}
	if got := record(t, dir, "t", "status"); got != "done" {
		t.Errorf("record: %s, want done", got)
	}
	if v := mustRun(t, dir, "show", "t"); v["status"] != "done" || v["stage"] != "submitted" {
		t.Errorf("show: %v %v, want done submitted", v["status"], v["stage"])
	}
	if got := listed(t, dir); got != "t=done" {
		t.Errorf("list: %s, want t=done", got)
	}
	if _, stderr, code := run(t, dir, "wait", "t"); code != 0 {
		t.Errorf("wait: exit %d, %s; want 0 (done)", code, stderr)
	}
	if _, stderr, code := run(t, dir, "stop", "t"); code != 3 || strings.Contains(stderr, "already stopped") {
		t.Errorf("second stop: exit %d, %s; want exit 3, not 'already stopped'", code, stderr)
	}
	if n := applications(t, dir, "t"); n != "1" {
		t.Errorf("applications: %s, want 1", n)
	}
}

// TestSecondStopAfterALateStop: an approve paused inside submit after its
// business commit (or after submit's checkpoint) is stopped: too late
// already (exit 3, the application is in business.sqlite), though its
// process still holds the task and the record stays interrupted. Then:
//
//   - the approve goes on and ends done submitted: its own release sets
//     the record done, and a second stop says it ended;
//   - the approve is killed before it lets go: a second stop is too late,
//     names the application, and sets the record done.
//
// Never does the record stay interrupted while show and list say done,
// nor does the second stop say "it is already stopped".
func TestSecondStopAfterALateStop(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		point string
		kill  bool // kill the approve instead of letting it go on
	}{
		{"submit:after-business-commit@pause", false},
		{"after-checkpoint:submit@pause", true},
	} {
		t.Run(tt.point, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			mustRun(t, dir, "start", "t", "A3001", "--reason", "x")
			holder, hout, _ := backgroundEnv(t, dir, []string{"ASSISTANT_FAULT=" + tt.point}, "resume", "t", "--action", "approve")
			eventually(t, "the approve pauses in submit", func() bool { return stopped(holder.Process.Pid) })
			_, stderr, code := run(t, dir, "stop", "t", "--wait", "100ms")
			if code != 3 || !strings.Contains(stderr, "too late") || !strings.Contains(stderr, "application app_") {
				t.Errorf("stop while the approve is paused: exit %d, %q; want exit 3, too late, naming the application", code, stderr)
			}
			if tt.kill {
				_ = holder.Process.Kill()
				_ = holder.Wait()
			} else {
				_ = holder.Process.Signal(syscall.SIGCONT)
				if code := wait(t, holder); code != 0 || !strings.Contains(hout.String(), `"done"`) {
					t.Fatalf("approve: exit %d, %s", code, hout)
				}
				if got := record(t, dir, "t", "status"); got != "done" {
					t.Errorf("record after the approve ended: %s, want done", got)
				}
			}
			_, stderr, code = run(t, dir, "stop", "t")
			if code != 3 || strings.Contains(stderr, "already stopped") {
				t.Errorf("second stop: exit %d, %q; want exit 3, not 'already stopped'", code, stderr)
			}
			if tt.kill && (!strings.Contains(stderr, "too late") || !strings.Contains(stderr, "application app_")) {
				t.Errorf("second stop: %q; want too late, naming the application", stderr)
			}
			if got := record(t, dir, "t", "status"); got != "done" {
				t.Errorf("record: %s, want done", got)
			}
			if got := listed(t, dir); got != "t=done" {
				t.Errorf("list: %s, want t=done", got)
			}
			if n := applications(t, dir, "t"); n != "1" {
				t.Errorf("applications: %s, want 1", n)
			}
		})
	}
}

// TestStopBeforeFirstCheckpoint interrupts a start, and a batch, that wait
// for the checkpoints file's write lock (another process takes it once
// their task is recorded) before their first checkpoint: each ends as any stop does, status interrupted,
// not as a failure (show agrees, and a batch still counts its rows), and
// exits 130 as SIGINT asks; once the lock is free, resume runs it on.
func TestStopBeforeFirstCheckpoint(t *testing.T) {
	t.Parallel()
	rows := filepath.Join(t.TempDir(), "rows.csv")
	if err := os.WriteFile(rows, []byte("task,order,reason\nr1,A3001,too small\nr2,A3002,broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task      string
		args      []string
		wantAfter string // status after resume
		wantRows  float64
	}{
		{"t1", []string{"start", "t1", "A3001", "--reason", "too small"}, "waiting", 0},
		{"b1", []string{"batch", "b1", rows}, "done", 2},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			makeDataDir(t, dir)
			// The command fences the checkpoint store before it records
			// the task: the lock is taken once the record is made.
			point := tc.args[0] + ":after-record"
			proc, out, _ := backgroundEnv(t, dir, []string{"ASSISTANT_FAULT=" + point + "@pause"}, tc.args...)
			release := lockWhileParked(t, dir, proc, point)
			// The task record is made before the first checkpoint, which waits.
			deadline := time.Now().Add(4 * time.Second)
			for query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id = ?`, tc.task) != "1" {
				if time.Now().After(deadline) {
					_ = proc.Process.Kill()
					t.Fatal("no task record")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := proc.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if code := exitOf(t, proc.Wait()); code != 130 {
				t.Fatalf("interrupted before its first checkpoint: exit %d, want 130; stdout %s", code, out)
			}
			var v map[string]any
			if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["status"] != "interrupted" {
				t.Fatalf("interrupted before its first checkpoint: printed %s (%v), want status interrupted", out, err)
			}
			shown := mustRun(t, dir, "show", tc.task)
			if shown["status"] != "interrupted" {
				t.Errorf("show after the stop: status %v, want interrupted", shown["status"])
			}
			if b, _ := shown["batch"].(map[string]any); tc.wantRows > 0 && (b == nil || b["total"] != tc.wantRows) {
				t.Errorf("show after the stop: batch %v, want total %v", shown["batch"], tc.wantRows)
			}
			release()
			if v := mustRun(t, dir, "resume", tc.task); v["status"] != tc.wantAfter {
				t.Errorf("resume after the stop: status %v, want %s", v["status"], tc.wantAfter)
			}
		})
	}
}

// TestBatchStopAndResume: a batch stopped from another process ends
// interrupted, exit 0, as does its resume stopped again; the next resume
// finishes it, the timeline numbered without gaps; a stop of the
// finished batch is exit 3.
func TestBatchStopAndResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Several chunks (DefaultBatchChunk): each run is parked at its first
	// chunk's end and stopped there, part-way.
	const n = 500
	first, out := pausedBatch(t, dir, batchFile(t, dir, n))
	stopped := stopPaused(t, dir, "b1", first)
	if stopped["status"] != "interrupted" {
		t.Errorf("stop printed status %v, want interrupted", stopped["status"])
	}
	// A stop from another process is no signal to this one: without
	// --exit-status the command did its work, exit 0 with status
	// interrupted (with it, 8: TestWaitOutcomes).
	checkBatchStopped(t, dir, first, out, "stopped batch", 1, 0)
	if v := mustRun(t, dir, "show", "b1"); v["status"] != "interrupted" {
		t.Errorf("show after stop: status %v, want interrupted", v["status"])
	}

	// Stop the resumed batch too: it ends as the first run did.
	pos := int(mustRun(t, dir, "show", "b1")["batch"].(map[string]any)["position"].(float64))
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "resume", "b1")
	out = &bytes.Buffer{}
	c.Stdout = out
	resumed := rowsPartWay(t, c)
	if p := int(mustRun(t, dir, "show", "b1")["batch"].(map[string]any)["position"].(float64)); p <= pos || p >= n {
		t.Fatalf("resume parked at position %d; want past %d, before %d (the case under test)", p, pos, n)
	}
	if v := stopPaused(t, dir, "b1", resumed); v["status"] != "interrupted" {
		t.Errorf("second stop printed status %v, want interrupted", v["status"])
	}
	checkBatchStopped(t, dir, resumed, out, "stopped resume", 2, 0)

	mustRun(t, dir, "resume", "b1")
	checkBatchDone(t, dir, "b1", n)
	// Timeline numbers go on with no gap and no reuse.
	if got := query(t, dir, "business.sqlite", `SELECT max(seq) = count(*) FROM steps WHERE task_id = 'b1'`); got != "1" {
		t.Errorf("batch timeline has gaps or reused numbers")
	}
	// A task that finished keeps its status: stop is a conflict.
	if _, _, code := run(t, dir, "stop", "b1"); code != 3 {
		t.Errorf("stop of a finished batch exited %d, want 3", code)
	}
	if v := mustRun(t, dir, "show", "b1"); v["status"] != "done" {
		t.Errorf("after stop of a finished batch: status %v, want done", v["status"])
	}
}

// checkBatchStopped waits for batch b1's process proc (what names it) after
// its stops-th stop: it must exit want (8 for a batch stopped from another
// process, 0 for a resume so stopped, 128+signal for a signal to it)
// printing status interrupted, its last
// timeline step failed as interrupted, and exactly stops steps so failed,
// one per stop.
func checkBatchStopped(t *testing.T, dir string, p proc, out *bytes.Buffer, what string, stops, want int) {
	t.Helper()
	if code := exitWithin(t, p.done, time.Minute); code != want {
		t.Fatalf("%s exited %d, want %d: %s", what, code, want, out)
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["status"] != "interrupted" {
		t.Fatalf("%s printed %v (%v), want status interrupted", what, v, err)
	}
	if got := query(t, dir, "business.sqlite", `SELECT status || ': ' || error FROM steps WHERE task_id = 'b1' ORDER BY seq DESC LIMIT 1`); got != "failed: run interrupted; step not completed" {
		t.Errorf("%s: last timeline step = %q", what, got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = 'b1' AND error = 'run interrupted; step not completed'`); got != fmt.Sprint(stops) {
		t.Errorf("%s: %s steps recorded as interrupted by %d stops, want %d", what, got, stops, stops)
	}
}

// TestAStopAfterARecordedCancelIsTooLate: a cancel is recorded in the
// trail before the run that carries it out takes the task, so a stop that
// comes while that run is on its way (paused before or after the cancel
// step) is too late, as a stop after the submit is: exit 3 "too late:
// cancelled", nothing written, and the run ends the task cancelled; no
// stop reports interrupted for a task that then ends cancelled
// (docs/recovery.md "Operator stop"). On a data dir and on PostgreSQL.
func TestAStopAfterARecordedCancelIsTooLate(t *testing.T) {
	t.Parallel()
	for name, store := range cliStores(t) {
		for _, point := range []string{"before:cancel", "after:cancel"} {
			t.Run(name+"/"+point, func(t *testing.T) {
				t.Parallel()
				s := store(t)
				s.want(t, nil, 0, "demo-user", "start", "t1", "A3003", "--reason", "size")
				env := []string{"ASSISTANT_FAULT=" + point + "@pause"}
				args := []string{"resume", "t1", "--action", "cancel"}
				var c *exec.Cmd
				if s.dir == "" {
					c = s.pg.cmd(env, args...)
				} else {
					c = exec.Command(assistantBin(), withDefaults(args, "--data", s.dir, "--output", "json")...)
					c.Env = append(os.Environ(), env...)
				}
				var out bytes.Buffer
				c.Stdout = &out
				p := startPaused(t, c, point)
				_, errOut := s.want(t, nil, 3, "demo-user", "stop", "t1", "--wait", "0")
				if !strings.Contains(errOut, "too late: cancelled") {
					t.Errorf("stop: %q, want it to say it came too late, after the cancel", errOut)
				}
				if v, _ := s.want(t, nil, 0, "demo-user", "show", "t1"); v["status"] != "running" {
					t.Errorf("show after the refused stop: %v, want running (the stop wrote nothing)", v["status"])
				}
				if code := p.goOn(t); code != 0 || !strings.Contains(out.String(), `"status": "cancelled"`) {
					t.Fatalf("the cancel: exit %d, %s%s", code, out.String(), p.stderr)
				}
				if v, _ := s.want(t, nil, 0, "demo-user", "show", "t1"); v["status"] != "cancelled" {
					t.Errorf("show: %v, want cancelled", v["status"])
				}
				h, _ := s.want(t, nil, 0, "demo-user", "history", "t1")
				steps, _ := h["steps"].([]any)
				if last, _ := steps[len(steps)-1].(map[string]any); last["node"] != "cancel" || last["status"] != "done" {
					t.Errorf("last step %v, want cancel done", last)
				}
			})
		}
	}
}

// TestACancelAfterACommittedStopIsRefused: a cancel answered after a stop
// committed while the run's submit step was cut short is refused (exit 3,
// one clean line, nothing stored changed): while the stopped process still holds
// the task it names that process and offers resume for later; once it is
// gone, the task was already answered (the approval the stopped run
// carried stands in the trail, for resume). The task stays interrupted
// with no application either way (docs/recovery.md "Operator stop").
func TestACancelAfterACommittedStopIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
	p := stoppedMidStep(t, dir)
	for _, tc := range []struct {
		name string
		says string
		kill bool // the stopped process is killed first
	}{
		{"WhileItsProcessHoldsIt", "still holds it", false},
		{"OnceItsProcessIsGone", `already answered "approve"`, true},
	} {
		if tc.kill {
			if err := p.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			exitWithin(t, p.done, 30*time.Second)
		}
		// What is stored, not the files' bytes: the first process to open
		// a file a killed one left folds its WAL in.
		stored := func() string {
			return query(t, dir, "business.sqlite", `SELECT status || lease_epoch FROM tasks WHERE task_id = ?`, "v1") +
				query(t, dir, "business.sqlite", `SELECT group_concat(seq || status || ended_at || error) FROM steps WHERE task_id = ?`, "v1") +
				query(t, dir, "business.sqlite", `SELECT group_concat(action) FROM decisions WHERE task_id = ?`, "v1") +
				query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM checkpoints WHERE thread_id = ?`, "v1")
		}
		before := stored()
		_, errOut, code := run(t, dir, "resume", "v1", "--action", "cancel")
		if code != 3 || !strings.Contains(errOut, tc.says) || strings.Contains(errOut, "%!") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: cancel: exit %d, stderr %q; want exit 3, one line saying %q", tc.name, code, errOut, tc.says)
		}
		if after := stored(); after != before {
			t.Errorf("%s: a refused cancel changed what is stored:\n%s\nwas\n%s", tc.name, after, before)
		}
		if v := mustRun(t, dir, "show", "v1"); v["status"] != "interrupted" {
			t.Errorf("%s: show: %v, want interrupted", tc.name, v["status"])
		}
	}
	if n := applications(t, dir, "v1"); strings.TrimSpace(n) != "0" {
		t.Errorf("applications: %s, want 0", n)
	}
}
