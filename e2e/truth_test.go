package e2e

// Two files, one truth (issue 14), end to end: each of the seven
// cases in separate processes of the built binary, the pairing, backup and
// restore, and verifyClean, which every end-to-end test calls on the data
// dirs it leaves.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"assistant/internal/testkit"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["verifyclean"] = cmdVerifyClean
	scriptCmds["paired"] = cmdPaired
}

// verifyReport is the JSON of `assistant verify` (docs/cli.md "verify").
type verifyReport struct {
	Clean bool `json:"clean"`
	Files []struct {
		File      string  `json:"file"`
		DataDirID *string `json:"data_dir_id"`
		Integrity string  `json:"integrity"`
	} `json:"files"`
	Findings []struct {
		Severity, Task, File, Problem, Fix string
	} `json:"findings"`
}

// verify runs `assistant verify` on dir and returns its report and exit
// code.
func verify(tb testing.TB, dir string) (verifyReport, int, string) {
	tb.Helper()
	out, errOut, code := run(tb, dir, "verify")
	var rep verifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		tb.Fatalf("verify %s: exit %d, stdout is not its report: %v\n%s%s", dir, code, err, out, errOut)
	}
	return rep, code, out + errOut
}

// verifyClean fails the test unless `assistant verify` finds no error in
// the data dir dir: every data dir an end-to-end test leaves must verify
// clean (docs/recovery.md "Verification points"). Warnings (states the flow sets
// right by itself) are logged.
func verifyClean(tb testing.TB, dir string) {
	tb.Helper()
	rep, code, out := verify(tb, dir)
	if code != 0 || !rep.Clean {
		tb.Errorf("verify %s: exit %d, not clean:\n%s", dir, code, out)
		return
	}
	for _, f := range rep.Findings {
		tb.Logf("verify %s: %s %s%s: %s", dir, f.Severity, f.Task, f.File, f.Problem)
	}
}

// verifyclean DIR: `assistant --data DIR verify` finds no error.
func cmdVerifyClean(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: verifyclean DIR")
	}
	c := exec.Command(assistantBin(), "--data", ts.MkAbs(args[0]), "--output", "json", "verify")
	out, err := c.CombinedOutput()
	if err != nil {
		ts.Fatalf("verify %s: %v\n%s", args[0], err, out)
	}
}

// paired DIR: both files of data dir DIR carry one data dir identity.
func cmdPaired(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: paired DIR")
	}
	var ids []string
	for _, f := range []string{"checkpoints.sqlite", "business.sqlite"} {
		db := openRaw(ts, filepath.Join(args[0], f), "?mode=ro")
		var id string
		ts.Check(db.QueryRow(`SELECT id FROM data_dir`).Scan(&id))
		db.Close()
		ids = append(ids, id)
	}
	if len(ids[0]) != 36 || ids[0] != ids[1] {
		ts.Fatalf("data dir identities: checkpoints.sqlite %q, business.sqlite %q", ids[0], ids[1])
	}
}

// sums returns the SHA-256 of each of dir's files named (a missing one is
// "").
func sums(tb testing.TB, dir string, names ...string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	for _, n := range names {
		out[n] = testkit.FileSHA256(tb, filepath.Join(dir, n))
	}
	return out
}

// sameSums fails the test when a file changed since before.
func sameSums(tb testing.TB, dir string, before map[string]string, what string) {
	tb.Helper()
	for n, want := range before {
		if got := testkit.FileSHA256(tb, filepath.Join(dir, n)); got != want {
			tb.Errorf("%s changed %s", what, n)
		}
	}
}

// copyTo copies the named files of src into dst, replacing them, and
// removes their -wal and -shm in dst, as a person restoring a file does.
func copyTo(tb testing.TB, src, dst string, names ...string) {
	tb.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			tb.Fatal(err)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			os.Remove(filepath.Join(dst, n+suffix))
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

// snapshotFiles copies dir's closed .sqlite files into a new directory and
// returns it: an older copy of the files, as a restore would put back.
func snapshotFiles(tb testing.TB, dir string) string {
	tb.Helper()
	out := tb.TempDir()
	copyTo(tb, dir, out, "checkpoints.sqlite", "business.sqlite")
	return out
}

// wantRefused checks a command's failure: exit code, the error code of the
// JSON error object, and what stderr must say.
func wantRefused(tb testing.TB, dir string, code int, errCode string, says []string, args ...string) {
	tb.Helper()
	out, errOut, got := run(tb, dir, args...)
	if got != code {
		tb.Fatalf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), got, code, out, errOut)
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Error.Code != errCode {
		tb.Errorf("%s: error %+v (%v), want code %s", strings.Join(args, " "), e.Error, err, errCode)
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		tb.Errorf("%s: stderr is not one line:\n%s", strings.Join(args, " "), errOut)
	}
	for _, s := range says {
		if !strings.Contains(errOut, s) {
			tb.Errorf("%s: stderr lacks %q:\n%s", strings.Join(args, " "), s, errOut)
		}
	}
}

// appsOf counts the applications of task's draft in dir's business file.
func appsOf(tb testing.TB, dir, task string) string {
	tb.Helper()
	return query(tb, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = ?`, task)
}

// killedAt runs a command with the fault point switched on and checks
// that it died there (SIGKILL: exit 137).
func killedAt(tb testing.TB, dir, point string, args ...string) {
	tb.Helper()
	if _, code, _ := faultRun(tb, dir, point, args); code != 137 {
		tb.Fatalf("%s with %s: exit %d, want 137 (killed at the point)", strings.Join(args, " "), point, code)
	}
}

// Case 1: an approval's application commits, then a power loss takes the
// checkpoints after the last sync (here: the checkpoint file as it was
// before the approval is put back). Cancel must end the task submitted,
// reusing the application, not cancelled with the application pending.
func TestTruthCancelAfterLostSubmitCheckpoint(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
	before := snapshotFiles(t, dir)
	killedAt(t, dir, "submit:after-business-commit", "resume", "t", "--action", "approve")
	if appsOf(t, dir, "t") != "1" {
		t.Fatal("the application did not commit before the kill")
	}
	copyTo(t, before, dir, "checkpoints.sqlite") // the unsynced checkpoints are lost

	v := mustRun(t, dir, "resume", "t", "--action", "cancel")
	result, _ := v["result"].(map[string]any)
	if v["stage"] != "submitted" || v["status"] != "done" || result == nil || result["reused"] != true {
		t.Fatalf("cancel after a lost submit: status %v, stage %v, result %v; want done, submitted, reused", v["status"], v["stage"], v["result"])
	}
	if n := appsOf(t, dir, "t"); n != "1" {
		t.Fatalf("%s applications, want 1", n)
	}
	if rec := query(t, dir, "business.sqlite", `SELECT status || '/' || stage FROM tasks WHERE task_id = 't'`); rec != "done/submitted" {
		t.Fatalf("record %s, want done/submitted", rec)
	}
	verifyClean(t, dir)
}

// Case 2: an older checkpoints.sqlite (restored) beside the business file.
// A submitted task's cancel ends it submitted; starting it again finds its
// application instead of failing it with open_application.
func TestTruthOlderCheckpointsFile(t *testing.T) {
	t.Run("CancelAfterSubmit", func(t *testing.T) {
		dir := t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "too small")
		older := snapshotFiles(t, dir)
		done := mustRun(t, dir, "resume", "t", "--action", "approve")
		copyTo(t, older, dir, "checkpoints.sqlite")
		v := mustRun(t, dir, "resume", "t", "--action", "cancel")
		if v["stage"] != "submitted" || v["result"].(map[string]any)["application_id"] != done["result"].(map[string]any)["application_id"] {
			t.Fatalf("cancel with an older checkpoint file: stage %v, result %v; want submitted with %v", v["stage"], v["result"], done["result"])
		}
		if n := appsOf(t, dir, "t"); n != "1" {
			t.Fatalf("%s applications, want 1", n)
		}
		verifyClean(t, dir)
	})

	t.Run("StartAgainAfterSubmit", func(t *testing.T) {
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

// Case 3: an older business.sqlite (restored, or its -wal deleted after a
// crash). The checkpoint reports an application the business file lacks:
// show and approve refuse with inconsistent, nothing is written, the task
// record is not rewritten to done, the order is not returnable, verify
// names the task; restoring both files from one backup sets it right.
func TestTruthOlderBusinessFile(t *testing.T) {
	// The hints carry --data, which these runs give (docs/cli.md "Conventions").
	says := []string{"task t is inconsistent", "checkpoints.sqlite says it was submitted as application app_", "business.sqlite has no application", "`assistant --data ", " verify`", " backup DIR`"}
	t.Run("Restored", func(t *testing.T) {
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

// Case 4: files that do not belong together. A business.sqlite of another
// data dir is refused before anything is written, naming both identities;
// a -wal copied from another data dir is not merged.
func TestTruthFilesThatDoNotBelongTogether(t *testing.T) {
	t.Run("BusinessFileOfAnotherDataDir", func(t *testing.T) {
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

// Case 5: a corrupt page in the middle of business.sqlite (one no cheap
// check at open reads) is refused at open, before any write, with a
// message naming verify and the backup; it stays refused.
func TestTruthCorruptPageInTheMiddle(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "batch", "b1", batchFile(t, dir, 300))
	path := filepath.Join(dir, "business.sqlite")
	// A leaf of the timeline in the middle of its tree: neither its root
	// nor its first or last leaf.
	leaves := atoi(query(t, dir, "business.sqlite", `SELECT count(*) FROM dbstat WHERE name = 'steps' AND pagetype = 'leaf'`))
	page := atoi(query(t, dir, "business.sqlite", `SELECT pageno FROM dbstat WHERE name = 'steps' AND pagetype = 'leaf' ORDER BY path LIMIT 1 OFFSET ?`, leaves/2))
	if leaves < 5 || page == 0 {
		t.Fatalf("the timeline has %d leaves; the test needs a tree of several", leaves)
	}
	// File times tick coarsely on some file systems: let the clock pass
	// the last clean close before the page is damaged behind its back.
	time.Sleep(20 * time.Millisecond)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xde\xad\xbe\xef", 256)), int64(page-1)*4096+200); err != nil {
		t.Fatal(err)
	}
	f.Close()
	files := sums(t, dir, "business.sqlite", "checkpoints.sqlite")
	says := []string{"business.sqlite", "quick_check", "`assistant --data " + dir + " verify`", "`assistant --data " + dir + " backup`"}
	for _, args := range [][]string{{"start", "z", "A3003", "--reason", "x"}, {"resume", "row-0001", "--action", "approve"}, {"list"}, {"recover"}} {
		wantRefused(t, dir, 1, "internal", says, args...)
	}
	sameSums(t, dir, files, "a refused command")
	rep, code, out := verify(t, dir)
	if code != 1 || rep.Clean || rep.Files[1].Integrity != "failed" {
		t.Fatalf("verify: exit %d, want 1 with business.sqlite's integrity failed:\n%s", code, out)
	}
}

// Case 6: the order's return window closes while its draft waits for
// approval: approve ends the request failed with return_window_closed,
// nothing submitted.
func TestTruthWindowClosesWhileDraftWaits(t *testing.T) {
	dir := t.TempDir()
	closes := time.Now().Add(3 * time.Second)
	shop := filepath.Join(t.TempDir(), "shop.csv")
	delivered := closes.Add(-30 * 24 * time.Hour).UTC().Format(time.RFC3339)
	if err := os.WriteFile(shop, []byte("order_id,user,item,delivered_at,final_sale\nW1,demo-user,Lamp,"+delivered+",false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "orders", "import", shop)
	if v := mustRun(t, dir, "start", "t", "W1", "--reason", "too dim"); v["status"] != "waiting" {
		t.Fatalf("start: %v %v, want waiting (the window is still open)", v["status"], v["error"])
	}
	time.Sleep(time.Until(closes) + 500*time.Millisecond) // the window closes on the wall clock
	v := mustRun(t, dir, "resume", "t", "--action", "approve")
	e, _ := v["error"].(map[string]any)
	if v["status"] != "failed" || e == nil || e["code"] != "return_window_closed" {
		t.Fatalf("approve after the window closed: status %v, error %v; want failed, return_window_closed", v["status"], v["error"])
	}
	if n := appsOf(t, dir, "t"); n != "0" {
		t.Fatalf("%s applications, want 0", n)
	}
	verifyClean(t, dir)
}

// bigBatch writes a valid batch file of n rows whose reasons are 500
// characters (38 ASCII, then 462 of three bytes), and returns its path and
// size. With 50,000 rows it is 72 MB, and 64 MiB ends inside row 46,572,
// 19 characters into its reason: a reader that stops at 64 MiB sees a
// valid file of 46,572 rows (the case).
func bigBatch(tb testing.TB, n int) (string, int64) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "big.csv")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	reason := strings.Repeat("a", 38) + strings.Repeat("尺", 462)
	fmt.Fprintln(f, "task,order,reason")
	for i := range n {
		fmt.Fprintf(f, "row-%05d,A300%d,%s\n", i, i%4+1, reason)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return path, fi.Size()
}

// Case 7: a valid 50,000-row batch file over 64 MiB is refused whole with
// exit 2, nothing created; the build before cut it at 64 MiB and ran the
// 46,572 rows before the cut, the last with 19 of its 500 characters.
func TestTruthInputFileOverItsLimit(t *testing.T) {
	path, size := bigBatch(t, 50_000)
	if size <= 64<<20 {
		t.Fatalf("the file is %d bytes; the test needs more than 64 MiB", size)
	}
	dir := filepath.Join(t.TempDir(), "data")
	wantRefused(t, dir, 2, "invalid_input", []string{"batch file is larger than", "64 MiB", "split it"}, "batch", "b1", path)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused batch made the data dir: %v", err)
	}

	t.Run("OrdersFile", func(t *testing.T) {
		shop := filepath.Join(t.TempDir(), "shop.csv")
		f, err := os.Create(shop)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, "order_id,user,item,delivered_at,final_sale")
		item := strings.Repeat("i", 1000)
		for i := range 70_000 {
			fmt.Fprintf(f, "S%d,demo-user,%s,2026-01-02T00:00:00Z,false\n", i, item)
		}
		f.Close()
		wantRefused(t, dir, 2, "invalid_input", []string{"orders file is larger than", "split it", "nothing was imported"}, "orders", "import", shop)
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("a refused import made the data dir: %v", err)
		}
	})
}

// TestTruthBackupWhileProcessesRun: a backup taken while approvals and a
// batch write the data dir verifies clean, and restoring it makes a data
// dir that works. Restoring one file alone: an older business.sqlite makes
// the tasks newer than it inconsistent (refused until both are restored);
// an older checkpoints.sqlite rolls runs back, which the flow sets right
// against the business file.
func TestTruthBackupWhileProcessesRun(t *testing.T) {
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
		v := mustRun(t, d, "resume", "t5", "--action", "cancel") // its application exists
		if v["stage"] != "submitted" {
			t.Fatalf("cancel of a task submitted after the backup: stage %v, want submitted", v["stage"])
		}
		mustRun(t, d, "recover")
		verifyClean(t, d)
	})
}
