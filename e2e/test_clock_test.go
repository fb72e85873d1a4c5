package e2e

// docs/ci.md "A test clock": ASSISTANT_CLOCK moves the time a command reads
// forward, never back, and every command says so while it is set.

import (
	"os"
	"strings"
	"testing"
)

// TestTestClockExpiresADraftWithoutSleeping runs the block of docs/ci.md
// "A test clock" as it is written: the draft of ten minutes has expired for
// a wait under a clock eleven minutes ahead, at once, and recover ends the
// task failed; every command under the clock said so on stderr.
func TestTestClockExpiresADraftWithoutSleeping(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errOut, code := runShell(t, dir, docScript(t, "docs/ci.md", "A test clock"))
	if code != 0 {
		t.Fatalf("the block exited %d; stdout %q; stderr %q", code, out, errOut)
	}
	if !strings.Contains(out, "wait exited 6") || !strings.Contains(out, `"code": "draft_expired"`) {
		t.Errorf("stdout %q: want wait to exit 6 with draft_expired", out)
	}
	note := "assistant: test clock ASSISTANT_CLOCK=+11m: this command reads the time 11m0s ahead of the wall clock\n"
	if got := strings.Count(errOut, note); got != 2 || strings.TrimSpace(strings.ReplaceAll(errOut, note, "")) != "" {
		t.Errorf("stderr %q: want the test clock's line once for each of the two commands under it, and nothing else", errOut)
	}
	v := mustRun(t, dir+"/data", "show", "return-25")
	if v["status"] != "failed" {
		t.Errorf("after recover under the test clock: status %v, want failed", v["status"])
	}
}

// TestTestClockOnlyMovesForward: a clock set back, or to no duration, is
// exit 2 before anything is opened (a data dir is not even made); a clock
// ahead says so first, on every command.
func TestTestClockOnlyMovesForward(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, clock string
		code        int
		says        string
	}{
		{"Back", "-1h", 2, "only moves forward"},
		{"BackInDays", "-1d", 2, "only moves forward"},
		{"NotADuration", "tomorrow", 2, `invalid duration "tomorrow"`},
		{"Ahead", "+90s", 0, "reads the time 1m30s ahead of the wall clock"},
		{"AheadWithoutSign", "2d", 0, "reads the time 48h0m0s ahead of the wall clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir() + "/data"
			_, errOut, code := runIn(t, dir, []string{"ASSISTANT_CLOCK=" + tc.clock}, "start", "r1", "A3003", "--reason", "size")
			if code != tc.code || !strings.Contains(errOut, tc.says) {
				t.Fatalf("ASSISTANT_CLOCK=%s start: exit %d, stderr %q; want exit %d saying %q", tc.clock, code, errOut, tc.code, tc.says)
			}
			if tc.code != 0 {
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("a refused test clock made the data dir %s", dir)
				}
				return
			}
			if !strings.HasPrefix(errOut, "assistant: test clock ASSISTANT_CLOCK="+tc.clock+": ") {
				t.Errorf("stderr %q: want the test clock's line first", errOut)
			}
			if _, errOut, _ := run(t, dir, "show", "r1"); errOut != "" {
				t.Errorf("show without the test clock printed %q on stderr; want nothing", errOut)
			}
		})
	}
}
