package runs

import (
	"testing"

	"assistant/internal/pgtest"
)

// TestMain runs the package's tests, starting a throw-away PostgreSQL
// server when a test asks for one (pgtest.Database) and stopping it at the
// end.
func TestMain(m *testing.M) { pgtest.Main(m) }
