package cmd

import (
	"bytes"
	"testing"
	"time"
)

// finish must return whether the batch reached its last row or stopped
// short of it (a stop, a failure): a bar left incomplete would otherwise
// keep the command waiting forever.
func TestProgressBarFinish(t *testing.T) {
	for _, tc := range []struct {
		name        string
		total, done int
	}{
		{"complete", 10, 10},
		{"stopped part-way", 10, 4},
		{"no row done", 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			set, finish := progressBar(&out, tc.total)
			if tc.done > 0 {
				set(tc.done)
			}
			ended := make(chan struct{})
			go func() { finish(); close(ended) }()
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatalf("finish did not return with %d of %d rows done", tc.done, tc.total)
			}
		})
	}
}
