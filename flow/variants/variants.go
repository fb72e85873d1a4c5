// Package variants holds the two engine experiments of `assistant variants`:
// a static breakpoint, and two parallel questions answered by id.
// Each step opens the checkpoint store anew, as a separate process would,
// and the result counts how often each node ran.
package variants

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"

	"assistant/flow"
)

// StaticResult is the JSON of the static variant.
type StaticResult struct {
	Variant     string   `json:"variant"`
	CallsBefore int      `json:"calls_before"`
	Next        []string `json:"next"`
	Question    bool     `json:"question"`
	CallsAfter  int      `json:"calls_after"`
}

// ParallelResult is the JSON of the parallel variant: pending
// questions after each step, and how often each node ran.
type ParallelResult struct {
	Variant string         `json:"variant"`
	Pending []int          `json:"pending"`
	Done    bool           `json:"done"`
	Calls   map[string]int `json:"calls"`
}

// variantState is the state of the experiment graphs: the answers each node got.
type variantState struct {
	Answers map[string]string `json:"answers,omitempty"`
}

func mergeVariant(s, u variantState) variantState {
	if len(u.Answers) > 0 {
		m := maps.Clone(s.Answers)
		if m == nil {
			m = map[string]string{}
		}
		maps.Copy(m, u.Answers)
		s.Answers = m
	}
	return s
}

// Lab is what the steps of an experiment share: how to open the checkpoint
// store (once per step, as a separate process would) and where the text
// explanation goes (nil for none).
type Lab struct {
	// Open opens the checkpoint store the experiment runs on; the returned
	// function closes it.
	Open func(ctx context.Context) (flow.Checkpointer, func(), error)
	Log  io.Writer

	mu    sync.Mutex
	calls map[string]int
}

func (l *Lab) ran(node string) {
	l.mu.Lock()
	if l.calls == nil {
		l.calls = map[string]int{}
	}
	l.calls[node]++
	l.mu.Unlock()
}

func (l *Lab) count(node string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[node]
}

func (l *Lab) say(format string, args ...any) {
	if l.Log != nil {
		fmt.Fprintf(l.Log, format+"\n", args...)
	}
}

// step opens the checkpoints file, compiles g over it and runs do: one step
// of an experiment, as one process would run it.
func (l *Lab) step(ctx context.Context, g *flow.Graph[variantState], opts flow.Options,
	do func(*flow.Runnable[variantState]) (*flow.Snapshot[variantState], error)) (*flow.Snapshot[variantState], error) {
	cp, closeStore, err := l.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	opts.Checkpointer = cp
	r, err := g.Compile(opts)
	if err != nil {
		return nil, err
	}
	return do(r)
}

// Static runs a one-node graph with a breakpoint before node work: work
// runs 0 times and the run pauses with next [work] and no question; a
// continue with no value runs it once.
func Static(ctx context.Context, l *Lab) (StaticResult, error) {
	g := flow.NewGraph(mergeVariant).
		AddNode("work", func(context.Context, variantState) (variantState, error) {
			l.ran("work")
			return variantState{}, nil
		}).
		AddEdge(flow.Start, "work").AddEdge("work", flow.End)
	opts := flow.Options{InterruptBefore: []string{"work"}}
	res := StaticResult{Variant: "static"}

	l.say("variant static: one node, work, with a breakpoint before it (InterruptBefore)")
	snap, err := l.step(ctx, g, opts, func(r *flow.Runnable[variantState]) (*flow.Snapshot[variantState], error) {
		return r.Invoke(ctx, "static", variantState{})
	})
	if err != nil {
		return res, err
	}
	res.CallsBefore, res.Next, res.Question = l.count("work"), snap.Next, snap.Waiting()
	l.say("1. start:    work ran %d times; next %v; question: %s; paused at breakpoint %q",
		res.CallsBefore, res.Next, yesNo(res.Question), snap.Breakpoint)

	snap, err = l.step(ctx, g, opts, func(r *flow.Runnable[variantState]) (*flow.Snapshot[variantState], error) {
		return r.Resume(ctx, "static", flow.Command{})
	})
	if err != nil {
		return res, err
	}
	res.CallsAfter = l.count("work")
	l.say("2. continue: (no answer given) work ran %d time; done: %s", res.CallsAfter, yesNo(snap.Done()))
	l.say("A breakpoint pauses without a question, so there is nothing to answer: the\n" +
		"snapshot has next [work] and no interrupts, and resume continues with no value.")
	return res, nil
}

// Parallel runs two parallel branches A and B that each ask a question and
// answers them one at a time by id: 2 pending, then 1 (B), then 0 and done.
func Parallel(ctx context.Context, l *Lab) (ParallelResult, error) {
	ask := func(node string) flow.NodeFunc[variantState] {
		return func(ctx context.Context, _ variantState) (variantState, error) {
			l.ran(node)
			v, err := flow.Interrupt[string](ctx, "question of "+node)
			if err != nil {
				return variantState{}, fmt.Errorf("branch %s: %w", node, err)
			}
			return variantState{Answers: map[string]string{node: v}}, nil
		}
	}
	g := flow.NewGraph(mergeVariant).
		AddNode("A", ask("A")).AddNode("B", ask("B")).
		AddEdge(flow.Start, "A").AddEdge(flow.Start, "B").
		AddEdge("A", flow.End).AddEdge("B", flow.End)
	res := ParallelResult{Variant: "parallel"}
	counts := func() string { return fmt.Sprintf("A ran %d, B ran %d", l.count("A"), l.count("B")) }

	l.say("variant parallel: branches A and B run in one superstep and each asks a question")
	snap, err := l.step(ctx, g, flow.Options{}, func(r *flow.Runnable[variantState]) (*flow.Snapshot[variantState], error) {
		return r.Invoke(ctx, "parallel", variantState{})
	})
	if err != nil {
		return res, err
	}
	res.Pending = append(res.Pending, len(snap.Interrupts))
	l.say("1. start:     %d pending %s; %s", len(snap.Interrupts), describePending(snap), counts())
	ids := map[string]string{}
	for _, in := range snap.Interrupts {
		ids[in.Node] = in.ID
	}

	for i, node := range []string{"A", "B"} {
		if ids[node] == "" {
			return res, fmt.Errorf("no question pending from %s", node)
		}
		answer := flow.Command{ResumeMap: map[string]any{ids[node]: "yes from " + node}}
		snap, err = l.step(ctx, g, flow.Options{}, func(r *flow.Runnable[variantState]) (*flow.Snapshot[variantState], error) {
			return r.Resume(ctx, "parallel", answer)
		})
		if err != nil {
			return res, err
		}
		res.Pending = append(res.Pending, len(snap.Interrupts))
		l.say("%d. answered %s by its id %s: %d pending %s; %s; done: %s",
			i+2, node, ids[node], len(snap.Interrupts), describePending(snap), counts(), yesNo(snap.Done()))
	}
	res.Done = snap.Done()
	res.Calls = map[string]int{"A": l.count("A"), "B": l.count("B")}
	l.say("node calls: A=%d B=%d", res.Calls["A"], res.Calls["B"])
	l.say("A ran twice: once to ask, once with its answer. Its update was then saved as a\n" +
		"pending write, so answering B did not run A again.\n" +
		"B ran twice too: once to ask, once with its answer. Answering only A did not\n" +
		"run B, because a task runs again only when every question it asked has an answer.")
	return res, nil
}

// describePending lists the pending questions as (node id …).
func describePending(snap *flow.Snapshot[variantState]) string {
	if len(snap.Interrupts) == 0 {
		return "()"
	}
	var parts []string
	for _, in := range snap.Interrupts {
		parts = append(parts, in.Node+" "+in.ID)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
