package flow_test

import (
	"context"
	"encoding/json"
	"testing"

	"assistant/checkpoints"
	"assistant/flow"
)

// A task that asked twice keeps its first answer in the snapshot while its
// second question is open: a continued run replays it, and a caller can see
// what was already answered.
func TestSnapshotTaskAnswers(t *testing.T) {
	ctx := context.Background()
	type st struct{ A, B string }
	g := flow.NewGraph(func(s, u st) st {
		if u.A != "" {
			s.A = u.A
		}
		if u.B != "" {
			s.B = u.B
		}
		return s
	})
	g.AddNode("ask", func(ctx context.Context, _ st) (st, error) {
		a, err := flow.Interrupt[string](ctx, "first")
		if err != nil {
			return st{}, err
		}
		b, err := flow.Interrupt[string](ctx, "second")
		if err != nil {
			return st{}, err
		}
		return st{A: a, B: b}, nil
	})
	g.AddEdge(flow.Start, "ask").AddEdge("ask", flow.End)
	r, err := g.Compile(flow.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := r.Invoke(ctx, "t", st{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tasks) != 1 || snap.Tasks[0].Answers != nil {
		t.Fatalf("before any answer: tasks %+v, want one task with no answers", snap.Tasks)
	}
	if snap, err = r.Resume(ctx, "t", flow.Command{Resume: "yes"}); err != nil {
		t.Fatal(err)
	}
	got := snap.Tasks[0].Answers
	var first string
	if len(got) != 1 || json.Unmarshal(got[0], &first) != nil || first != "yes" {
		t.Fatalf("after the first answer: Answers = %v, want {0: \"yes\"}", got)
	}
	if snap, err = r.Resume(ctx, "t", flow.Command{Resume: "no"}); err != nil {
		t.Fatal(err)
	}
	if !snap.Done() || snap.Values != (st{A: "yes", B: "no"}) {
		t.Fatalf("done %v values %+v, want done with yes/no", snap.Done(), snap.Values)
	}
}
