package flow_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"assistant/flow"
)

// approval builds Start → review (asks) → submit → End.
func approval(c *calls) *flow.Graph[St] {
	return flow.NewGraph(reduce).
		AddNode("review", ask(c, "review")).AddNode("submit", step(c, "submit")).
		AddEdge(flow.Start, "review").AddEdge("review", "submit").AddEdge("submit", flow.End)
}

// TestConcurrentResume resumes one thread from two engines at the same
// moment: both have read the same head before either writes.
// Exactly one commits; the other gets ErrConflict; the thread holds the
// winner's answer and nothing else.
func TestConcurrentResume(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// open returns the store of engine i; SQLite engines get their own
		// connection pool on one file, as two processes would.
		open func(t *testing.T) func(i int) flow.Checkpointer
	}{
		{"Memory", func(t *testing.T) func(int) flow.Checkpointer {
			m := stores[0].open(t)
			return func(int) flow.Checkpointer { return m }
		}},
		{"SQLite", func(t *testing.T) func(int) flow.Checkpointer {
			path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
			return func(int) flow.Checkpointer { return mustOpenSQLite(t, path) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			open := tc.open(t)
			c := newCalls()
			setup := mustCompile(t, approval(c), flow.Options{Checkpointer: open(0)})
			must(t)(setup.Invoke(t.Context(), "t1", St{}))

			ready := make(chan struct{}, 2)
			release := make(chan struct{})
			engines := make([]*flow.Runnable[St], 2)
			for i := range engines {
				gate := &readGate{Checkpointer: open(i), wait: func() {
					ready <- struct{}{}
					<-release
				}}
				engines[i] = mustCompile(t, approval(c), flow.Options{Checkpointer: gate})
			}
			answers := []string{"from engine 0", "from engine 1"}
			done := make(chan int, 2)
			results := make([]error, 2)
			for i, r := range engines {
				go func() {
					_, results[i] = r.Resume(context.Background(), "t1", flow.Command{Resume: answers[i]})
					done <- i
				}()
			}
			for n := 0; n < 2; {
				select {
				case <-ready:
					n++
				case i := <-done:
					close(release)
					t.Fatalf("engine %d ended before both read the head: %v", i, results[i])
				}
			}
			close(release) // both have read the same head: go
			<-done
			<-done

			winner := -1
			for i, err := range results {
				switch {
				case err == nil:
					if winner >= 0 {
						t.Fatalf("both engines committed")
					}
					winner = i
				case !errors.Is(err, flow.ErrConflict):
					t.Fatalf("engine %d: err %v, want nil or ErrConflict", i, err)
				}
			}
			if winner < 0 {
				t.Fatalf("no engine committed: %v", results)
			}
			snap := must(t)(setup.State(t.Context(), "t1"))
			if !snap.Done() || snap.Values.Answers["review"] != answers[winner] {
				t.Fatalf("values %+v done %v, want the answer of engine %d", snap.Values, snap.Done(), winner)
			}
			if want := []string{"review", "submit"}; !slices.Equal(snap.Values.Trace, want) {
				t.Fatalf("trace %v, want %v: the loser's update must not land", snap.Values.Trace, want)
			}
			hist, err := setup.History(t.Context(), "t1", 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(hist); i++ {
				if hist[i].ParentID != hist[i+1].CheckpointID {
					t.Fatalf("history is not one chain: %d's parent %s, next is %s", i, hist[i].ParentID, hist[i+1].CheckpointID)
				}
			}
			// review: the first run that asked, then once per engine.
			c.want(t, map[string]int{"review": 3, "submit": 1})
		})
	}
}

// readGate is a Checkpointer whose first Get of a thread's head calls wait
// after reading it: a test holds engines there until all have read the same
// head.
type readGate struct {
	flow.Checkpointer
	once sync.Once
	wait func()
}

func (g *readGate) Get(ctx context.Context, thread, id string) (*flow.Checkpoint, error) {
	cp, err := g.Checkpointer.Get(ctx, thread, id)
	if id == "" {
		g.once.Do(g.wait)
	}
	return cp, err
}
