package variants_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"assistant/checkpoints"
	"assistant/flow"
	"assistant/flow/variants"
)

// newLab runs the experiments on a real SQLite checkpoint file, reopened for
// every step.
func newLab(t *testing.T, log *strings.Builder) *variants.Lab {
	t.Helper()
	path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
	lab := &variants.Lab{Open: func(ctx context.Context) (flow.Checkpointer, func(), error) {
		cp, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{Create: true})
		if err != nil {
			return nil, nil, err
		}
		return cp, func() { cp.Close() }, nil
	}}
	if log != nil {
		lab.Log = log
	}
	return lab
}

func TestStatic(t *testing.T) {
	got, err := variants.Static(context.Background(), newLab(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := variants.StaticResult{Variant: "static", CallsBefore: 0, Next: []string{"work"}, Question: false, CallsAfter: 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Static = %+v, want %+v", got, want)
	}
}

func TestParallel(t *testing.T) {
	var log strings.Builder
	got, err := variants.Parallel(context.Background(), newLab(t, &log))
	if err != nil {
		t.Fatal(err)
	}
	// A is not run again once answered; B runs once to ask and once with its
	// answer (answering only A does not run B).
	want := variants.ParallelResult{Variant: "parallel", Pending: []int{2, 1, 0}, Done: true, Calls: map[string]int{"A": 2, "B": 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parallel = %+v, want %+v", got, want)
	}
	if !strings.Contains(log.String(), "answered A by its id") {
		t.Errorf("text explanation lacks the steps:\n%s", log.String())
	}
}
