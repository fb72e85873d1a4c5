package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartOfAnUnknownOrderMakesNoStores: start on a data dir or database
// that does not exist yet makes it with the teaching orders alone (or none
// with --teaching-orders=false); an order that would not be in it is exit
// 4, as on stores that exist, and nothing is made (a mistyped --data made
// a data dir full of teaching orders). An order that would be there is
// started as before.
func TestStartOfAnUnknownOrderMakesNoStores(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"UnknownOrder", []string{"start", "x1", "NOPE", "--reason", "size"}, 4},
		{"AnotherUsersTeachingOrder", []string{"--user", "other-user", "start", "x1", "A3003", "--reason", "size"}, 4},
		{"NoTeachingOrders", []string{"--teaching-orders=false", "start", "x1", "A3003", "--reason", "size"}, 4},
		{"TeachingOrder", []string{"start", "x1", "A3003", "--reason", "size"}, 0},
	}
	for _, tt := range tests {
		t.Run("DataDir/"+tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			_, stderr, code := run(t, dir, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (%s)", code, tt.code, stderr)
			}
			_, err := os.Stat(dir)
			if made := !errors.Is(err, fs.ErrNotExist); made != (tt.code == 0) {
				t.Fatalf("data dir made: %v, want %v (stat: %v)", made, tt.code == 0, err)
			}
			if tt.code == 4 && (strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not found for user")) {
				t.Errorf("stderr %q, want one line saying the order is not found", stderr)
			}
		})
		t.Run("Postgres/"+tt.name, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			_, stderr, code := pg.run(t, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (%s)", code, tt.code, stderr)
			}
			want := "0"
			if tt.code == 0 {
				want = "2"
			}
			if got := pg.query(t, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('checkpoints', 'business')`); got != want {
				t.Errorf("schemas made: %s, want %s", got, want)
			}
		})
	}
}
