package main

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The tests of this file are the import defects a tester found after
// bac7b96 (shop data in, issue 17), each through the built binary.

// TestImportCommittedWhileAnotherWriterHoldsTheLock: an import whose
// transaction has committed reports its orders (exit 0) even when another
// writer takes business.sqlite's write lock right after that commit and
// holds it past the busy timeout. Before: the import's Sync after the
// commit timed out on that lock, exit 3 "database is locked … try again",
// though its orders were stored.
func TestImportCommittedWhileAnotherWriterHoldsTheLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	file := writeShop(t, "L1,demo-user,Pen,,false", "L2,demo-user,Ink,,false")
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "orders", "import", file)
	c.Env = append(os.Environ(), "ASSISTANT_FAULT=import:after-commit@pause")
	var out, errb strings.Builder
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	eventually(t, "the import stops after its commit", func() bool { return stopped(c.Process.Pid) })
	// Another writer (another import, a batch) takes the write lock now.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	code := exitOf(t, c.Wait())
	_ = tx.Rollback()
	if code != 0 {
		t.Fatalf("exit %d, want 0: the import was committed; stderr %q", code, errb.String())
	}
	if !strings.Contains(out.String(), `"added": 2`) {
		t.Errorf("no report of the committed import on stdout:\n%s", out.String())
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM orders WHERE order_id IN ('L1', 'L2')`); got != "2" {
		t.Errorf("%s of the two orders stored, want both", got)
	}
}
