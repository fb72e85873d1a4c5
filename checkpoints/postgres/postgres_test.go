package postgres_test

import (
	"context"
	"testing"

	"assistant/checkpoints/checkpointstest"
	"assistant/checkpoints/postgres"
	"assistant/flow"
	"assistant/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// mustOpen opens the store on the database at url and closes it when tb
// ends.
func mustOpen(tb testing.TB, url string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite every flow.Checkpointer passes, each
// subtest on a database of its own.
func TestConformance(t *testing.T) {
	checkpointstest.Run(t, func(t *testing.T) flow.Checkpointer {
		return mustOpen(t, pgtest.Database(t))
	})
}
