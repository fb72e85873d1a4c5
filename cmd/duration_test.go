package cmd

import (
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
	} {
		got, err := parseDuration(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseDuration(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
