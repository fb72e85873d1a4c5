package cmd

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

// EnvClock names the environment variable of the test clock (docs/ci.md
// "A test clock"): a duration ahead of the wall clock ("+10m", "2h",
// "1d"), by which the command reads the time later than it is, so a CI
// job or a local trial sees a draft expire without sleeping. It only moves
// the clock forward: a negative duration is refused (exit 2), nothing
// opened. While it is set every command says so on stderr, first.
const EnvClock = "ASSISTANT_CLOCK"

// applyTestClock reads EnvClock for command c into a.clockAhead and, when
// it is set, says so on stderr. Help and completion neither read it nor
// print anything. Errors: ErrInvalid for a value that is not a duration, or
// moves the clock back.
func (a *app) applyTestClock(c *cobra.Command) error {
	raw, ok := os.LookupEnv(EnvClock)
	if !ok || raw == "" || !readsClock(c) {
		return nil
	}
	d, err := parseDuration(raw)
	if err != nil {
		return usageErr("%s: %v; it is how far ahead of the wall clock commands read the time, such as +10m or 2h", EnvClock, err)
	}
	if d < 0 {
		return usageErr("%s=%s would move the clock back; the test clock only moves forward: give a duration ahead, such as +10m, or unset it", EnvClock, raw)
	}
	a.clockAhead = d
	a.note(testClockNote(raw, d))
	return nil
}

// testClockNote is the stderr line of a command run with the test clock
// set to raw, d ahead.
func testClockNote(raw string, d time.Duration) string {
	return "test clock " + EnvClock + "=" + strings.TrimSpace(raw) + ": this command reads the time " + d.String() + " ahead of the wall clock"
}

// readsClock: command c reads or stamps times (every command but help and
// the completion scripts and requests).
func readsClock(c *cobra.Command) bool {
	path := commandPath(c)
	return path != "help" && path != "completion" && !strings.HasPrefix(path, "completion ") && !strings.HasPrefix(path, "__complete")
}

// clock is the service's wall clock moved by the test clock: local (the
// process's wall clock, or the server's as measured) plus a.clockAhead.
func (a *app) clock(local func() time.Time) func() time.Time {
	if a.clockAhead == 0 {
		return local
	}
	ahead := a.clockAhead
	return func() time.Time { return local().Add(ahead) }
}

// now is the time as the command's service reads it on a data dir
// (returns.WallClock, moved by the test clock).
func (a *app) now() time.Time { return a.clock(returns.WallClock)() }
