package e2e

// Text output and pasteable hints (issues 15 and 17, as a tester found
// them): text output escapes control and bidi characters everywhere, every
// command a message or a card prints pastes into bash as the very
// arguments meant, mistyped subcommands of a group exit 2, --user follows
// the task-id rule, a bad --json beside --version is refused, a signal
// says its name, and wait ends when its data dir is deleted. Each runs the
// built binary in separate processes.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawTerminalChars are characters no text output may hold as they are:
// ESC, BEL, a C1 control, the right-to-left override, a bidi isolate, a
// zero-width space.
var rawTerminalChars = []string{"\x1b", "\a", "\u009b", "\u202e", "\u2066", "\u200b"}

// checkNoRaw fails when out holds one of rawTerminalChars.
func checkNoRaw(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range rawTerminalChars {
		if strings.Contains(out, c) {
			t.Errorf("%s holds a raw %q:\n%s", what, c, out)
		}
	}
}

// TestTextEscapesEverywhere: a reason and a revise comment with a bidi
// override, an isolate and a zero-width space (control characters are
// refused in them) are printed escaped by
// show, history, list and resume's card, and the JSON keeps them as given.
func TestTextEscapesEverywhere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	reason := "bidi\u202eevil\u200b"
	comment := "fix\u2066 it\u202e"
	mustRun(t, dir, "start", "tb", "A3003", "--reason", reason)
	mustRun(t, dir, "resume", "tb", "--action", "revise", "--comment", comment)
	for _, args := range [][]string{
		{"show", "tb"},
		{"history", "tb"},
		{"list"},
		{"list", "--status", "waiting"},
		{"approvers", "grant", "alice"},
		{"approvers", "list"},
		{"resume", "tb", "--reason", reason},
		{"history", "tb"},
	} {
		out, stderr, code := run(t, dir, append(args, "--output", "text")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		checkNoRaw(t, strings.Join(args, " "), out+stderr)
		if args[0] == "history" && !strings.Contains(out, `bidi\u202eevil`) {
			t.Errorf("history does not show the reason escaped:\n%s", out)
		}
	}
	if v := mustRun(t, dir, "show", "tb"); v["draft"].(map[string]any)["reason"] != reason {
		t.Errorf("JSON reason %q, want it as given %q", v["draft"].(map[string]any)["reason"], reason)
	}
	verifyClean(t, dir)
}

// hintCommand matches a command a message or card prints: in backquotes
// in a message, after Next:/or: on a card.
var hintCommand = regexp.MustCompile("`(assistant [^`]*)`|(?m)^(?:Next:|   or:) +(assistant .*?)(?:   \\(.*)?$")

// pastedArgs pastes cmdline (after "assistant ") into bash as the
// arguments of printf and returns them as bash passed them on.
func pastedArgs(t *testing.T, cmdline string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("no bash: %v", err)
	}
	c := exec.Command(bash, "-c", `printf '%s\0' `+strings.TrimPrefix(cmdline, "assistant "))
	c.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	c.Dir = t.TempDir()
	out, err := c.Output()
	if err != nil {
		t.Fatalf("bash -c printf %s: %v", cmdline, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestHintsPasteBack: task ids with shell syntax go through every hint
// path (a wrong draft, a wrong kind of answer, stop of a waiting task, a
// start conflict, the card) in a data dir whose path needs quoting too;
// each printed command, pasted into bash, gives back the data dir and the
// id exactly, and runs nothing.
func TestHintsPasteBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "da ta$(echo x)'q'")
	for _, id := range []string{"$(id)2", "a;b", "it's", "运动鞋-1", "x$HOME", `q"uote`, "back`tick`"} {
		mustRun(t, dir, "start", id, "A3003", "--reason", "x")
		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"resume", id, "--action", "approve", "--draft", "bad"}, 2},
			{[]string{"resume", id, "--reason", "r"}, 2},
			{[]string{"stop", id}, 3},
			{[]string{"start", id, "A3001", "--reason", "y"}, 3},
			{[]string{"show", id, "--output", "text"}, 0},
		} {
			out, stderr, code := run(t, dir, tc.args...)
			if code != tc.code {
				t.Fatalf("%q: exit %d, want %d: %s", tc.args, code, tc.code, stderr)
			}
			text := stderr
			if code == 0 {
				text = out
			}
			hints := hintCommand.FindAllStringSubmatch(text, -1)
			if len(hints) == 0 {
				t.Fatalf("%q printed no command to paste:\n%s", tc.args, text)
			}
			for _, h := range hints {
				cmdline := h[1] + h[2]
				got := pastedArgs(t, cmdline)
				if len(got) < 4 || got[0] != "--data" || got[1] != dir || got[3] != id {
					t.Errorf("%q printed %s, which pastes as %q; want --data %q CMD %q …", tc.args, cmdline, got, dir, id)
				}
			}
		}
	}
	verifyClean(t, dir)
}

// TestUnknownSubcommandOfGroup: a mistyped subcommand of a command group
// is exit 2 with one line saying what was meant; the JSON error too.
func TestUnknownSubcommandOfGroup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct{ args, line string }{
		{"orders lst", `assistant: unknown command "lst" for "assistant orders"; did you mean "list"?`},
		{"approvers lst", `assistant: unknown command "lst" for "assistant approvers"; did you mean "list"?`},
		{"approvers grnt alice", `assistant: unknown command "grnt" for "assistant approvers"; did you mean "grant"?`},
		{"completion zhs", `assistant: unknown command "zhs" for "assistant completion"; did you mean "zsh"?`},
	} {
		out, stderr, code := run(t, dir, strings.Fields(tc.args)...)
		if code != 2 || stderr != tc.line+"\n" {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.line)
		}
		if !strings.Contains(out, `"code": "invalid_input"`) {
			t.Errorf("%s: stdout %q, want the JSON error", tc.args, out)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a mistyped command made the data dir (%v)", err)
	}
}

// TestUserIsValidated: --user and ASSISTANT_USER follow the task-id rule;
// the refusal is exit 2 with one escaped line, and nothing is made.
func TestUserIsValidated(t *testing.T) {
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

// TestNoRawInputOnStderr: input echoed in an error (a --draft, a data dir
// path) is escaped on stderr, the line kept one line.
func TestNoRawInputOnStderr(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "r1", "A3003", "--reason", "x")
	for _, args := range [][]string{
		{"resume", "r1", "--action", "approve", "--draft", "bad\x1b[31m\u202e"},
		{"--data", dir + "\x1b]0;x\a\n", "show", "r1"},
		{"show", "r1", "--json", "bogus\x1b[2J"},
	} {
		_, stderr, code := run(t, dir, args...)
		if code == 0 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want a failure of one line", args, code, stderr)
		}
		checkNoRaw(t, "stderr", stderr)
	}
}

// TestVersionRefusesBadJSON: --version with a bad --json is exit 2, as
// anywhere else; alone it prints one line and exits 0.
func TestVersionRefusesBadJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if out, stderr, code := run(t, dir, "--version", "--json", "bogus"); code != 2 || !strings.Contains(stderr, "--json") {
		t.Errorf("--version --json bogus: exit %d, %q %q; want exit 2", code, out, stderr)
	}
	if out, _, code := run(t, dir, "--version"); code != 0 || !strings.HasPrefix(out, "assistant ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// startWait starts `assistant wait TASK` and returns once it has had time
// to begin polling (the tests below check its end, not this pause).
func startWait(t *testing.T, dir, task string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "wait", task)
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = new(bytes.Buffer), &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	return c, &stderr
}

// endOf waits for c to exit, at most a minute, and returns its exit code.
func endOf(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return exitOf(t, err)
	case <-time.After(time.Minute):
		_ = c.Process.Kill()
		<-done
		t.Fatal("the command did not end within a minute")
	}
	return -1
}

// TestWaitDataDirDeleted: wait ends exit 4 with one line when its data dir
// is deleted under it, instead of waiting for ever.
func TestWaitDataDirDeleted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "r1", "A3003", "--reason", "x")
	c, stderr := startWait(t, dir, "r1")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if code := endOf(t, c); code != 4 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "was deleted while waiting") {
		t.Errorf("wait after its data dir was deleted: exit %d, stderr %q; want exit 4 and one line", code, stderr.String())
	}
}

// TestSignalLineIsClean: a signal that ends a wait says its name in one
// line, without the cancelled context's text.
func TestSignalLineIsClean(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "r1", "A3003", "--reason", "x")
	for sig, code := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		c, stderr := startWait(t, dir, "r1")
		if err := c.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		got := endOf(t, c)
		line := stderr.String()
		if got != code || strings.Count(line, "\n") != 1 || !strings.Contains(line, "interrupted by SIG") || strings.Contains(line, "context canceled") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one clean line naming the signal", sig, got, line, code)
		}
	}
	verifyClean(t, dir)
}
