package e2e

// list (docs/json.md "list"): what list shows is what show says, filtered
// by batch, status and limit.

import (
	"path/filepath"
	"testing"
)

// TestListBatchAndLimit: --batch keeps the tasks of one batch's rows,
// --limit the first N; an unknown batch is exit 4, a negative limit 2.
func TestListBatchAndLimit(t *testing.T) {
	t.Parallel()
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

// TestListEndedAfterCrashByStatus: a task whose run ended (its last
// checkpoint written) but whose holder was killed before it let go is
// recorded running; list --status done shows it as show does, beside the
// tasks recorded done, in creation order, and --status running and
// --status cancelled do not, list writing nothing.
func TestListEndedAfterCrashByStatus(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "e1", "A3001", "--reason", "damaged")
	mustRun(t, dir, "start", "e2", "A3002", "--reason", "damaged")
	mustRun(t, dir, "start", "e3", "A3004", "--reason", "damaged")
	mustRun(t, dir, "resume", "e2", "--action", "cancel")
	mustRun(t, dir, "resume", "e3", "--action", "approve")
	if _, code, _ := faultRun(t, dir, "after-checkpoint:submit", []string{"resume", "e1", "--action", "approve"}); code != 137 {
		t.Fatalf("approve killed after submit's checkpoint: exit %d, want 137", code)
	}
	if got := record(t, dir, "e1", "status"); got != "running" {
		t.Fatalf("e1 recorded %s, want running (its holder killed before it let go)", got)
	}
	// The first command after the crash merges the -wal the killed
	// process left into the files (docs/storage.md): show does here.
	if v := mustRun(t, dir, "show", "e1"); v["status"] != "done" {
		t.Fatalf("show e1 after the crash: %v, want done", v["status"])
	}
	before := fileSums(t, dir)
	for _, c := range []struct{ status, want string }{
		{"done", "e1=done e3=done"},
		{"cancelled", "e2=cancelled"},
		{"running", ""},
	} {
		if got := listed(t, dir, "--status", c.status); got != c.want {
			t.Errorf("list --status %s = %q, want %q", c.status, got, c.want)
		}
	}
	if got := listed(t, dir); got != "e1=done e2=cancelled e3=done" {
		t.Errorf("list = %q, want every task as show says", got)
	}
	sameFiles(t, dir, before, "list")
}
