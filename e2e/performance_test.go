package e2e

// Start-up (docs/performance.md "What keeps it fast"): a command pays at
// package init only for what every command needs.

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// initLine is one line of GODEBUG=inittrace=1: a package's init, the
// bytes and allocations it made.
var initLine = regexp.MustCompile(`(?m)^init (\S+) @.* clock, (\d+) bytes, (\d+) allocs$`)

// TestStartUpInitAllocatesLittle: the package inits of the binary, which
// every command runs, allocate under 512 KiB in all (the metrics library
// of `assistant serve`, client_golang, registers its default collectors at
// init: about 260 KiB of it) and under 16 KiB in any one of assistant's
// packages (the schema steps of each store, the statement texts an import
// alone uses and the regular expressions of an error or a completion
// script are made on first use, not at init). Counted in bytes, not timed.
func TestStartUpInitAllocatesLittle(t *testing.T) {
	t.Parallel()
	c := exec.Command(assistantBin(), "--version")
	c.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v: %s", err, out)
	}
	lines := initLine.FindAllStringSubmatch(string(out), -1)
	if len(lines) < 10 {
		t.Fatalf("found %d init lines in:\n%s", len(lines), out)
	}
	total := 0
	for _, m := range lines {
		n, _ := strconv.Atoi(m[2])
		total += n
		if ours := regexp.MustCompile(`^assistant(/|$)`).MatchString(m[1]); ours && n > 16<<10 {
			t.Errorf("init of %s allocated %d bytes (%s allocs), want at most 16 KiB", m[1], n, m[3])
		}
	}
	if total > 512<<10 {
		t.Errorf("package inits allocated %d bytes in all, want at most 512 KiB", total)
	}
}
