package e2e

// Storage refusals (docs/storage.md "Refusals"): a data dir that cannot be
// written and a file damaged in the middle are refused before any write.
// The storage scripts (testdata/script/storage-*.txtar) check the other
// refusals and the migrations.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStorageReadOnlyDataDir: a data dir the process cannot write (chmod
// 0500) is refused by show, resume and start with exit 1 and one line naming
// the directory and what to do, and neither file changes. Root ignores
// permission bits, so as root the binary runs as user nobody (uid 65534)
// over a data dir that nobody owns.
func TestStorageReadOnlyDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		// nobody must reach the binary and the data dir.
		for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The built binary itself (its directory is open to every user,
	// TestMain): a copy written here could be busy (ETXTBSY) while a
	// process another test forks meanwhile holds the copy's descriptor.
	bin := assistantBin()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(data, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Skipf("cannot give the data dir to nobody: %v", err)
		}
	}
	run := func(args ...string) (int, string) {
		t.Helper()
		c := exec.Command(bin, append([]string{"--data", data, "--output", "text"}, args...)...)
		c.Dir = dir
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var stderr bytes.Buffer
		c.Stderr = &stderr
		err := c.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("run %v: %v", args, err)
		}
		return c.ProcessState.ExitCode(), stderr.String()
	}
	if code, stderr := run("start", "return-25", "A3003", "--reason", "size"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, stderr)
	}
	files := []string{filepath.Join(data, "checkpoints.sqlite"), filepath.Join(data, "business.sqlite")}
	sums := map[string][32]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sums[f] = sha256.Sum256(b)
	}
	if err := os.Chmod(data, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(data, 0o700) })

	for _, args := range [][]string{
		{"show", "return-25"},
		{"resume", "return-25", "--action", "approve"},
		{"start", "return-26", "A3001", "--reason", "size"},
	} {
		code, stderr := run(args...)
		t.Logf("%v: exit %d: %s", args, code, stderr)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		if n := strings.Count(stderr, "\n"); n != 1 || !strings.Contains(stderr, data) || !strings.Contains(stderr, "not writable") {
			t.Errorf("%v: stderr %q, want one line naming %s and saying it is not writable", args, stderr, data)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(b) != sums[f] {
			t.Errorf("%s changed under a refusal", f)
		}
	}
}

// TestCorruptPageInTheMiddleIsRefused: a corrupt page in the middle of
// business.sqlite (one no cheap check at open reads) is refused at open,
// before any write, with a message naming verify and the backup; it stays
// refused.
func TestCorruptPageInTheMiddleIsRefused(t *testing.T) {
	t.Parallel()
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
	says := []string{"business.sqlite", "quick_check", "`assistant --data " + dir + " verify`", "`assistant --data " + dir + " backup DIR`"}
	for _, args := range [][]string{{"start", "z", "A3003", "--reason", "x"}, {"resume", "row-0001", "--action", "approve"}, {"list"}, {"recover"}} {
		wantRefused(t, dir, 1, "internal", says, args...)
	}
	sameSums(t, dir, files, "a refused command")
	rep, code, out := verify(t, dir)
	if code != 1 || rep.Clean || rep.Files[1].Integrity != "failed" {
		t.Fatalf("verify: exit %d, want 1 with business.sqlite's integrity failed:\n%s", code, out)
	}
}
