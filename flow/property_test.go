package flow_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"assistant/checkpoints"
	"assistant/flow"
)

// minPropertyChecks is the number of random graphs TestDurableEquivalence
// tries when -rapid.checks is not given (rapid's own default is 100).
const minPropertyChecks = 200

// PS is the state of the random graphs.
type PS struct {
	Trace   []string       `json:"trace,omitempty"`
	Count   map[string]int `json:"count,omitempty"`   // runs of each node that finished
	Answers []string       `json:"answers,omitempty"` // answers, in the order the nodes got them
}

func reducePS(s, u PS) PS {
	s.Trace = append(slices.Clone(s.Trace), u.Trace...)
	s.Answers = append(slices.Clone(s.Answers), u.Answers...)
	if len(u.Count) > 0 {
		m := maps.Clone(s.Count)
		if m == nil {
			m = map[string]int{}
		}
		maps.Copy(m, u.Count)
		s.Count = m
	}
	return s
}

// nodeSpec is what a random node does: it asks asks questions on every
// every-th run (all at once when together, else one after the other),
// wrapping the interrupt error when wrap is set.
type nodeSpec struct {
	asks, every    int
	together, wrap bool
}

func (n nodeSpec) fn(c *calls, name string) flow.NodeFunc[PS] {
	return func(ctx context.Context, s PS) (PS, error) {
		c.inc(name)
		round := s.Count[name]
		var got []string
		if n.asks > 0 && round%n.every == 0 {
			var errs []error
			for q := range n.asks {
				v, err := flow.Interrupt[string](ctx, fmt.Sprintf("%s r%d q%d", name, round, q))
				if err != nil {
					if n.wrap {
						err = fmt.Errorf("ask %s: %w", name, err)
					}
					if n.together {
						errs = append(errs, err)
						continue
					}
					return PS{}, err
				}
				got = append(got, v)
			}
			if err := errors.Join(errs...); err != nil {
				return PS{}, err
			}
		}
		return PS{Trace: []string{name}, Count: map[string]int{name: round + 1}, Answers: got}, nil
	}
}

// randomGraph is a drawn graph: build makes it (identically each time) with
// node runs counted in c.
type randomGraph struct {
	build       func(c *calls) *flow.Graph[PS]
	before      []string
	after       []string
	description []string
}

// drawGraph draws a sequence of segments — a node, a fan-out with a join, a
// loop bounded by the state, or a subgraph — joined one after the other.
func drawGraph(t *rapid.T) randomGraph {
	type segment struct {
		entry, exit string
		add         func(g *flow.Graph[PS], c *calls, next string)
	}
	var desc []string
	names := 0
	specs := map[string]nodeSpec{}
	var outer []string // nodes of the outer graph: breakpoints may name them
	newNode := func() string {
		name := fmt.Sprintf("n%d", names)
		names++
		outer = append(outer, name)
		spec := nodeSpec{
			asks:     rapid.IntRange(0, 2).Draw(t, name+".asks"),
			every:    rapid.IntRange(1, 2).Draw(t, name+".every"),
			together: rapid.Bool().Draw(t, name+".together"),
			wrap:     rapid.Bool().Draw(t, name+".wrap"),
		}
		specs[name] = spec
		return name
	}
	var segs []segment
	for i := range rapid.IntRange(1, 4).Draw(t, "segments") {
		switch kind := rapid.SampledFrom([]string{"node", "fan", "loop", "sub"}).Draw(t, fmt.Sprintf("seg%d", i)); kind {
		case "node":
			n := newNode()
			desc = append(desc, n)
			segs = append(segs, segment{n, n, func(g *flow.Graph[PS], c *calls, next string) {
				g.AddNode(n, specs[n].fn(c, n)).AddEdge(n, next)
			}})
		case "fan":
			head := newNode()
			var branches [][]string
			for range rapid.IntRange(2, 3).Draw(t, "branches") {
				var b []string
				for range rapid.IntRange(1, 2).Draw(t, "branch length") {
					b = append(b, newNode())
				}
				branches = append(branches, b)
			}
			join := newNode()
			byRouter := rapid.Bool().Draw(t, "fan by router")
			desc = append(desc, fmt.Sprintf("%s→%v→%s", head, branches, join))
			segs = append(segs, segment{head, join, func(g *flow.Graph[PS], c *calls, next string) {
				g.AddNode(head, specs[head].fn(c, head))
				var heads, tails []string
				for _, b := range branches {
					for i, n := range b {
						g.AddNode(n, specs[n].fn(c, n))
						if i > 0 {
							g.AddEdge(b[i-1], n)
						}
					}
					heads, tails = append(heads, b[0]), append(tails, b[len(b)-1])
				}
				if byRouter {
					g.AddConditionalEdges(head, func(PS) []string { return slices.Clone(heads) })
				} else {
					for _, h := range heads {
						g.AddEdge(head, h)
					}
				}
				g.AddJoin(tails, join)
				g.AddNode(join, specs[join].fn(c, join)).AddEdge(join, next)
			}})
		case "loop":
			body, last := newNode(), newNode()
			bound := rapid.IntRange(1, 3).Draw(t, "bound")
			desc = append(desc, fmt.Sprintf("(%s→%s)×%d", body, last, bound))
			segs = append(segs, segment{body, last, func(g *flow.Graph[PS], c *calls, next string) {
				g.AddNode(body, specs[body].fn(c, body)).AddNode(last, specs[last].fn(c, last)).AddEdge(body, last)
				g.AddConditionalEdges(last, func(s PS) []string {
					if s.Count[last] < bound {
						return []string{body}
					}
					return []string{next}
				})
			}})
		case "sub":
			parent := newNode()
			var child []string
			for range rapid.IntRange(1, 2).Draw(t, "child length") {
				child = append(child, newNode())
				outer = outer[:len(outer)-1]
			}
			parallel := len(child) == 2 && rapid.Bool().Draw(t, "child parallel")
			desc = append(desc, fmt.Sprintf("%s[%v parallel=%v]", parent, child, parallel))
			segs = append(segs, segment{parent, parent, func(g *flow.Graph[PS], c *calls, next string) {
				cg := flow.NewGraph(reducePS)
				for i, n := range child {
					cg.AddNode(n, specs[n].fn(c, n))
					switch {
					case parallel:
						cg.AddEdge(flow.Start, n).AddEdge(n, flow.End)
					case i == 0:
						cg.AddEdge(flow.Start, n)
					default:
						cg.AddEdge(child[i-1], n)
					}
				}
				if !parallel {
					cg.AddEdge(child[len(child)-1], flow.End)
				}
				sub := flow.SubgraphNode(cg,
					func(p PS) PS { return PS{Count: p.Count} },
					func(ch PS) PS { return ch })
				g.AddNode(parent, func(ctx context.Context, s PS) (PS, error) {
					c.inc(parent)
					upd, err := sub(ctx, s)
					upd.Trace = append(upd.Trace, parent)
					return upd, err
				}).AddEdge(parent, next)
			}})
		}
	}
	var before, after []string
	for _, n := range outer {
		if rapid.IntRange(0, 9).Draw(t, n+".before") == 0 {
			before = append(before, n)
		}
		if rapid.IntRange(0, 9).Draw(t, n+".after") == 0 {
			after = append(after, n)
		}
	}
	return randomGraph{
		build: func(c *calls) *flow.Graph[PS] {
			g := flow.NewGraph(reducePS).AddEdge(flow.Start, segs[0].entry)
			for i, s := range segs {
				next := flow.End
				if i+1 < len(segs) {
					next = segs[i+1].entry
				}
				s.add(g, c, next)
			}
			return g
		},
		before:      before,
		after:       after,
		description: desc,
	}
}

// question is a pending interrupt without its id (ids differ between
// threads because checkpoint ids do).
type question struct {
	Node  string
	Idx   int
	Path  string
	Value string
}

func questions(s *flow.Snapshot[PS]) []question {
	var out []question
	for _, in := range s.Interrupts {
		out = append(out, question{in.Node, in.Idx, strings.Join(in.Path, "/"), string(in.Value)})
	}
	return out
}

// TestDurableEquivalence runs random graphs twice with the same answers:
// once in one engine over memory, once over a SQLite file with a fresh
// store and engine for every answer, as separate processes would. Both must
// ask the same questions, run each node as often and end in the same state.
func TestDurableEquivalence(t *testing.T) {
	t.Parallel()
	if f := flag.Lookup("rapid.checks"); f != nil && !isFlagSet("rapid.checks") {
		if err := f.Value.Set(fmt.Sprint(minPropertyChecks)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cases := 0
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		cases++
		rg := drawGraph(t)
		opts := flow.Options{InterruptBefore: rg.before, InterruptAfter: rg.after, RecursionLimit: 1000}

		memCalls, sqlCalls := newCalls(), newCalls()
		memOpts := opts
		memOpts.Checkpointer = checkpoints.NewMemory()
		mem, err := rg.build(memCalls).Compile(memOpts)
		if err != nil {
			t.Fatalf("compile %v: %v", rg.description, err)
		}
		// A directory per case: opening a new file reads the identity of the
		// other *.sqlite files beside it (a data dir's second file adopts the
		// first's), so one shared directory would make each open read every
		// earlier case's file.
		caseDir := filepath.Join(dir, fmt.Sprintf("case%d", cases))
		if err := os.Mkdir(caseDir, 0o700); err != nil {
			t.Fatalf("mkdir: %v", err)
		}
		path := filepath.Join(caseDir, "checkpoints.sqlite")
		// durable runs one call in a fresh store and engine over path.
		durable := func(call func(r *flow.Runnable[PS]) (*flow.Snapshot[PS], error)) (*flow.Snapshot[PS], error) {
			cp, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{Create: true, Synchronous: "NORMAL"})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer cp.Close()
			o := opts
			o.Checkpointer = cp
			r, err := rg.build(sqlCalls).Compile(o)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			return call(r)
		}

		ms, merr := mem.Invoke(ctx, "p", PS{})
		ds, derr := durable(func(r *flow.Runnable[PS]) (*flow.Snapshot[PS], error) { return r.Invoke(ctx, "p", PS{}) })
		for round := 0; ; round++ {
			if merr != nil || derr != nil {
				t.Fatalf("graph %v round %d: memory err %v, sqlite err %v", rg.description, round, merr, derr)
			}
			if !reflect.DeepEqual(questions(ms), questions(ds)) || !reflect.DeepEqual(ms.Values, ds.Values) || !slices.Equal(ms.Next, ds.Next) {
				t.Fatalf("graph %v round %d differs:\nmemory %v %+v next %v\nsqlite %v %+v next %v",
					rg.description, round, questions(ms), ms.Values, ms.Next, questions(ds), ds.Values, ds.Next)
			}
			if ms.Done() {
				break
			}
			if round > 500 {
				t.Fatalf("graph %v: no end after %d rounds", rg.description, round)
			}
			var mc, dc flow.Command
			switch {
			case ms.AtBreakpoint():
				// continue: no value
			case len(ms.Interrupts) == 0:
				t.Fatalf("graph %v round %d: stopped with next %v and neither a question nor a breakpoint", rg.description, round, ms.Next)
			case len(ms.Interrupts) == 1 && rapid.Bool().Draw(t, "single value"):
				a := fmt.Sprintf("%s=%d", ms.Interrupts[0].Value, rapid.IntRange(0, 9).Draw(t, "answer"))
				mc, dc = flow.Command{Resume: a}, flow.Command{Resume: a}
			default:
				mc.ResumeMap, dc.ResumeMap = map[string]any{}, map[string]any{}
				for i, in := range ms.Interrupts {
					if i > 0 && !rapid.Bool().Draw(t, "answer this one") {
						continue
					}
					a := fmt.Sprintf("%s=%d", in.Value, rapid.IntRange(0, 9).Draw(t, "answer"))
					mc.ResumeMap[in.ID] = a
					dc.ResumeMap[ds.Interrupts[i].ID] = a
				}
			}
			ms, merr = mem.Resume(ctx, "p", mc)
			ds, derr = durable(func(r *flow.Runnable[PS]) (*flow.Snapshot[PS], error) { return r.Resume(ctx, "p", dc) })
		}
		if m, d := memCalls.snapshot(), sqlCalls.snapshot(); !reflect.DeepEqual(m, d) {
			t.Fatalf("graph %v: node runs differ:\nmemory %v\nsqlite %v", rg.description, m, d)
		}
	})
	if cases < minPropertyChecks && !testing.Short() && !isFlagSet("rapid.checks") {
		t.Fatalf("ran %d cases, want at least %d", cases, minPropertyChecks)
	}
}

func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
