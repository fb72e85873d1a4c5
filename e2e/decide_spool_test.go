package e2e

import (
	"os"
	"testing"
)

// TestDecideStdinSpool: decide - keeps stdin in a temporary file to read
// it twice (check, then store the rows a page at a time); the file is
// gone once the command ends, also when it is killed part-way, and the
// run then finished by the same command again decides every row once.
func TestDecideStdinSpool(t *testing.T) {
	const n = 150
	dir := t.TempDir()
	file := parked(t, dir, n)
	tmp := t.TempDir()
	left := func(when string) {
		t.Helper()
		ents, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			t.Errorf("%s: %s left in TMPDIR", when, e.Name())
		}
	}
	_, _, code := decide(t, dir, file, []string{"TMPDIR=" + tmp, "ASSISTANT_FAULT=decide:between-commits"}, "-", "--chunk", "50")
	if code != 137 {
		t.Fatalf("decide killed at decide:between-commits exited %d, want 137", code)
	}
	left("killed")
	rep, stderr, code := decide(t, dir, file, []string{"TMPDIR=" + tmp}, "-")
	if code != 0 || rep.Status != "done" || rep.Batch.Counts["submitted"] != n || len(rep.Rows) != n {
		t.Fatalf("decide again: exit %d (%s), status %s, counts %v, %d rows; want done, %d submitted", code, stderr, rep.Status, rep.Batch.Counts, len(rep.Rows), n)
	}
	left("done")
	checkAppliedOnce(t, dir, n)
	verifyClean(t, dir)
}
