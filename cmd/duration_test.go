package cmd

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"300s", 300 * time.Second, true},
		{"1500ms", 1500 * time.Millisecond, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"2d30m", 48*time.Hour + 30*time.Minute, true},
		{"-1d", -24 * time.Hour, true},
		{"0", 0, true},
		{"d", 0, false},
		{"1.5d", 0, false},
		{"1d-2h", 0, false},
		{"1dd", 0, false},
		{"x", 0, false},
		{"", 0, false},
		{"99999999d", 0, false},
		{"65535d", 65535 * 24 * time.Hour, true},
		{"65535d2000000h", 0, false},
	} {
		got, err := parseDuration(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseDuration(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestParseDurationTooLarge: a day count past the limit says it is too
// large, not that it is no whole number.
func TestParseDurationTooLarge(t *testing.T) {
	for _, in := range []string{"100000000d", "65536d", "65535d2000000h"} {
		_, err := parseDuration(in)
		if err == nil || !strings.Contains(err.Error(), "too large (at most 65535d)") {
			t.Errorf("parseDuration(%q): %v, want it to say too large", in, err)
		}
	}
}
