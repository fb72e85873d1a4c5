package e2e

// Issue 15's conventions through the built binary, one process per
// command (docs/cli.md "Conventions"): ASSISTANT_DATA and ASSISTANT_USER,
// --version and its VCS stamp, and the error of an answer to a task another
// live process holds.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
)

// runEnv runs the binary with args and env added to the environment, in
// dir, without --data or --user.
func runEnv(tb testing.TB, dir string, env []string, args ...string) (string, string, int) {
	tb.Helper()
	c := exec.Command(assistantBin(), args...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), exitOf(tb, err)
}

func TestConventionsEnvironmentVariables(t *testing.T) {
	work := t.TempDir()
	data := filepath.Join(work, "env-data")
	env := []string{"ASSISTANT_DATA=" + data, "ASSISTANT_USER=other-user"}
	if _, stderr, code := runEnv(t, work, env, "start", "o1", "B4001", "--reason", "size"); code != 0 {
		t.Fatalf("start with ASSISTANT_DATA and ASSISTANT_USER: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(data, "business.sqlite")); err != nil {
		t.Fatalf("ASSISTANT_DATA was not the data dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "data")); !os.IsNotExist(err) {
		t.Errorf("the default ./data was made (%v)", err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
	}{
		{name: "BothFromEnv", env: env, args: []string{"show", "o1", "--json", "user"}, code: 0},
		{name: "UserFlagWins", env: env, args: []string{"--user", "demo-user", "show", "o1"}, code: 4},
		{name: "DataFlagWins", env: env, args: []string{"--data", filepath.Join(work, "none"), "show", "o1"}, code: 4},
		{name: "EmptyUserIsUnset", env: []string{"ASSISTANT_DATA=" + data, "ASSISTANT_USER="}, args: []string{"show", "o1"}, code: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runEnv(t, work, tc.env, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s%s", code, tc.code, stdout, stderr)
			}
			if code == 0 && !strings.Contains(stdout, `"user": "other-user"`) {
				t.Errorf("stdout %s, want the task of other-user", stdout)
			}
		})
	}
}

// TestConventionsVersionStamp: --version says what `go version -m` reads
// from the binary; a build as scripts/demo.sh makes it, in a git checkout,
// carries the revision.
func TestConventionsVersionStamp(t *testing.T) {
	revision := regexp.MustCompile(`(?m)^\s*build\s+vcs\.revision=([0-9a-f]+)$`)
	check := func(t *testing.T, bin string) (rev string) {
		t.Helper()
		out, err := exec.Command(bin, "--version").Output()
		if err != nil {
			t.Fatalf("%s --version: %v", bin, err)
		}
		line := string(out)
		if !strings.HasPrefix(line, "assistant ") || strings.Count(line, "\n") != 1 {
			t.Fatalf("--version printed %q", line)
		}
		info, err := exec.Command("go", "version", "-m", bin).Output()
		if err != nil {
			t.Fatal(err)
		}
		if m := revision.FindSubmatch(info); m != nil {
			rev = string(m[1])
			if !strings.Contains(line, " rev "+rev[:12]+" ") {
				t.Errorf("--version %q does not name the revision %s", line, rev)
			}
		} else if !strings.Contains(line, "(no VCS stamp") {
			t.Errorf("--version %q claims a stamp the binary does not carry", line)
		}
		return rev
	}
	check(t, assistantBin())
	if st, err := os.Stat(filepath.Join("..", ".git")); err != nil || !st.IsDir() {
		// go stamps a checkout whose .git is a directory: not a copy of
		// the sources, nor a linked worktree (.git is a file there).
		t.Skip("not a git checkout with a .git directory: go build stamps no revision")
	}
	bin := filepath.Join(t.TempDir(), "assistant")
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if rev := check(t, bin); rev == "" {
		t.Errorf("a build with -buildvcs=auto in a git checkout carries no revision")
	}
}

// TestConventionsHeldTaskNamesItsHolder: an answer to a waiting task that
// another live process holds (an answer or a resume of it that took it a
// moment before) says which process holds it, not "a batch".
func TestConventionsHeldTaskNamesItsHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, stderr, code := run(t, dir, "start", "r1", "A3003", "--reason", "size"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, stderr)
	}
	// This test's process holds the task, as a second resume would.
	if err := setLease(dir, "r1", os.Getpid(), time.Hour); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, dir, "resume", "r1", "--action", "approve")
	want := "pid " + strconv.Itoa(os.Getpid()) + " on " + returns.ThisHost()
	if code != 3 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "that process is running the task now") || strings.Contains(stderr, "batch") {
		t.Errorf("answer to a held task: exit %d, %q; want 3 naming %q and no batch", code, stderr, want)
	}
	if got := query(t, dir, "business.sqlite", `SELECT status FROM tasks WHERE task_id = 'r1'`); got != "waiting" {
		t.Errorf("task r1 is %s after a refused answer, want waiting", got)
	}
}
