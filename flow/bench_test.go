package flow_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"assistant/checkpoints"
	"assistant/flow"
)

// benchState is about the size and shape of a real state (returns.State):
// a few strings, a reference with a time, a counter; ~190 bytes of JSON.
type benchState struct {
	Task      string    `json:"task,omitempty"`
	User      string    `json:"user,omitempty"`
	Order     string    `json:"order,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Stage     string    `json:"stage,omitempty"`
	DraftID   string    `json:"draft_id,omitempty"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	Step      int       `json:"step,omitempty"`
}

// reduceBench overwrites the fields an update sets.
func reduceBench(s, u benchState) benchState {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&s.Task, u.Task)
	set(&s.User, u.User)
	set(&s.Order, u.Order)
	set(&s.Reason, u.Reason)
	set(&s.Stage, u.Stage)
	set(&s.DraftID, u.DraftID)
	if !u.ExpiresAt.IsZero() {
		s.ExpiresAt = u.ExpiresAt
	}
	if u.Step != 0 {
		s.Step = u.Step
	}
	return s
}

// BenchmarkSuperstep measures one superstep of the engine: one op is one
// superstep of a run, written as one checkpoint. It includes decoding the
// state for the task and for the merge, running the node (trivial here: a
// partial update of two fields), encoding its update, decoding it again for
// the reducer, the reducer, the router, a new checkpoint id, encoding the
// state and the checkpoint Put.
//
// The thread is first parked after a node "init" (a static breakpoint,
// outside the timer); then one Resume runs b.N supersteps of "work", which
// routes back to itself until Step reaches b.N. Per run, not per op, come
// one Get of the head, the final snapshot and, for sqlite, the run's one
// durable commit: its last checkpoint goes in with PutDurable (the engine's
// Sync folded into that commit), so no separate Sync runs. These are spread
// over b.N ops and fade as b.N grows: use the default benchtime (or a large
// -benchtime Nx), not 10x, for figures.
//
// Durability of an op's checkpoint: memory keeps it in the process (no
// Syncer). sqlite uses OpenSQLite's defaults — WAL, synchronous=NORMAL — so
// each Put is its own committed BEGIN IMMEDIATE transaction that survives a
// process crash at once and a power loss only after the run's one durable
// commit. Its WAL checkpoints (SQLite's, every ~1000 pages) fall inside the
// timed ops as they would in a long run.
//
// parallel-3 fans out to three nodes per superstep (memory store): one op
// is then three concurrent tasks, each saving its update as a pending
// write (PutWrites), merged in name order into one checkpoint.
//
// Every run's thread keeps all its b.N checkpoints, so the store grows with
// b.N: the memory store holds them all in the heap.
func BenchmarkSuperstep(b *testing.B) {
	memory := func(testing.TB) flow.Checkpointer { return checkpoints.NewMemory() }
	b.Run("memory", func(b *testing.B) {
		benchSuperstep(b, memory, []string{"work"})
	})
	b.Run("sqlite", func(b *testing.B) {
		benchSuperstep(b, func(tb testing.TB) flow.Checkpointer {
			s, err := checkpoints.OpenSQLite(context.Background(), filepath.Join(tb.TempDir(), "c.sqlite"), checkpoints.SQLiteOptions{Create: true})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { s.Close() })
			return s
		}, []string{"work"})
	})
	b.Run("parallel-3", func(b *testing.B) {
		benchSuperstep(b, memory, []string{"work-a", "work-b", "work-c"})
	})
}

// benchSuperstep runs b.N supersteps of the nodes work, all in each
// superstep, in one Resume of a thread parked after "init".
func benchSuperstep(b *testing.B, open func(testing.TB) flow.Checkpointer, work []string) {
	ctx := context.Background()
	expires := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	prepare := func(ctx context.Context, s benchState) (benchState, error) {
		return benchState{Stage: "ready"}, nil
	}
	node := func(name string) flow.NodeFunc[benchState] {
		return func(ctx context.Context, s benchState) (benchState, error) {
			return benchState{Stage: name, Step: s.Step + 1}, nil
		}
	}
	// One router for every work node; the engine runs each next node once
	// however many nodes name it.
	route := func(s benchState) []string {
		if s.Step >= b.N {
			return []string{flow.End}
		}
		return work
	}
	g := flow.NewGraph(reduceBench).
		AddNode("init", prepare).
		AddEdge(flow.Start, "init")
	for _, n := range work {
		g.AddNode(n, node(n)).AddEdge("init", n).AddConditionalEdges(n, route)
	}
	r := mustCompile(b, g, flow.Options{
		Checkpointer:   open(b),
		InterruptAfter: []string{"init"},
		RecursionLimit: b.N,
	})
	input := benchState{
		Task: "return-25", User: "demo-user", Order: "A3003", Reason: "size",
		DraftID: "0197a3c2-5b1e-7c4d-9a8f-3e2d1c0b9a87", ExpiresAt: expires,
	}
	snap, err := r.Invoke(ctx, "bench", input)
	if err != nil {
		b.Fatal(err)
	}
	if !snap.AtBreakpoint() {
		b.Fatalf("invoke stopped at next %v, not at the breakpoint after init", snap.Next)
	}
	if raw, _ := json.Marshal(snap.Values); len(raw) < 150 || len(raw) > 250 {
		b.Fatalf("state is %d bytes of JSON, want about 200: %s", len(raw), raw)
	}

	b.ReportAllocs()
	// b.N, not b.Loop: one Resume runs all the ops, and the graph's router
	// must know b.N before it starts.
	b.ResetTimer()
	snap, err = r.Resume(ctx, "bench", flow.Command{})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if snap.Values.Step != b.N || len(snap.Next) != 0 || snap.Step != b.N {
		b.Fatalf("run ended at step %d (state step %d, next %v), want %d supersteps", snap.Step, snap.Values.Step, snap.Next, b.N)
	}
}
