package e2e

// Conventions (docs/cli.md "Conventions", "Global flags"): the
// environment variables, --version and its VCS stamp, empty flag values,
// the user name rule, and the holder a busy task names.

import (
	"assistant/flow/returns"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestConventionsEnvironmentVariables: ASSISTANT_DATA and ASSISTANT_USER
// name the data dir and the user; --data and --user win over them; an
// empty ASSISTANT_USER counts as unset.
func TestConventionsEnvironmentVariables(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestEmptyFlagValuesDoNothing: an empty --data, an empty DIR of backup
// and an empty value of a command's flag are exit 2 with one line, and
// nothing is made or written: no data dir in the working directory, no
// file of an existing data dir changed.
func TestEmptyFlagValuesDoNothing(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	rows := filepath.Join(wd, "rows.csv")
	orders := filepath.Join(wd, "orders.csv")
	decide := filepath.Join(wd, "decide.csv")
	for path, text := range map[string]string{rows: "task,order,reason\nb-1,A3001,x\n", orders: "order_id,user,item,delivered_at,final_sale\nZ1,demo-user,Mug,2026-11-01 10:00,false\n",
		decide: "task,action\nt1,approve\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("NoDataDir", func(t *testing.T) {
		t.Parallel()
		for _, args := range [][]string{
			{"--data", "", "start", "t", "A3001"}, {"--data", "", "batch", "b", rows}, {"--data", "", "show", "t"},
			{"--data", "", "verify"}, {"--data", "", "orders", "list"}, {"--data", "", "list"}, {"--data", "", "recover"},
			{"--data", "", "approvers", "list"}, {"--data", " ", "orders", "import", orders}, {"backup", ""}, {"backup", " "},
		} {
			out, errOut, code := runEnv(t, wd, []string{"ASSISTANT_DATA=", "ASSISTANT_STORE="}, withDefaults(args, "--output", "json")...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "assistant: ") || !strings.Contains(out, `"invalid_input"`) {
				t.Errorf("%q: exit %d, stderr %q; want 2 and one line", args, code, errOut)
			}
			if _, err := os.Stat(filepath.Join(wd, "data")); err == nil {
				t.Fatalf("%q made ./data", args)
			}
		}
	})
	t.Run("DataDirUnchanged", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "t1", "A3001") // waits for a reason
		mustRun(t, dir, "start", "t2", "A3002", "--reason", "too small")
		before := fileSums(t, dir)
		for _, tc := range []struct {
			args []string
			flag string
		}{
			{[]string{"resume", "t1", "--reason", ""}, "--reason"},
			{[]string{"list", "--batch", ""}, "--batch"},
			{[]string{"list", "--status", ""}, "--status"},
			{[]string{"decide", decide, "--id", ""}, "--id"},
			{[]string{"approvers", "grant", "alice", "--for", ""}, "--for"},
			{[]string{"approvers", "revoke", "alice", "--for", " "}, "--for"},
			{[]string{"orders", "import", orders, "--timezone", ""}, "--timezone"},
			{[]string{"resume", "t2", "--action", "approve", "--draft", " "}, "--draft"},
			{[]string{"--output", "", "show", "t2"}, "--output"},
		} {
			_, errOut, code := run(t, dir, tc.args...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.flag+" must not be") {
				t.Errorf("%q: exit %d, stderr %q; want 2 and one line naming %s", tc.args, code, errOut, tc.flag)
			}
		}
		sameFiles(t, dir, before, "a command with an empty flag value")
		if v := mustRun(t, dir, "show", "t1"); v["stage"] != "need_reason" {
			t.Errorf("t1 after resume --reason \"\": stage %v, want need_reason", v["stage"])
		}
		verifyClean(t, dir)
	})
}

// TestUserIsValidated: --user and ASSISTANT_USER follow the task-id rule;
// the refusal is exit 2 with one escaped line, and nothing is made.
func TestUserIsValidated(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct {
		flag, env string
	}{
		{flag: "\x1b]0;pwned\a\x1b[31mred"},
		{flag: " "},
		{flag: "a b"},
		{flag: "bidi\u202e"},
		{env: " "},
		{env: "\x1b[2J"},
	} {
		args := []string{"--data", dir, "--output", "text"}
		if tc.flag != "" {
			args = append(args, "--user", tc.flag)
		}
		c := exec.Command(assistantBin(), append(args, "start", "r1", "A3003", "--reason", "x")...)
		c.Env = append(os.Environ(), "ASSISTANT_USER="+tc.env)
		var out, stderr bytes.Buffer
		c.Stdout, c.Stderr = &out, &stderr
		code := exitOf(t, c.Run())
		if code != 2 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "user name") {
			t.Errorf("--user %q / ASSISTANT_USER %q: exit %d, stderr %q; want exit 2 and one line about the user name", tc.flag, tc.env, code, stderr.String())
		}
		checkNoRaw(t, "stderr", stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused --user made the data dir (%v)", err)
	}
}

// TestUserNamesRefuseInvisibleCharacters: a user name holding a character
// that prints as nothing or as a blank (a Hangul filler, the Braille
// blank, a combining grapheme joiner, a variation selector, a soft
// hyphen) is refused wherever a user name enters: --user, ASSISTANT_USER,
// approvers grant and revoke, the user column of an orders file; one
// line, exit 2, no file changed. Names that differ in case stay distinct
// users.
func TestUserNamesRefuseInvisibleCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ciBotOrders(t, dir)
	for _, name := range []string{"\u3164", "\u2800", "ali\u034fce", "bo\ufe0fb", "\u115fx", "a\u00adb", "\uffa0"} {
		refused(t, dir, 2, "user name", "--user", "ci-bot", "approvers", "grant", name)
		refused(t, dir, 2, "user name", "--user", "ci-bot", "approvers", "revoke", name)
		refused(t, dir, 2, "--user: user name", "--user", name, "list")
		before := fileSums(t, dir)
		c := exec.Command(assistantBin(), "--data", dir, "list")
		c.Env = append(os.Environ(), "ASSISTANT_USER="+name)
		stderr, code := new(strings.Builder), 0
		c.Stderr = stderr
		code = exitOf(t, c.Run())
		if code != 2 || !strings.Contains(stderr.String(), "ASSISTANT_USER: user name") {
			t.Errorf("ASSISTANT_USER=%q list: exit %d, %q", name, code, stderr)
		}
		sameFiles(t, dir, before, "ASSISTANT_USER list")
		file := t.TempDir() + "/orders.csv"
		if err := os.WriteFile(file, []byte("order_id,user,item,delivered_days_ago,final_sale\nZ1,"+name+",x,2,false\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, 2, "invisible", "--user", "ci-bot", "orders", "import", file, "--operator")
	}
	as(t, dir, "ci-bot", 0, "approvers", "grant", "Alice")
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
}

// TestConventionsFlagGivenOnce: a single-valued flag given twice with
// different values is exit 2 with one line and changes no byte, for a
// command's own flag and a global one; a list flag stays repeatable and
// the same value twice is accepted.
func TestConventionsFlagGivenOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "r1", "A3003")
	for _, args := range [][]string{
		{"resume", "r1", "--reason", "size", "--reason", "colour"},
		{"--user", "alice", "--user", "bob", "show", "r1"},
		{"show", "r1", "--exit-status=false", "--exit-status"},
		{"start", "r2", "A3004", "--draft-ttl", "60s", "--draft-ttl", "90s"},
	} {
		refused(t, dir, 2, "given twice", args...)
	}
	if _, stderr, code := run(t, dir, "list", "--status", "waiting", "--status", "done", "--limit", "5", "--limit", "5"); code != 0 {
		t.Errorf("list with a repeated list flag and the same value twice: exit %d, %s", code, stderr)
	}
}

// TestConventionsReasonIsVisible: a reason of white space and invisible
// characters alone (zero-width spaces, joiners, the Braille blank) is
// exit 2 with one line and changes no byte: at start, as the answer to a
// reason question and as an edit's new reason.
func TestConventionsReasonIsVisible(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "asks", "A3003")
	mustRun(t, dir, "start", "drafted", "A3004", "--reason", "too small")
	for _, r := range []string{"\u200b", " \u200b\u200d ", "\u2800", "\u2060\ufeff"} {
		refused(t, dir, 2, "no visible character", "start", "r1", "A3005", "--reason", r)
		refused(t, dir, 2, "no visible character", "resume", "asks", "--reason", r)
		refused(t, dir, 2, "no visible character", "resume", "drafted", "--action", "edit", "--reason", r)
	}
}
