package cmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// durationValue is a flag holding a time.Duration written as Go writes
// one (300s, 1h30m, 1500ms) or with a day unit, 24 hours (30d, 1d12h), as
// the time flags of docs/cli.md "Conventions" accept.
type durationValue time.Duration

// newDurationValue sets *p to def and returns the flag value that writes
// to it.
func newDurationValue(def time.Duration, p *time.Duration) *durationValue {
	*p = def
	return (*durationValue)(p)
}

// Set parses s: an optional leading count of days ("30d") followed by
// anything time.ParseDuration accepts. Errors say what was given.
func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

// String prints the duration as time.Duration does.
func (d *durationValue) String() string { return time.Duration(*d).String() }

// Type names the value in cobra's help.
func (d *durationValue) Type() string { return "duration" }

// maxDays is the largest day count a duration may hold: the count is
// read as 16 bits, 65535 days (about 179 years), far below the 106,751
// days a time.Duration holds.
const maxDays = 1<<16 - 1

// parseDuration is time.ParseDuration with a day unit: "30d", "1d12h",
// "2d30m". Days are 24 hours (UTC has no daylight saving). A negative
// sign applies to the whole value.
func parseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	neg := strings.HasPrefix(in, "-")
	body := strings.TrimPrefix(strings.TrimPrefix(in, "-"), "+")
	i := strings.IndexByte(body, 'd')
	if i < 0 {
		v, err := time.ParseDuration(in)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q (use units d, h, m, s, ms: 30d, 1h30m, 300s)", s)
		}
		return v, nil
	}
	days, err := strconv.ParseUint(body[:i], 10, 16)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("invalid duration %q: too large (at most %dd)", s, maxDays)
	}
	if err != nil || i == 0 {
		return 0, fmt.Errorf("invalid duration %q (a day count is a whole number: 30d, 1d12h)", s)
	}
	v := time.Duration(days) * 24 * time.Hour
	if rest := body[i+1:]; rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
			return 0, fmt.Errorf("invalid duration %q (use units d, h, m, s, ms: 30d, 1d12h, 300s)", s)
		}
		if r > math.MaxInt64-v {
			return 0, fmt.Errorf("invalid duration %q: too large (at most %dd)", s, maxDays)
		}
		v += r
	}
	if neg {
		v = -v
	}
	return v, nil
}
