package flow_test

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"assistant/checkpoints"
	"assistant/flow"
)

// St is the state of the test graphs: a trace of the nodes that wrote, the
// answers they got, and a counter for loops.
type St struct {
	Trace   []string          `json:"trace,omitempty"`
	Answers map[string]string `json:"answers,omitempty"`
	N       int               `json:"n,omitempty"`
}

// reduce appends Trace, merges Answers and overwrites N when set. It never
// keeps a reference to the update.
func reduce(s, u St) St {
	s.Trace = append(slices.Clone(s.Trace), u.Trace...)
	if len(u.Answers) > 0 {
		m := maps.Clone(s.Answers)
		if m == nil {
			m = map[string]string{}
		}
		maps.Copy(m, u.Answers)
		s.Answers = m
	}
	if u.N != 0 {
		s.N = u.N
	}
	return s
}

// calls counts node runs; safe for parallel tasks.
type calls struct {
	mu sync.Mutex
	m  map[string]int
}

func newCalls() *calls { return &calls{m: map[string]int{}} }

func (c *calls) inc(node string) {
	c.mu.Lock()
	c.m[node]++
	c.mu.Unlock()
}

func (c *calls) get(node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[node]
}

func (c *calls) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.m)
}

// wantCalls fails the test unless every node in want ran exactly that often.
func (c *calls) want(tb testing.TB, want map[string]int) {
	tb.Helper()
	for node, n := range want {
		if got := c.get(node); got != n {
			tb.Errorf("node %s ran %d times, want %d (all: %v)", node, got, n, c.snapshot())
		}
	}
}

// step is a node that counts its runs and appends its name to the trace.
func step(c *calls, name string) flow.NodeFunc[St] {
	return func(ctx context.Context, s St) (St, error) {
		c.inc(name)
		return St{Trace: []string{name}}, nil
	}
}

// ask is a node that asks one question and records the answer.
func ask(c *calls, name string) flow.NodeFunc[St] {
	return func(ctx context.Context, s St) (St, error) {
		c.inc(name)
		v, err := flow.Interrupt[string](ctx, "question of "+name)
		if err != nil {
			return St{}, err
		}
		return St{Trace: []string{name}, Answers: map[string]string{name: v}}, nil
	}
}

// store names a way to make an empty Checkpointer for a test.
type store struct {
	name string
	open func(tb testing.TB) flow.Checkpointer
}

// stores are the Checkpointers every semantic test runs against.
var stores = []store{
	{"Memory", func(testing.TB) flow.Checkpointer { return checkpoints.NewMemory() }},
	{"SQLite", func(tb testing.TB) flow.Checkpointer {
		return mustOpenSQLite(tb, filepath.Join(tb.TempDir(), "checkpoints.sqlite"))
	}},
}

// eachStore runs test as a subtest per store.
func eachStore(t *testing.T, test func(t *testing.T, open func(testing.TB) flow.Checkpointer)) {
	t.Helper()
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			test(t, s.open)
		})
	}
}

// mustOpenSQLite opens (creating) the checkpoints file at path and closes it
// when the test ends.
func mustOpenSQLite(tb testing.TB, path string) *checkpoints.SQLite {
	tb.Helper()
	s, err := checkpoints.OpenSQLite(context.Background(), path, checkpoints.SQLiteOptions{Create: true})
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// mustCompile compiles g or fails the test.
func mustCompile[S any](tb testing.TB, g *flow.Graph[S], opts flow.Options) *flow.Runnable[S] {
	tb.Helper()
	r, err := g.Compile(opts)
	if err != nil {
		tb.Fatalf("compile: %v", err)
	}
	return r
}

// must returns a function that fails the test when a run returned an
// error, and otherwise gives its snapshot: must(t)(r.Invoke(…)).
func must(tb testing.TB) func(*flow.Snapshot[St], error) *flow.Snapshot[St] {
	return func(snap *flow.Snapshot[St], err error) *flow.Snapshot[St] {
		tb.Helper()
		if err != nil {
			tb.Fatalf("run: %v", err)
		}
		return snap
	}
}

// byNode returns the id of the pending question asked by node, failing the
// test when there is none.
func byNode[S any](tb testing.TB, snap *flow.Snapshot[S], node string) string {
	tb.Helper()
	for _, in := range snap.Interrupts {
		if in.Node == node {
			return in.ID
		}
	}
	tb.Fatalf("no question pending from node %s (pending: %v)", node, snap.Interrupts)
	return ""
}

// pendingNodes lists the nodes of the pending questions, in snapshot order.
func pendingNodes[S any](snap *flow.Snapshot[S]) []string {
	var out []string
	for _, in := range snap.Interrupts {
		out = append(out, in.Node)
	}
	return out
}
