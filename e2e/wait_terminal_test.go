package e2e

// docs/ci.md "How wait waits": on a terminal wait says what it waits for
// and how to answer it, and keeps a status line; on a pipe it stays quiet.
// The terminal is a real pseudo-terminal, made by util-linux's script.

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer that a process writes while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// onTerminal starts args of the binary on data dir dir with stdin, stdout
// and stderr a pseudo-terminal (script -qfec), everything it prints in the
// returned buffer and its stdin (the terminal's keyboard) in the returned
// writer. Without script the test is skipped, except in CI (CI=true),
// where it fails.
func onTerminal(t *testing.T, dir string, args ...string) (*exec.Cmd, *lockedBuffer, io.WriteCloser) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("script (util-linux) is not installed: the terminal tests need it")
		}
		t.Skip("script (util-linux) is not installed: no terminal to test on")
	}
	line := shellWords(append([]string{assistantBin(), "--data", dir}, args...))
	c := exec.Command("script", "-qfec", line, "/dev/null")
	out := &lockedBuffer{}
	c.Stdout, c.Stderr = out, out
	keys, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c, out, keys
}

// shellWords quotes each word for sh and joins them.
func shellWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// TestWaitOnATerminalSaysHowToAnswer: wait on a terminal names what the
// task waits for and the exact commands that answer it from another
// terminal, redraws one status line in place (\r) with the time waited and
// the draft's remaining validity, clears it when the decision comes and
// prints the task; Ctrl-C then says that wait changed nothing, not to run
// it again.
func TestWaitOnATerminalSaysHowToAnswer(t *testing.T) {
	t.Parallel()
	t.Run("Decided", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		v := mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
		draft := v["draft"].(map[string]any)["draft_id"].(string)
		c, out, _ := onTerminal(t, dir, "wait", "t")
		eventually(t, "wait shows its status line", func() bool { return strings.Contains(out.String(), "\rwaiting ") })
		got := out.String()
		for _, want := range []string{
			"Waiting for task t (order A3003): a decision on draft version 1.",
			"Answer it from another terminal:",
			"resume t --action approve --draft " + draft,
			"resume t --action cancel",
			" · draft valid ",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("wait on a terminal printed %q; want it to hold %q", got, want)
			}
		}
		mustRun(t, dir, "resume", "t", "--action", "approve", "--draft", draft)
		if code := exitOf(t, c.Wait()); code != 0 {
			t.Fatalf("wait exit %d after the approval, want 0; printed %q", code, out.String())
		}
		if got := out.String(); !strings.Contains(got, "\r\x1b[KTask t ") || !strings.Contains(got, "Status: done") {
			t.Errorf("wait printed %q; want the status line cleared, then the task, done", got)
		}
	})
	t.Run("CtrlC", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
		before := fileSums(t, dir)
		c, out, keys := onTerminal(t, dir, "wait", "t")
		eventually(t, "wait shows its status line", func() bool { return strings.Contains(out.String(), "\rwaiting ") })
		if _, err := keys.Write([]byte{3}); err != nil { // Ctrl-C on the terminal
			t.Fatal(err)
		}
		if code := exitOf(t, c.Wait()); code != 130 {
			t.Fatalf("wait exit %d after Ctrl-C, want 130; printed %q", code, out.String())
		}
		got := out.String()
		if !strings.Contains(got, "interrupted by SIGINT") || !strings.Contains(got, "wait only reads, so nothing was changed") || strings.Contains(got, "run the command again") {
			t.Errorf("wait after Ctrl-C printed %q; want it to say it changed nothing, not to run it again", got)
		}
		sameFiles(t, dir, before, "wait ended by Ctrl-C")
	})
}

// TestWaitOnAPipeIsQuiet: with stderr a pipe wait prints nothing there
// while it waits, only the one line of its outcome.
func TestWaitOnAPipeIsQuiet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "t", "A3003", "--reason", "size")
	_, errOut, code := run(t, dir, "wait", "t", "--timeout", "1s")
	if code != 7 {
		t.Fatalf("wait --timeout 1s: exit %d, want 7; stderr %q", code, errOut)
	}
	if strings.Count(errOut, "\n") != 1 || strings.ContainsAny(errOut, "\r\x1b") || strings.Contains(errOut, "Answer it") {
		t.Errorf("wait on a pipe printed %q on stderr; want only its one outcome line", errOut)
	}
}
