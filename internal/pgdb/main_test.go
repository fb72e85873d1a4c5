package pgdb_test

import (
	"testing"

	"assistant/internal/pgtest"
)

// TestMain runs the tests through pgtest, which gives the PostgreSQL ones
// a server.
func TestMain(m *testing.M) { pgtest.Main(m) }
