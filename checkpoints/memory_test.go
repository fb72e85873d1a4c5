package checkpoints_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"

	"assistant/checkpoints"
	"assistant/checkpoints/checkpointstest"
	"assistant/flow"
)

func TestMemory(t *testing.T) {
	checkpointstest.Run(t, func(t *testing.T) flow.Checkpointer {
		return checkpoints.NewMemory()
	})
}

func TestMemoryPutWritesUnknownCheckpoint(t *testing.T) {
	err := checkpoints.NewMemory().PutWrites(context.Background(), "t1", "nope", []flow.Write{{TaskID: "a"}})
	if !errors.Is(err, checkpoints.ErrUnknownCheckpoint) {
		t.Errorf("PutWrites = %v, want ErrUnknownCheckpoint", err)
	}
}

func BenchmarkMemoryPut(b *testing.B) {
	benchmarkPut(b, checkpoints.NewMemory())
}

// benchmarkPut measures one superstep's storage work: a Put of the next
// checkpoint and a PutWrites of one task's update against it.
func benchmarkPut(b *testing.B, s flow.Checkpointer) {
	ctx := context.Background()
	values := json.RawMessage(`{"task":"return-25","order":"A3003","reason":"size","trace":["lookup","prepare"]}`)
	writes := []flow.Write{{TaskID: "task-1", Node: "prepare", Kind: flow.WriteUpdate, Value: json.RawMessage(`{"draft_id":"d-1"}`)}}
	parent := ""
	step := -1
	b.ReportAllocs()
	for b.Loop() {
		cp := &flow.Checkpoint{
			ThreadID: "bench",
			ID:       uuid.Must(uuid.NewV7()).String(),
			ParentID: parent,
			Format:   1,
			Values:   values,
			Next:     []string{"review"},
			Metadata: flow.Metadata{Source: flow.SourceLoop, Step: step},
		}
		if err := s.Put(ctx, cp); err != nil {
			b.Fatal(err)
		}
		if err := s.PutWrites(ctx, "bench", cp.ID, writes); err != nil {
			b.Fatal(err)
		}
		parent = cp.ID
		step++
	}
}

// TestGetContextNamesEveryID: a Get error's context names the thread and
// the checkpoint, or says it is the head; never an empty id ("t/").
func TestGetContextNamesEveryID(t *testing.T) {
	for _, tc := range []struct{ thread, id, want string }{
		{"t1", "c1", "get checkpoint t1/c1"},
		{"t1", "", "get the head checkpoint of t1"},
	} {
		if got := checkpoints.GetContext(tc.thread, tc.id); got != tc.want {
			t.Errorf("GetContext(%q, %q) = %q, want %q", tc.thread, tc.id, got, tc.want)
		}
	}
}
