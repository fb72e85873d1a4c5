package e2e

// The business record is the truth, end to end (a tester's findings after
// issue 14): a checkpoints.sqlite older than business.sqlite, the state a
// power loss or a restore of one file leaves, never changes a status the
// business file records as ended and never submits for it; verify's fixes
// and the refusals' hints quote commands that work as pasted.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runAs runs the binary on dir as user, with json output; stdout, stderr
// and the exit code.
func runAs(tb testing.TB, dir, user string, args ...string) (string, string, int) {
	tb.Helper()
	return run(tb, dir, append([]string{"--user", user}, args...)...)
}

// recordOf is task's record in dir's business file, as "status/stage".
func recordOf(tb testing.TB, dir, task string) string {
	tb.Helper()
	return query(tb, dir, "business.sqlite", `SELECT status || '/' || stage FROM tasks WHERE task_id = ?`, task)
}

// wantConflictSays checks that args exit 3 and say each of says on stderr.
func wantConflictSays(tb testing.TB, dir string, says []string, args ...string) {
	tb.Helper()
	wantRefused(tb, dir, 3, "conflict", says, args...)
}

// olderCheckpoints is the tester's case: c1 cancelled and s1 submitted
// after a backup, then only checkpoints.sqlite put back from it (their
// runs wait for approval again). It returns the data dir and s1's
// application.
func olderCheckpoints(t *testing.T) (string, any) {
	t.Helper()
	dir := t.TempDir()
	mustRun(t, dir, "start", "c1", "A3001", "--reason", "size")
	mustRun(t, dir, "start", "s1", "A3002", "--reason", "size")
	bk := filepath.Join(t.TempDir(), "bk")
	mustRun(t, dir, "backup", bk)
	mustRun(t, dir, "resume", "c1", "--action", "cancel")
	done := mustRun(t, dir, "resume", "s1", "--action", "approve")
	copyTo(t, bk, dir, "checkpoints.sqlite")
	return dir, done["result"].(map[string]any)["application_id"]
}

// wantList checks list's status of each task named in want.
func wantList(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	var list struct {
		Tasks []struct{ Task, Status string }
	}
	out, _, _ := run(t, dir, "list")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, l := range list.Tasks {
		if w, ok := want[l.Task]; ok && l.Status != w {
			t.Errorf("list: %s %s, want %s", l.Task, l.Status, w)
		}
	}
}

// Every answer to the cancelled c1 is refused as on consistent files and
// submits nothing; the record stays cancelled; show, wait and list say so.
func TestTruth2OlderCheckpointsKeepCancelled(t *testing.T) {
	dir, _ := olderCheckpoints(t)
	for _, args := range [][]string{
		{"resume", "c1", "--action", "approve"},
		{"resume", "c1", "--action", "edit", "--reason", "other"},
		{"resume", "c1", "--action", "revise", "--comment", "x"},
	} {
		wantConflictSays(t, dir, []string{"task c1 ended as cancelled", "changes nothing"}, args...)
	}
	if n := appsOf(t, dir, "c1"); n != "0" {
		t.Errorf("c1: %s applications after the refused answers, want 0", n)
	}
	if v := mustRun(t, dir, "resume", "c1", "--action", "cancel"); v["status"] != "cancelled" {
		t.Errorf("cancel of c1 again: status %v, want cancelled", v["status"])
	}
	if v := mustRun(t, dir, "show", "c1"); v["status"] != "cancelled" || len(v["interrupts"].([]any)) != 0 {
		t.Errorf("show c1: status %v, interrupts %v; want cancelled, none", v["status"], v["interrupts"])
	}
	if _, _, code := run(t, dir, "wait", "c1"); code != 5 {
		t.Errorf("wait c1: exit %d, want 5 (cancelled)", code)
	}
	if rec := recordOf(t, dir, "c1"); rec != "cancelled/cancelled" {
		t.Errorf("record of c1: %s, want cancelled/cancelled (an ended status never changes)", rec)
	}
	wantList(t, dir, map[string]string{"c1": "cancelled"})
	verifyClean(t, dir)
}

// Every answer to the submitted s1 reports its application (recovery.md:
// the task's own application ends it submitted, whatever the answer);
// nothing marks it failed, and verify stays clean.
func TestTruth2OlderCheckpointsKeepSubmitted(t *testing.T) {
	dir, app := olderCheckpoints(t)
	for _, args := range [][]string{
		{"resume", "s1", "--action", "edit", "--reason", "other"},
		{"resume", "s1", "--action", "revise", "--comment", "x"},
		{"resume", "s1", "--reason", "newr"},
		{"resume", "s1", "--action", "cancel"},
		{"resume", "s1", "--action", "approve"},
		{"show", "s1"},
	} {
		v := mustRun(t, dir, args...)
		result, _ := v["result"].(map[string]any)
		if v["status"] != "done" || v["stage"] != "submitted" || result == nil || result["application_id"] != app || v["error"] != nil {
			t.Errorf("%s: status %v, stage %v, result %v, error %v; want done, submitted with %v", strings.Join(args, " "), v["status"], v["stage"], v["result"], v["error"], app)
		}
	}
	if n := appsOf(t, dir, "s1"); n != "1" {
		t.Errorf("s1: %s applications, want 1", n)
	}
	if rec := recordOf(t, dir, "s1"); rec != "done/submitted" {
		t.Errorf("record of s1: %s, want done/submitted", rec)
	}
	wantList(t, dir, map[string]string{"s1": "done"})
	verifyClean(t, dir)
}

// A power loss in a cancel: its trail entry and its checkpoint were
// written, the checkpoint and the release were lost (the process killed
// after the cancel's checkpoint, then the checkpoints file as it was
// before the cancel put back; business.sqlite and its -wal kept whole).
// The head asks for approval again, but the trail says cancelled: an
// approve is refused and submits nothing.
func TestTruth2CancelLostByPowerLoss(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
	before := snapshotFiles(t, dir)
	killedAt(t, dir, "after-checkpoint:cancel", "resume", "t", "--action", "cancel")
	copyTo(t, before, dir, "checkpoints.sqlite")

	wantConflictSays(t, dir, []string{"task t ended as cancelled"}, "resume", "t", "--action", "approve")
	if n := appsOf(t, dir, "t"); n != "0" {
		t.Fatalf("%s applications after an approve of a cancelled task, want 0", n)
	}
	if v := mustRun(t, dir, "show", "t"); v["status"] != "cancelled" {
		t.Errorf("show t: status %v, want cancelled", v["status"])
	}
	if _, _, code := run(t, dir, "wait", "t"); code != 5 {
		t.Errorf("wait t: exit %d, want 5 (cancelled)", code)
	}
	wantList(t, dir, map[string]string{"t": "cancelled"}) // the record says running, its holder gone
	if v := mustRun(t, dir, "resume", "t"); v["status"] != "cancelled" {
		t.Errorf("resume t: status %v, want cancelled", v["status"])
	}
	if rec := recordOf(t, dir, "t"); rec != "cancelled/cancelled" {
		t.Errorf("record %s, want cancelled/cancelled", rec)
	}
	verifyClean(t, dir)
}

// A task whose record ended failed (its draft expired: the approve ran
// with the clock an hour ahead) beside its older run, which waits for
// approval: an edit would make a new draft and wait again; it is refused
// and the record stays failed. The approve that ended it, given again,
// reports that end (exit 0, draft_expired), as with the files in step.
func TestTruth2FailedRecordIsNotReopened(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
	before := snapshotFiles(t, dir)
	out, code, _ := faultRun(t, dir, "clock:+1h", []string{"resume", "t", "--action", "approve"})
	if code != 0 || !strings.Contains(out, "draft_expired") {
		t.Fatalf("approve an hour later: exit %d, want 0 with draft_expired\n%s", code, out)
	}
	copyTo(t, before, dir, "checkpoints.sqlite")

	wantConflictSays(t, dir, []string{"task t ended as failed"}, "resume", "t", "--action", "edit", "--reason", "other")
	if v := mustRun(t, dir, "resume", "t", "--action", "approve"); v["status"] != "failed" || !strings.Contains(fmt.Sprint(v["error"]), "draft_expired") {
		t.Errorf("the same approve again: status %v, error %v; want failed, draft_expired", v["status"], v["error"])
	}
	wantConflictSays(t, dir, []string{"task t ended as failed"}, "resume", "t", "--action", "cancel")
	if v := mustRun(t, dir, "show", "t"); v["status"] != "failed" || v["error"] == nil {
		t.Errorf("show t: status %v, error %v; want failed with an error", v["status"], v["error"])
	}
	if rec := recordOf(t, dir, "t"); rec != "failed/failed" {
		t.Errorf("record %s, want failed/failed", rec)
	}
	if n := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id = 't'`); n != "1" {
		t.Errorf("%s drafts, want 1 (no new version)", n)
	}
	verifyClean(t, dir)
}

// A checkpoints.sqlite older than the task (no run of it at all) beside a
// record that ended cancelled: show says cancelled, and neither resume nor
// start runs the task again.
func TestTruth2OlderCheckpointsThanTheTask(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "other", "A3001", "--reason", "size")
	before := snapshotFiles(t, dir)
	mustRun(t, dir, "start", "c1", "A3003", "--reason", "size")
	mustRun(t, dir, "resume", "c1", "--action", "cancel")
	copyTo(t, before, dir, "checkpoints.sqlite")

	for _, args := range [][]string{{"show", "c1"}, {"resume", "c1"}, {"start", "c1", "A3003", "--reason", "size"}} {
		if v := mustRun(t, dir, args...); v["status"] != "cancelled" {
			t.Errorf("%s: status %v, want cancelled", strings.Join(args, " "), v["status"])
		}
	}
	wantConflictSays(t, dir, []string{"task c1 ended as cancelled"}, "resume", "c1", "--action", "approve")
	if rec := recordOf(t, dir, "c1"); rec != "cancelled/cancelled" {
		t.Errorf("record %s, want cancelled/cancelled", rec)
	}
	verifyClean(t, dir)
}

// fixCommandRE finds the commands a fix quotes.
var fixCommandRE = regexp.MustCompile("`(assistant [^`]*)`")

// verify's fixes quote commands that run as pasted: with --data, and with
// --user naming the task's owner when verify runs as someone else.
func TestTruth2VerifyFixesArePasteable(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "t1", "A3001", "--reason", "size")
	bk := filepath.Join(t.TempDir(), "bk")
	mustRun(t, dir, "backup", bk)
	mustRun(t, dir, "resume", "t1", "--action", "cancel")
	copyTo(t, bk, dir, "checkpoints.sqlite") // t1: record cancelled, run waiting
	mustRun(t, dir, "start", "t3", "A3003", "--reason", "size")
	killedAt(t, dir, "after-checkpoint:cancel", "resume", "t3", "--action", "cancel") // t3: record behind its run

	// Both reports first: a pasted resume sets t3's record right.
	reports := map[string]verifyReport{}
	for _, user := range []string{"demo-user", "bob"} {
		out, errOut, code := runAs(t, dir, user, "verify")
		var rep verifyReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("verify as %s: exit %d, %v\n%s%s", user, code, err, out, errOut)
		}
		reports[user] = rep
	}
	for user, rep := range reports {
		seen := map[string]bool{}
		for _, f := range rep.Findings {
			for _, m := range fixCommandRE.FindAllStringSubmatch(f.Fix, -1) {
				words := strings.Fields(m[1])
				if len(words) < 3 || words[1] != "--data" || words[2] != dir {
					t.Errorf("verify as %s: fix of %s quotes %q, without --data %s", user, f.Task, m[1], dir)
					continue
				}
				if hasUser := strings.Contains(m[1], " --user demo-user "); hasUser != (user != "demo-user") {
					t.Errorf("verify as %s: fix of %s quotes %q: --user demo-user %v, want %v", user, f.Task, m[1], hasUser, user != "demo-user")
				}
				if strings.Contains(m[1], "DIR") {
					continue // backup DIR: the person names the directory
				}
				c := exec.Command(assistantBin(), append(words[1:], "--output", "json")...)
				if b, err := c.CombinedOutput(); err != nil {
					t.Errorf("verify as %s: the fix of %s, %s, fails as pasted: %v\n%s", user, f.Task, m[1], err, b)
				}
				seen[f.Task] = true
			}
		}
		if !seen["t1"] || !seen["t3"] {
			t.Errorf("verify as %s: pasted fixes for %v, want t1 and t3: %+v", user, seen, rep.Findings)
		}
	}
	verifyClean(t, dir)
}

// The hints of refusals offer commands that work: the inconsistent error
// names `backup DIR`, and stop of an inconsistent task offers verify; a stale --version of a task that ended
// too_many_revisions says it ended instead of naming a version to answer.
func TestTruth2HintsOfferWhatWorks(t *testing.T) {
	t.Run("InconsistentNamesBackupDir", func(t *testing.T) {
		dir := t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
		older := snapshotFiles(t, dir)
		mustRun(t, dir, "resume", "t", "--action", "approve")
		copyTo(t, older, dir, "business.sqlite")
		wantRefused(t, dir, 1, "inconsistent", []string{"`assistant --data " + dir + " backup DIR`"}, "show", "t")
		// stop of it offers verify, not show (which exits 1 on it).
		_, errOut, code := run(t, dir, "stop", "t")
		if code != 3 || !strings.Contains(errOut, "`assistant --data "+dir+" verify`") || strings.Contains(errOut, " show t") {
			t.Errorf("stop of an inconsistent task: exit %d, %s; want 3 offering verify, not show", code, errOut)
		}
	})
	t.Run("StaleVersionOfAnEndedTask", func(t *testing.T) {
		dir := t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
		var v map[string]any
		for i := 0; i < 5; i++ {
			v = mustRun(t, dir, "resume", "t", "--action", "edit", "--reason", "reason "+string(rune('a'+i)))
		}
		if e, _ := v["error"].(map[string]any); v["status"] != "failed" || e["code"] != "too_many_revisions" {
			t.Fatalf("fifth edit: status %v, error %v; want failed, too_many_revisions", v["status"], v["error"])
		}
		_, errOut, code := run(t, dir, "resume", "t", "--action", "approve", "--version", "3")
		if code != 3 || !strings.Contains(errOut, "ended as failed (too_many_revisions)") || strings.Contains(errOut, "answer version") {
			t.Errorf("stale --version 3 of an ended task: exit %d, %s; want 3 saying it ended, offering no version to answer", code, errOut)
		}
	})
}

// An edit whose checkpoints were lost (the checkpoints file from before it
// put back): the trail holds it, the head asks about version 1 again. An
// approve of version 1 is refused; the same edit again carries it out,
// recorded once, and goes on to version 2.
func TestTruth2EditLostWithItsCheckpoints(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
	bk := filepath.Join(t.TempDir(), "bk")
	mustRun(t, dir, "backup", bk)
	mustRun(t, dir, "resume", "t", "--action", "edit", "--reason", "other")
	copyTo(t, bk, dir, "checkpoints.sqlite")

	wantConflictSays(t, dir, []string{"task t was answered edit already", "only it carries the task on: `assistant --data " + dir + " resume t --action edit --reason other`"}, "resume", "t", "--action", "approve")
	wantConflictSays(t, dir, []string{"task t was answered edit already"}, "resume", "t", "--action", "edit", "--reason", "another")
	if n := appsOf(t, dir, "t"); n != "0" {
		t.Fatalf("%s applications after the refused approve, want 0", n)
	}
	v := mustRun(t, dir, "resume", "t", "--action", "edit", "--reason", "other")
	draft, _ := v["draft"].(map[string]any)
	if v["status"] != "waiting" || draft == nil || draft["version"] != float64(2) || len(v["decisions"].([]any)) != 1 {
		t.Errorf("the edit again: status %v, draft %v, decisions %v; want waiting at version 2, the edit recorded once", v["status"], v["draft"], v["decisions"])
	}
	verifyClean(t, dir)
}

// An edit, revise or reason the decision trail holds whose checkpoint was
// lost (tester BRK6): show offers exactly that answer's command (the text
// card's one Next, the JSON's stands), list and show agree on the stage
// (the question the head asks), every other answer is refused naming that
// command, verify warns with it as the fix (exit 0), and giving it carries
// the task on.
func TestTruth2LostAnswerStands(t *testing.T) {
	for _, tc := range []struct {
		name, stage   string
		start, answer []string
		next          string // the card's Next after --data DIR
		other         []string
	}{
		{"revise", "draft_ready", []string{"--reason", "too big"}, []string{"--action", "revise", "--comment", "why"},
			"resume t --action revise --comment why", []string{"--action", "edit", "--reason", "smaller please"}},
		{"edit", "draft_ready", []string{"--reason", "too big"}, []string{"--action", "edit", "--reason", "smaller please"},
			"resume t --action edit --reason 'smaller please'", []string{"--action", "revise", "--comment", "why"}},
		{"reason", "need_reason", nil, []string{"--reason", "it broke"},
			"resume t --reason 'it broke'", []string{"--reason", "another"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mustRun(t, dir, append([]string{"start", "t", "A3001"}, tc.start...)...)
			bk := filepath.Join(t.TempDir(), "bk")
			mustRun(t, dir, "backup", bk)
			mustRun(t, dir, append([]string{"resume", "t"}, tc.answer...)...)
			copyTo(t, bk, dir, "checkpoints.sqlite")
			cmd := "assistant --data " + dir + " " + tc.next

			card, errOut, code := run(t, dir, "show", "t", "--output", "text")
			if code != 0 || strings.Count(card, "Next:") != 1 || strings.Contains(card, "or:") || !strings.Contains(card, "Next:     "+cmd+"   (") {
				t.Errorf("show's card (exit %d) offers other than %q:\n%s%s", code, cmd, card, errOut)
			}
			v := mustRun(t, dir, "show", "t")
			stands, _ := v["stands"].(map[string]any)
			if stands == nil || stands["action"] != tc.name || v["stage"] != tc.stage {
				t.Errorf("show: stage %v, stands %v; want stage %s, stands %s", v["stage"], v["stands"], tc.stage, tc.name)
			}
			var list struct{ Tasks []struct{ Stage string } }
			out, _, _ := run(t, dir, "list")
			if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tasks) != 1 || list.Tasks[0].Stage != tc.stage {
				t.Errorf("list: %s; want stage %s as show says", out, tc.stage)
			}

			wantConflictSays(t, dir, []string{"answered " + tc.name + " already", "only it carries the task on: `" + cmd + "`"}, append([]string{"resume", "t"}, tc.other...)...)

			rep, code, vout := verify(t, dir)
			found := false
			for _, f := range rep.Findings {
				found = found || (f.Severity == "warning" && f.Task == "t" && strings.Contains(f.Fix, "`"+cmd+"`"))
			}
			if code != 0 || !rep.Clean || !found {
				t.Errorf("verify: exit %d, clean %v, no warning with the fix %q:\n%s", code, rep.Clean, cmd, vout)
			}

			mustRun(t, dir, append([]string{"resume", "t"}, tc.answer...)...)
			rep, _, vout = verify(t, dir)
			if !rep.Clean || len(rep.Findings) != 0 {
				t.Errorf("verify after the answer carried out: %s", vout)
			}
		})
	}
}

// A submit whose business commit lands and whose checkpoint never does,
// attempt after attempt (killed at submit:after-business-commit each
// time), until the attempts run out: the task holds its application, so
// the guard stop ends it submitted with it, reused, not failed
// attempts_exhausted (docs/cli.md "A recorded end": nothing marks such a
// task failed). Both ways the attempts run out: --max-attempts 1 after one
// kill, and the default 5 after five.
func TestTruth2GiveUpWithApplicationEndsSubmitted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kills int
		flags []string
	}{
		{"max-attempts 1", 1, []string{"--max-attempts", "1"}},
		{"default attempts", 5, nil},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
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

// A task that ended failed keeps why in its business record (schema 9):
// when the checkpoint that said why is lost, the task is reported with
// its own failure (draft_expired here), not recorded_end, and the same
// answer again is what it is with the files in step: the end reported
// again, exit 0 (it was exit 3, "ended as failed (recorded_end)"). Two
// ways to lose it: a decide chunk killed between its business and its
// checkpoint commits, and an older checkpoints.sqlite put back.
func TestTruth2FailedRecordKeepsWhy(t *testing.T) {
	wantWhy := func(t *testing.T, dir, task string) {
		t.Helper()
		v := mustRun(t, dir, "show", task)
		e, _ := v["error"].(map[string]any)
		if v["status"] != "failed" || e == nil || e["code"] != "draft_expired" || !strings.Contains(fmt.Sprint(e["message"]), "expired at") {
			t.Fatalf("show %s: %v, error %v; want failed, draft_expired", task, v["status"], v["error"])
		}
		again := mustRun(t, dir, "resume", task, "--action", "approve")
		if e, _ := again["error"].(map[string]any); again["status"] != "failed" || e == nil || e["code"] != "draft_expired" {
			t.Fatalf("the same approve again: %v, error %v; want failed, draft_expired, exit 0", again["status"], again["error"])
		}
		if _, _, code := run(t, dir, "resume", task, "--action", "cancel"); code != 3 {
			t.Fatalf("cancel: exit %d, want 3 (ended failed)", code)
		}
		if n := appsOf(t, dir, task); n != "0" {
			t.Fatalf("%s has %s applications, want 0", task, n)
		}
	}
	t.Run("DecideKilledBetweenCommits", func(t *testing.T) {
		dir := t.TempDir()
		mustRun(t, dir, "batch", "parked", batchFile(t, dir, 3), "--draft-ttl", "1s")
		time.Sleep(1100 * time.Millisecond)
		file := "task,action\nrow-0000,approve\nrow-0001,approve\nrow-0002,approve\n"
		path := filepath.Join(t.TempDir(), "dec.csv")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		killedAt(t, dir, "decide:between-commits", "decide", path)
		rep, stderr, code := decide(t, dir, "", nil, path)
		if code != 0 || rep.Batch.Counts["failed"] != 3 {
			t.Fatalf("decide again: exit %d, counts %v, %s; want 3 failed", code, rep.Batch.Counts, stderr)
		}
		for _, r := range rep.Rows {
			if r.Outcome != "failed" || r.ErrorCode != "draft_expired" {
				t.Errorf("line %d (%s): %s, %s; want failed, draft_expired", r.Line, r.Task, r.Outcome, r.ErrorCode)
			}
		}
		wantWhy(t, dir, "row-0001")
		verifyClean(t, dir)
	})
	t.Run("OlderCheckpointsPutBack", func(t *testing.T) {
		dir := t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "size", "--draft-ttl", "1s")
		older := snapshotFiles(t, dir)
		time.Sleep(1100 * time.Millisecond)
		if v := mustRun(t, dir, "resume", "t", "--action", "approve"); v["status"] != "failed" {
			t.Fatalf("approve of an expired draft: %v, want failed", v["status"])
		}
		copyTo(t, older, dir, "checkpoints.sqlite")
		wantWhy(t, dir, "t")
	})
	t.Run("NoRunAtAll", func(t *testing.T) {
		// The checkpoint file put back is older than the task: it holds
		// no run of it (truth makes a head of the record).
		dir := t.TempDir()
		mustRun(t, dir, "start", "t0", "A3001", "--reason", "size")
		older := snapshotFiles(t, dir)
		mustRun(t, dir, "start", "t", "A3003", "--reason", "size", "--draft-ttl", "1s")
		time.Sleep(1100 * time.Millisecond)
		mustRun(t, dir, "resume", "t", "--action", "approve")
		copyTo(t, older, dir, "checkpoints.sqlite")
		wantWhy(t, dir, "t")
	})
}

// A task that ended failed at its sixth draft version (too many
// revisions), then an older checkpoints.sqlite put back, whose head asks
// about the fifth: verify says there is nothing to do (a recorded end)
// and offers no edit to carry out (it said both: the edit "stands").
func TestTruth2VerifyRecordedEndHasNoStandingAnswer(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
	for i := 2; i <= 5; i++ {
		mustRun(t, dir, "resume", "t", "--action", "edit", "--reason", fmt.Sprintf("r%d", i))
	}
	older := snapshotFiles(t, dir)
	if v := mustRun(t, dir, "resume", "t", "--action", "edit", "--reason", "r6"); v["status"] != "failed" {
		t.Fatalf("sixth version: %v, want failed (too_many_revisions)", v["status"])
	}
	copyTo(t, older, dir, "checkpoints.sqlite")
	rep, code, out := verify(t, dir)
	if code != 0 {
		t.Fatalf("verify: exit %d, want 0 (warnings only)\n%s", code, out)
	}
	for _, f := range rep.Findings {
		if strings.Contains(f.Fix, "stands") || strings.Contains(f.Fix, "--action edit") {
			t.Errorf("verify offers an answer to carry out for a task that ended: %+v", f)
		}
	}
	if len(rep.Findings) == 0 {
		t.Errorf("verify found nothing, want the recorded end's warning\n%s", out)
	}
}
