package e2e

// When the two files disagree (docs/recovery.md "When the two files
// disagree"; docs/storage.md "The business file is the truth"): a
// checkpoints.sqlite older than business.sqlite, or the other way round,
// as a power loss or a restore of one file leaves them, never changes a
// status the business file records as ended and never submits twice.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wantConflictSays checks that args exit 3 and say each of says on stderr.
func wantConflictSays(tb testing.TB, dir string, says []string, args ...string) {
	tb.Helper()
	wantRefused(tb, dir, 3, "conflict", says, args...)
}

// olderCheckpoints makes the case: c1 cancelled and s1 submitted
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

// TestCancelAfterALostSubmitCheckpointEndsSubmitted: an approval's
// application commits, then a power loss takes the checkpoints after the
// last sync (here: the checkpoint file as it was before the approval is put
// back). The approve the trail holds made the application and ended the
// task: a cancel is refused as on a task that ended done (exit 3), never
// cancels it with the application pending, and the approve again reports
// the application, reused.
func TestCancelAfterALostSubmitCheckpointEndsSubmitted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
	before := snapshotFiles(t, dir)
	killedAt(t, dir, "submit:after-business-commit", "resume", "t", "--action", "approve")
	if appsOf(t, dir, "t") != "1" {
		t.Fatal("the application did not commit before the kill")
	}
	copyTo(t, before, dir, "checkpoints.sqlite") // the unsynced checkpoints are lost

	wantConflictSays(t, dir, []string{"task t ended as done"}, "resume", "t", "--action", "cancel")
	v := mustRun(t, dir, "resume", "t", "--action", "approve")
	result, _ := v["result"].(map[string]any)
	if v["stage"] != "submitted" || v["status"] != "done" || result == nil || result["reused"] != true {
		t.Fatalf("approve after a lost submit: status %v, stage %v, result %v; want done, submitted, reused", v["status"], v["stage"], v["result"])
	}
	if n := appsOf(t, dir, "t"); n != "1" {
		t.Fatalf("%s applications, want 1", n)
	}
	if rec := query(t, dir, "business.sqlite", `SELECT status || '/' || stage FROM tasks WHERE task_id = 't'`); rec != "done/submitted" {
		t.Fatalf("record %s, want done/submitted", rec)
	}
	verifyClean(t, dir)
}

// TestOlderCheckpointsFileFindsTheApplication: an older checkpoints.sqlite
// (restored) beside the business file. A submitted task's cancel is
// refused (it ended done) and show reports it submitted; starting it again
// finds its application instead of failing it with open_application.
func TestOlderCheckpointsFileFindsTheApplication(t *testing.T) {
	t.Parallel()
	t.Run("CancelAfterSubmit", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
		older := snapshotFiles(t, dir)
		done := mustRun(t, dir, "resume", "t", "--action", "approve")
		copyTo(t, older, dir, "checkpoints.sqlite")
		wantConflictSays(t, dir, []string{"task t ended as done"}, "resume", "t", "--action", "cancel")
		v := mustRun(t, dir, "show", "t")
		if v["stage"] != "submitted" || v["result"].(map[string]any)["application_id"] != done["result"].(map[string]any)["application_id"] {
			t.Fatalf("show with an older checkpoint file: stage %v, result %v; want submitted with %v", v["stage"], v["result"], done["result"])
		}
		if n := appsOf(t, dir, "t"); n != "1" {
			t.Fatalf("%s applications, want 1", n)
		}
		verifyClean(t, dir)
	})

	t.Run("StartAgainAfterSubmit", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "other", "A3001", "--reason", "broken")
		older := snapshotFiles(t, dir) // before t existed
		mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
		done := mustRun(t, dir, "resume", "t", "--action", "approve")
		copyTo(t, older, dir, "checkpoints.sqlite")
		v := mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
		result, _ := v["result"].(map[string]any)
		if v["status"] != "done" || v["stage"] != "submitted" || result == nil ||
			result["application_id"] != done["result"].(map[string]any)["application_id"] || result["reused"] != true {
			t.Fatalf("start again: status %v, stage %v, error %v, result %v; want done, submitted with the application, reused",
				v["status"], v["stage"], v["error"], v["result"])
		}
		if n := appsOf(t, dir, "t"); n != "1" {
			t.Fatalf("%s applications, want 1", n)
		}
		verifyClean(t, dir)
	})
}

// TestOlderBusinessFileIsInconsistent: an older business.sqlite (restored,
// or its -wal deleted after a crash). The checkpoint reports an application
// the business file lacks: show and approve refuse with inconsistent,
// nothing is written, the task record is not rewritten to done, the order
// is not returnable, verify names the task; restoring both files from one
// backup sets it right.
func TestOlderBusinessFileIsInconsistent(t *testing.T) {
	t.Parallel()
	// The hints carry --data, which these runs give (docs/cli.md "Conventions").
	says := []string{"task t is inconsistent", "checkpoints.sqlite says it was submitted as application app_", "business.sqlite has no application", "`assistant --data ", " verify`", " backup DIR`"}
	t.Run("Restored", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
		backup := filepath.Join(t.TempDir(), "backup")
		mustRun(t, dir, "backup", backup)
		older := snapshotFiles(t, dir)
		mustRun(t, dir, "resume", "t", "--action", "approve")
		copyTo(t, older, dir, "business.sqlite")

		files := sums(t, dir, "business.sqlite", "checkpoints.sqlite")
		wantRefused(t, dir, 1, "inconsistent", says, "show", "t")
		wantRefused(t, dir, 1, "inconsistent", says, "resume", "t", "--action", "approve")
		wantRefused(t, dir, 1, "inconsistent", says, "resume", "t")
		sameSums(t, dir, files, "a refused command")
		if rec := query(t, dir, "business.sqlite", `SELECT status FROM tasks WHERE task_id = 't'`); rec != "waiting" {
			t.Fatalf("record %s, want waiting (never rewritten to done)", rec)
		}
		var orders struct{ Orders []map[string]any }
		out, _, _ := run(t, dir, "orders", "list")
		if err := json.Unmarshal([]byte(out), &orders); err != nil {
			t.Fatal(err)
		}
		for _, o := range orders.Orders {
			if o["order_id"] == "A3003" && o["not_returnable_because"] != "inconsistent" {
				t.Fatalf("orders list: A3003 %v, want not returnable: inconsistent", o["not_returnable_because"])
			}
		}
		rep, code, out := verify(t, dir)
		if code != 1 || rep.Clean || len(rep.Findings) == 0 || rep.Findings[0].Task != "t" {
			t.Fatalf("verify: exit %d, want 1 with task t's finding:\n%s", code, out)
		}
		// Restoring both files from one backup sets it right.
		copyTo(t, backup, dir, "checkpoints.sqlite", "business.sqlite")
		verifyClean(t, dir)
		if v := mustRun(t, dir, "show", "t"); v["status"] != "waiting" {
			t.Fatalf("after the restore: %v, want waiting", v["status"])
		}
	})

	t.Run("WALDeletedAfterACrash", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
		// Killed after the final checkpoint: the application is durable, in
		// the business file's -wal, which is then deleted.
		killedAt(t, dir, "after-checkpoint:submit", "resume", "t", "--action", "approve")
		for _, f := range []string{"business.sqlite-wal", "business.sqlite-shm"} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		wantRefused(t, dir, 1, "inconsistent", says, "show", "t")
		wantRefused(t, dir, 1, "inconsistent", says, "resume", "t", "--action", "approve")
		if _, code, _ := verify(t, dir); code != 1 {
			t.Fatalf("verify: exit %d, want 1", code)
		}
	})
}

// TestOlderCheckpointsKeepACancelledTaskCancelled: every answer to the
// cancelled c1 is refused as on consistent files and submits nothing; the
// record stays cancelled; show, wait and list say so.
func TestOlderCheckpointsKeepACancelledTaskCancelled(t *testing.T) {
	t.Parallel()
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

// TestOlderCheckpointsKeepASubmittedTaskSubmitted: s1 was approved and
// submitted; its older checkpoints still ask for approval. The approve the
// trail holds made the application and ended the task (recovery.md: the
// task's application, the decision trail): that approve again and show
// report the application; every other answer is refused as on a task
// that ended done with the files in step (exit 3), and changes nothing.
// Nothing marks it failed, and verify stays clean.
func TestOlderCheckpointsKeepASubmittedTaskSubmitted(t *testing.T) {
	t.Parallel()
	dir, app := olderCheckpoints(t)
	for _, args := range [][]string{
		{"resume", "s1", "--action", "edit", "--reason", "other"},
		{"resume", "s1", "--action", "revise", "--comment", "x"},
		{"resume", "s1", "--reason", "newr"},
		{"resume", "s1", "--action", "cancel"},
	} {
		wantConflictSays(t, dir, []string{"task s1 ended as done"}, args...)
	}
	for _, args := range [][]string{
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

// TestCancelLostByAPowerLossStands: a power loss in a cancel: its trail
// entry and its checkpoint were written, the checkpoint and the release
// were lost (the process killed after the cancel's checkpoint, then the
// checkpoints file as it was before the cancel put back; business.sqlite
// and its -wal kept whole). The head asks for approval again, but the trail
// says cancelled: an approve is refused and submits nothing.
func TestCancelLostByAPowerLossStands(t *testing.T) {
	t.Parallel()
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

// TestFailedRecordIsNotReopened: a task whose record ended failed (its
// draft expired: the approve ran with the clock an hour ahead) beside its
// older run, which waits for approval: an edit would make a new draft and
// wait again; it is refused and the record stays failed. The approve that
// ended it, given again, reports that end (exit 0, draft_expired), as with
// the files in step.
func TestFailedRecordIsNotReopened(t *testing.T) {
	t.Parallel()
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

// TestCheckpointsOlderThanTheTaskKeepItsEnd: a checkpoints.sqlite older
// than the task (no run of it at all) beside a record that ended cancelled:
// show says cancelled, and neither resume nor start runs the task again.
func TestCheckpointsOlderThanTheTaskKeepItsEnd(t *testing.T) {
	t.Parallel()
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

// TestEditLostWithItsCheckpointsIsCarriedOutOnce: an edit whose checkpoints
// were lost (the checkpoints file from before it put back): the trail holds
// it, the head asks about version 1 again. An approve of version 1 is
// refused; the same edit again carries it out, recorded once, and goes on
// to version 2.
func TestEditLostWithItsCheckpointsIsCarriedOutOnce(t *testing.T) {
	t.Parallel()
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

// TestLostAnswerStands: an edit, revise or reason the decision trail holds
// whose checkpoint was lost: show offers exactly that answer's command (the
// text card's one Next, the JSON's stands), list and show agree on the
// stage (the question the head asks), every other answer is refused naming
// that command, verify warns with it as the fix (exit 0), and giving it
// carries the task on.
func TestLostAnswerStands(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
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

// TestFailedRecordKeepsWhy: a task that ended failed keeps why in its
// business record (schema 9): when the checkpoint that said why is lost,
// the task is reported with its own failure (draft_expired here), not
// recorded_end, and the same answer again is what it is with the files in
// step: the end reported again, exit 0, not a conflict over a recorded end.
// Two ways to lose it: a decide chunk killed between its business and its
// checkpoint commits, and an older checkpoints.sqlite put back.
func TestFailedRecordKeepsWhy(t *testing.T) {
	t.Parallel()
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
		t.Parallel()
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
		t.Parallel()
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
		t.Parallel()
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

// TestDecideInconsistentTaskIsARowRefusal: a task whose two files
// disagree (an older business.sqlite restored under a checkpoint that
// says submitted) is one row's refusal, code inconsistent, with resume's
// message; it does not end the run (it ended it with exit 1, left running
// at position 0, the other rows' outcomes unreported). The task is left
// as it was, the other rows are decided once, and the row's code is the
// one resume exits with for the same answer (1).
func TestDecideInconsistentTaskIsARowRefusal(t *testing.T) {
	t.Parallel()
	for _, chunk := range []string{"100", "1"} {
		t.Run("chunk"+chunk, func(t *testing.T) {
			t.Parallel()
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
// no record of it, r4's submitted while its record waits. Each row is
// inconsistent, with start's message; the other rows run, the batch ends
// done.
func TestBatchInconsistentTaskIsARowRefusal(t *testing.T) {
	t.Parallel()
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
