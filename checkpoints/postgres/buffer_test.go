package postgres_test

import (
	"testing"

	"assistant/checkpoints/checkpointstest"
	"assistant/flow"
	"assistant/internal/pgtest"
)

// TestBuffer runs the buffer's suite over the server: Other is a second
// pool on the same database (another process, or machine).
func TestBuffer(t *testing.T) {
	checkpointstest.RunBuffer(t, func(t *testing.T) checkpointstest.BufferStores {
		url := pgtest.Database(t)
		base := mustOpen(t, url)
		return checkpointstest.BufferStores{
			Base:  base,
			Other: mustOpen(t, url),
			Reopen: func(t *testing.T) flow.Checkpointer {
				base.Close()
				return mustOpen(t, url)
			},
		}
	})
}
