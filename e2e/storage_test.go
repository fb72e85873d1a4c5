package e2e

// Script commands for the storage scripts (testdata/script/storage_*.txtar):
// hashing files to prove a refusal left them unchanged, editing a data dir's
// SQLite files the way another program or a newer build would, and copying
// the schema-version-1 fixtures.

import (
	"assistant/internal/testkit"

	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["sha256"] = cmdSHA256
	scriptCmds["sqlexec"] = cmdSQLExec
	scriptCmds["sqlval"] = cmdSQLVal
	scriptCmds["truncate"] = cmdTruncate
	scriptCmds["fixtures"] = cmdFixtures
	scriptCmds["mask"] = cmdMask
}

// fileSHA256 returns the hex SHA-256 of the file at path ("" when missing).
func fileSHA256(ts *testscript.TestScript, path string) string {
	sum, err := testkit.FileSum(ts.MkAbs(path))
	ts.Check(err)
	return sum
}

// sha256 save FILE...: remembers each file's SHA-256.
// sha256 same FILE...: each file's SHA-256 is the one remembered
// (! sha256 same: at least one differs).
func cmdSHA256(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || (args[0] != "save" && args[0] != "same") || (neg && args[0] == "save") {
		ts.Fatalf("usage: sha256 save|same FILE...")
	}
	changed := false
	for _, f := range args[1:] {
		key := "SHA256_" + hex.EncodeToString([]byte(f))
		sum := fileSHA256(ts, f)
		if args[0] == "save" {
			ts.Setenv(key, sum)
			continue
		}
		want := ts.Getenv(key)
		if want == "" {
			ts.Fatalf("sha256 same %s: no saved hash (run sha256 save first)", f)
		}
		if sum != want {
			changed = true
			if !neg {
				ts.Fatalf("%s changed: sha256 %s, was %s", f, sum, want)
			}
		}
	}
	if neg && !changed {
		ts.Fatalf("no file changed")
	}
}

// openRaw opens a SQLite file with no pragmas beyond the driver's defaults.
func openRaw(ts *testscript.TestScript, file string, params string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(file)+params)
	ts.Check(err)
	db.SetMaxOpenConns(1)
	return db
}

// sqlexec FILE SQL...: runs each statement on FILE (created if missing), as
// another program or a newer build of assistant would.
func cmdSQLExec(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: sqlexec FILE SQL...")
	}
	db := openRaw(ts, args[0], "")
	defer db.Close()
	for _, q := range args[1:] {
		if _, err := db.Exec(q); err != nil {
			ts.Fatalf("sqlexec %s: %q: %v", args[0], q, err)
		}
	}
	ts.Check(db.Close())
}

// sqlval FILE QUERY WANT: the query's single value, read only, is WANT.
func cmdSQLVal(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: sqlval FILE QUERY WANT")
	}
	db := openRaw(ts, args[0], "?mode=ro")
	defer db.Close()
	var got sql.NullString
	ts.Check(db.QueryRow(args[1]).Scan(&got))
	if (got.String == args[2]) == neg {
		ts.Fatalf("%s: %q = %q, want %s%q", args[0], args[1], got.String, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

// truncate FILE N: cuts FILE to N bytes, or to half its size for N "half".
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: truncate FILE N|half")
	}
	path := ts.MkAbs(args[0])
	var n int64
	if args[1] == "half" {
		fi, err := os.Stat(path)
		ts.Check(err)
		n = fi.Size() / 2
	} else {
		var err error
		n, err = strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
	}
	ts.Check(os.Truncate(path, n))
}

// fixtures VERSION DIR: copies testdata/fixtures/VERSION/*.sqlite (the files
// an older schema version wrote; see scripts/gen-fixtures-v1.sh) into DIR,
// mode 0600, DIR 0700.
func cmdFixtures(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: fixtures VERSION DIR")
	}
	src := filepath.Join("..", "testdata", "fixtures", args[0])
	files, err := filepath.Glob(filepath.Join(src, "*.sqlite"))
	ts.Check(err)
	if len(files) == 0 {
		ts.Fatalf("no fixtures in %s", src)
	}
	dir := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(dir, 0o700))
	for _, f := range files {
		b, err := os.ReadFile(f)
		ts.Check(err)
		ts.Check(os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600))
	}
}

var (
	uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?`)
)

// mask FILE OUT: writes FILE (or stdout/stderr of the last command) to OUT
// with every UUID replaced by xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx and every
// time by <time>, so output can be compared with a golden file.
func cmdMask(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: mask FILE OUT")
	}
	s := ts.ReadFile(args[0])
	s = uuidPattern.ReplaceAllString(s, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	s = timePattern.ReplaceAllString(s, "<time>")
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(s), 0o600))
}

// TestStorageReadOnlyDataDir: a data dir the process cannot write (chmod
// 0500) is refused by show, resume and start with exit 1 and one line naming
// the directory and what to do, and neither file changes. Root ignores
// permission bits, so as root the binary runs as user nobody (uid 65534)
// over a data dir that nobody owns.
func TestStorageReadOnlyDataDir(t *testing.T) {
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
	bin := filepath.Join(dir, "assistant")
	b, err := os.ReadFile(assistantBin())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
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
