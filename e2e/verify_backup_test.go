package e2e

// verify and backup (docs/storage.md "Verify", "Backup",
// "Pairing"): verify reports what the other commands refuse,
// with fixes that work as pasted; a backup taken while processes write
// verifies clean and restores.

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

// TestVerifyReportsWhatOthersRefuse: a data dir that show and start refuse
// (a file of the pair lost while the other holds runs or task records, two
// files of different data dirs) is an error finding of verify, exit 1,
// with its report on stdout; verify and the refused commands change no
// file. A file missing beside one that holds nothing stays a warning, and
// the other commands take that data dir.
func TestVerifyReportsWhatOthersRefuse(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	mustRun(t, src, "start", "a1", "A3001", "--reason", "too small")
	other := t.TempDir()
	mustRun(t, other, "start", "a1", "A3001", "--reason", "too small")
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, dir string)
		file  string // the error finding's file
		says  string
		warns bool // a warning only: verify exit 0, the others run
	}{
		{name: "BusinessLost", make: func(t *testing.T, dir string) { copyTo(t, src, dir, "checkpoints.sqlite") },
			file: "business.sqlite", says: "business.sqlite is missing or empty while checkpoints.sqlite holds 1 run(s)"},
		{name: "CheckpointsLost", make: func(t *testing.T, dir string) { copyTo(t, src, dir, "business.sqlite") },
			file: "checkpoints.sqlite", says: "checkpoints.sqlite is missing or empty while business.sqlite holds 1 task record(s)"},
		{name: "OtherDataDirs", make: func(t *testing.T, dir string) {
			copyTo(t, src, dir, "checkpoints.sqlite")
			copyTo(t, other, dir, "business.sqlite")
		}, file: "business.sqlite", says: "the files belong to different data dirs"},
		{name: "NothingLost", make: func(t *testing.T, dir string) {
			makeDataDir(t, dir) // orders only, no task
			if err := os.Remove(filepath.Join(dir, "checkpoints.sqlite")); err != nil {
				t.Fatal(err)
			}
		}, file: "checkpoints.sqlite", warns: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tc.make(t, dir)
			// Reading may make an empty -wal beside a file (docs/storage.md
			// "Refusals"); the files themselves must not change.
			before := sums(t, dir, "business.sqlite", "checkpoints.sqlite")
			if !tc.warns {
				for _, args := range [][]string{{"show", "a1"}, {"start", "a2", "A3002", "--reason", "x"}, {"list"}} {
					if _, errOut, code := run(t, dir, args...); code != 1 {
						t.Errorf("%v: exit %d, want 1 (the data dir is refused): %s", args, code, errOut)
					}
				}
			}
			rep, code, out := verify(t, dir)
			sameSums(t, dir, before, "verify or a refused command")
			if tc.warns {
				if code != 0 || !rep.Clean || len(rep.Findings) != 1 || rep.Findings[0].Severity != "warning" {
					t.Fatalf("verify: exit %d, want 0 and one warning:\n%s", code, out)
				}
				if _, errOut, code := run(t, dir, "show", "a1"); code != 4 {
					t.Errorf("show: exit %d, want 4 (no such task; the data dir is taken): %s", code, errOut)
				}
				return
			}
			if code != 1 || rep.Clean {
				t.Fatalf("verify: exit %d, clean %v; want 1, not clean:\n%s", code, rep.Clean, out)
			}
			found := false
			for _, f := range rep.Findings {
				found = found || f.Severity == "error" && f.File == tc.file && strings.Contains(f.Problem, tc.says)
			}
			if !found {
				t.Errorf("verify: no error finding of %s saying %q:\n%s", tc.file, tc.says, out)
			}
		})
	}
}

// fixCommandRE finds the commands a fix quotes.
var fixCommandRE = regexp.MustCompile("`(assistant [^`]*)`")

// TestVerifyFixesArePasteable: verify's fixes quote commands that run as
// pasted: with --data, and with --user naming the task's owner when verify
// runs as someone else.
func TestVerifyFixesArePasteable(t *testing.T) {
	t.Parallel()
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

// TestVerifyOffersNoAnswerForARecordedEnd: a task that ended failed at its
// sixth draft version (too many revisions), then an older
// checkpoints.sqlite put back, whose head asks about the fifth: verify says
// there is nothing to do (a recorded end) and offers no edit to carry out
// (it said both: the edit "stands").
func TestVerifyOffersNoAnswerForARecordedEnd(t *testing.T) {
	t.Parallel()
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

// TestRefusalHintsOfferWhatWorks: the hints of refusals offer commands that
// work: the inconsistent error names `backup DIR`, and stop of an
// inconsistent task offers verify; a stale --version of a task that ended
// too_many_revisions says it ended instead of naming a version to answer.
func TestRefusalHintsOfferWhatWorks(t *testing.T) {
	t.Parallel()
	t.Run("InconsistentNamesBackupDir", func(t *testing.T) {
		t.Parallel()
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
		t.Parallel()
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

// TestFilesOfTwoDataDirsAreRefused: files that do not belong together. A
// business.sqlite of another data dir is refused before anything is
// written, naming both identities; a -wal copied from another data dir is
// not merged.
func TestFilesOfTwoDataDirsAreRefused(t *testing.T) {
	t.Parallel()
	t.Run("BusinessFileOfAnotherDataDir", func(t *testing.T) {
		t.Parallel()
		dir, other := t.TempDir(), t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
		mustRun(t, other, "start", "t", "A3003", "--reason", "too small")
		copyTo(t, other, dir, "business.sqlite")
		ids := []string{query(t, dir, "checkpoints.sqlite", `SELECT id FROM data_dir`), query(t, other, "business.sqlite", `SELECT id FROM data_dir`)}
		files := sums(t, dir, "business.sqlite", "checkpoints.sqlite")
		for _, args := range [][]string{{"resume", "t", "--action", "approve"}, {"recover"}, {"show", "t"}, {"start", "u", "A3001", "--reason", "x"}} {
			wantRefused(t, dir, 1, "inconsistent", append([]string{"belong to different data dirs"}, ids...), args...)
		}
		sameSums(t, dir, files, "a refused command")
		rep, code, out := verify(t, dir)
		if code != 1 || rep.Clean || !strings.Contains(out, "the files belong to different data dirs") {
			t.Fatalf("verify: exit %d, want 1 naming the pairing:\n%s", code, out)
		}
	})

	t.Run("WALOfAnotherDataDir", func(t *testing.T) {
		t.Parallel()
		dir, other := t.TempDir(), t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
		// The other data dir's process is killed mid-run: its -wal holds
		// frames of its own business file.
		mustRun(t, other, "start", "o1", "A3004", "--reason", "wrong colour")
		killedAt(t, other, "after-checkpoint:prepare", "start", "o2", "A3001", "--reason", "broken")
		wal, err := os.ReadFile(filepath.Join(other, "business.sqlite-wal"))
		if err != nil || len(wal) == 0 {
			t.Fatalf("the killed process left no frames: %d bytes, %v", len(wal), err)
		}
		if err := os.WriteFile(filepath.Join(dir, "business.sqlite-wal"), wal, 0o600); err != nil {
			t.Fatal(err)
		}
		files := sums(t, dir, "business.sqlite", "business.sqlite-wal", "checkpoints.sqlite")
		wantRefused(t, dir, 1, "internal", []string{"business.sqlite-wal carries data dir", "not written for it", "move it aside"}, "show", "t")
		wantRefused(t, dir, 1, "internal", []string{"business.sqlite-wal carries data dir"}, "resume", "t", "--action", "approve")
		sameSums(t, dir, files, "a refused command")
		if _, code, _ := verify(t, dir); code != 1 {
			t.Fatalf("verify: exit %d, want 1", code)
		}
		// Moved aside, as the message says: the data dir is as it was.
		os.Remove(filepath.Join(dir, "business.sqlite-wal"))
		if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'o%'`); got != "0" {
			t.Fatalf("the other data dir's tasks were merged: %s", got)
		}
		if v := mustRun(t, dir, "show", "t"); v["status"] != "waiting" {
			t.Fatalf("show t: %v", v["status"])
		}
		verifyClean(t, dir)
		verifyClean(t, other)
	})
}

// TestBackupWhileProcessesRun: a backup taken while approvals and a
// batch write the data dir verifies clean, and restoring it makes a data
// dir that works. Restoring one file alone: an older business.sqlite makes
// the tasks newer than it inconsistent (refused until both are restored);
// an older checkpoints.sqlite rolls runs back, which the flow sets right
// against the business file.
func TestBackupWhileProcessesRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Orders of their own for the approvals: the batch's rows take the
	// teaching orders.
	shop := filepath.Join(t.TempDir(), "shop.csv")
	var orders strings.Builder
	orders.WriteString("order_id,user,item,delivered_at,final_sale\n")
	for i := range 6 {
		fmt.Fprintf(&orders, "K%d,demo-user,Kettle %d,%s,false\n", i, i, time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339))
	}
	if err := os.WriteFile(shop, []byte(orders.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "orders", "import", shop)
	for i := range 6 {
		mustRun(t, dir, "start", fmt.Sprintf("t%d", i), fmt.Sprintf("K%d", i), "--reason", "r")
	}
	batch := exec.Command(assistantBin(), "--data", dir, "batch", "b1", batchFile(t, dir, 1500), "--chunk", "10")
	if err := batch.Start(); err != nil {
		t.Fatal(err)
	}
	waitPosition(t, dir, "b1", 20, batch)
	var approvals []*exec.Cmd
	for i := range 4 {
		a := exec.Command(assistantBin(), "--data", dir, "resume", fmt.Sprintf("t%d", i), "--action", "approve")
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		approvals = append(approvals, a)
	}
	// Backups while the batch writes chunk after chunk and approvals
	// submit: each must verify clean.
	var backups []string
	for i := range 3 {
		b := filepath.Join(t.TempDir(), fmt.Sprintf("b%d", i))
		out, errOut, code := run(t, dir, "backup", b)
		if code != 0 {
			t.Fatalf("backup %d while processes run: exit %d\n%s%s", i, code, out, errOut)
		}
		var res struct{ Verify verifyReport }
		if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Verify.Clean {
			t.Fatalf("backup %d: %v, its copy does not verify clean:\n%s", i, err, out)
		}
		backups = append(backups, b)
	}
	if got := query(t, backups[0], "business.sqlite", `SELECT count(*) FROM tasks WHERE task_id LIKE 'row-%'`); atoi(got) < 20 {
		t.Fatalf("the first backup holds %s row tasks; it was not taken while the batch ran", got)
	}
	for _, p := range append(approvals, batch) {
		if err := p.Wait(); err != nil {
			t.Fatalf("%v: %v", p.Args, err)
		}
	}
	verifyClean(t, dir)
	wantRefused(t, dir, 2, "invalid_input", []string{"not empty"}, "backup", backups[0])

	restore := func(t *testing.T, names ...string) string {
		t.Helper()
		d := snapshotFiles(t, dir)
		copyTo(t, backups[0], d, names...)
		return d
	}
	t.Run("BothFiles", func(t *testing.T) {
		d := restore(t, "checkpoints.sqlite", "business.sqlite")
		verifyClean(t, d)
		mustRun(t, d, "recover") // the batch the backup caught running
		if v := mustRun(t, d, "show", "b1"); v["status"] != "done" {
			t.Fatalf("the restored batch after recover: %v, want done", v["status"])
		}
		if got := query(t, d, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id LIKE 'row-%'`); got != "1500" {
			t.Fatalf("%s row drafts, want one per row", got)
		}
		mustRun(t, d, "resume", "t4", "--action", "approve")
		verifyClean(t, d)
	})
	t.Run("OnlyBusiness", func(t *testing.T) {
		// t5 was approved after the backup: its application is missing.
		mustRun(t, dir, "resume", "t5", "--action", "approve")
		d := restore(t, "business.sqlite")
		rep, code, out := verify(t, d)
		if code != 1 || rep.Clean || !strings.Contains(out, `"task": "t5"`) {
			t.Fatalf("verify after restoring business.sqlite alone: exit %d, want 1 naming t5:\n%s", code, out)
		}
		wantRefused(t, d, 1, "inconsistent", []string{"task t5 is inconsistent"}, "show", "t5")
	})
	t.Run("OnlyCheckpoints", func(t *testing.T) {
		d := restore(t, "checkpoints.sqlite")
		verifyClean(t, d)
		// t5's application exists and its trail holds the approve that made
		// it: the task ended done, whatever the older checkpoints say, so a
		// cancel changes nothing and the approve again reports it.
		wantRefused(t, d, 3, "conflict", []string{"task t5 ended as done; the answer cancel changes nothing"}, "resume", "t5", "--action", "cancel")
		v := mustRun(t, d, "resume", "t5", "--action", "approve")
		if v["stage"] != "submitted" {
			t.Fatalf("approve again of a task submitted after the backup: stage %v, want submitted", v["stage"])
		}
		if got := query(t, d, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = 't5'`); got != "1" {
			t.Fatalf("t5 has %s applications, want 1", got)
		}
		mustRun(t, d, "recover")
		verifyClean(t, d)
	})
}

// TestVerifyJudgesARunThatEndsWhileReadAsItIsNow: verify reads the runs,
// then the task records. A holder that submits, lets go and exits in
// between (verify paused at verify:before-records) leaves a head read
// before its end and a record read after: verify looks again and finds
// nothing, on a run that starts (a task recorded whose run was not yet
// read) as on one that ends.
func TestVerifyJudgesARunThatEndsWhileReadAsItIsNow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// the holder, paused while verify reads the runs
		holder func(t *testing.T, dir string) proc
	}{
		{"approve", func(t *testing.T, dir string) proc {
			mustRun(t, dir, "start", "r1", "A3003", "--reason", "too small")
			return pausedAnswer(t, dir, "before:submit", "demo-user", "r1")
		}},
		{"start", func(t *testing.T, dir string) proc {
			mustRun(t, dir, "start", "r0", "A3004", "--reason", "too small") // the data dir made
			c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "start", "r1", "A3003", "--reason", "too small")
			c.Env = append(os.Environ(), "ASSISTANT_FAULT=start:after-record@pause")
			return startPaused(t, c, "start:after-record")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			holder := tc.holder(t, dir)
			verifier, out := viewPausedAt(t, dir, "verify:before-records", "verify")
			if code := holder.goOn(t); code != 0 {
				t.Fatalf("the holder: exit %d, %s", code, holder.stderr)
			}
			code := verifier.goOn(t)
			var rep struct {
				Clean    bool
				Findings []struct{ Severity, Task, Problem string }
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("verify: exit %d, stdout %q, stderr %q: %v", code, out.String(), verifier.stderr, err)
			}
			if code != 0 || !rep.Clean || len(rep.Findings) != 0 {
				t.Errorf("verify while its holder ended: exit %d, clean %v, findings %+v; want 0, clean, none", code, rep.Clean, rep.Findings)
			}
		})
	}
}

// TestVerifyOffersOnlyTheStandingAnswer (docs/recovery.md "The decision
// trail"): an edit killed after the trail's commit stands; verify's one
// fix for the task is to carry it out, never to answer the question
// another way (which is refused), and that fix works as pasted.
func TestVerifyOffersOnlyTheStandingAnswer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "e1", "A3003", "--reason", "too small")
	killedAt(t, dir, "answer:after-trail", "resume", "e1", "--action", "edit", "--reason", "better reason")
	rep, code, out := verify(t, dir)
	if code != 0 {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	var fixes []string
	for _, f := range rep.Findings {
		if f.Task == "e1" {
			fixes = append(fixes, f.Fix)
		}
	}
	if len(fixes) != 1 || !strings.Contains(fixes[0], "--action edit --reason 'better reason'") {
		t.Fatalf("verify's fixes for e1: %q; want the one that carries the standing edit out", fixes)
	}
	if v := mustRun(t, dir, "resume", "e1", "--action", "edit", "--reason", "better reason"); v["status"] != "waiting" {
		t.Errorf("the fix, pasted: %v; want the task waiting at version 2", v["status"])
	}
	verifyClean(t, dir)
}
