package business

import (
	"assistant/internal/testkit"

	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The two-process test re-runs this test binary as a child process
// (testkit.Child, part "submit") with these environment variables.
const (
	helperDBEnv    = "BUSINESS_TEST_DB"
	helperDraftEnv = "BUSINESS_TEST_DRAFT"
)

// TestHelperProcess is not a test on its own: TestTwoProcessesSubmitOnce
// starts it in child processes. It opens the store, prints READY, waits for a
// line on stdin (the start signal), submits the draft and prints
// "RESULT <application id> <reused>".
func TestHelperProcess(t *testing.T) {
	t.Parallel()
	if testkit.HelperPart() != "submit" {
		t.Skip("helper process for TestTwoProcessesSubmitOnce")
	}
	ctx := context.Background()
	s := mustOpen(t, os.Getenv(helperDBEnv), Options{})
	fmt.Println("READY")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("waiting for the start signal: %v", err)
	}
	a, reused, err := s.Submit(ctx, os.Getenv(helperDraftEnv), "demo-user", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("RESULT %s %t\n", a.ID, reused)
}

// TestTwoProcessesSubmitOnce submits one draft from two processes at once:
// the file holds one application and both processes report it.
func TestTwoProcessesSubmitOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "business.sqlite")
	s := mustOpen(t, path, Options{Create: true, Seed: seedCSV(t)})
	d := mustPrepare(t, s, "return-25", "A3003", time.Hour, time.Now())

	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Scanner
	}
	var children []child
	for range 2 {
		cmd := testkit.Child(t, "submit", helperDBEnv+"="+path, helperDraftEnv+"="+d.ID)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// Kill is a no-op error after a normal exit; it only matters when
			// the test fails before Wait.
			cmd.Process.Kill()
			cmd.Wait()
		})
		children = append(children, child{cmd, stdin, bufio.NewScanner(stdout)})
	}

	// Both children have the file open before either submits.
	for i, c := range children {
		if line := waitFor(t, c.out, "READY"); line == "" {
			t.Fatalf("child %d ended before READY", i)
		}
	}
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}

	var ids []string
	fresh := 0
	for i, c := range children {
		line := waitFor(t, c.out, "RESULT ")
		if line == "" {
			t.Fatalf("child %d ended without a RESULT", i)
		}
		for c.out.Scan() { // drain, so Wait sees EOF
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		var id string
		var reused bool
		if _, err := fmt.Sscanf(line, "RESULT %s %t", &id, &reused); err != nil {
			t.Fatalf("child %d printed %q: %v", i, line, err)
		}
		ids = append(ids, id)
		if !reused {
			fresh++
		}
	}
	if ids[0] != ids[1] {
		t.Errorf("children got applications %s and %s, want one", ids[0], ids[1])
	}
	if fresh != 1 {
		t.Errorf("%d children inserted, want exactly 1", fresh)
	}
	if n, err := s.CountApplications(ctx, d.ID); err != nil || n != 1 {
		t.Errorf("applications of the draft = %d (%v), want 1", n, err)
	}
}

// waitFor reads lines until one starts with prefix and returns it, or ""
// when the output ends first.
func waitFor(tb testing.TB, sc *bufio.Scanner, prefix string) string {
	tb.Helper()
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return sc.Text()
		}
	}
	return ""
}
