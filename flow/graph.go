package flow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// Reserved node names for the entry and exit of a graph.
const (
	Start = "__start__"
	End   = "__end__"
)

// DefaultRecursionLimit is the number of supersteps one invocation (Invoke or
// Resume) may run before it stops with a *RecursionLimitError. It counts one
// invocation, not the thread's whole life, so a thread resumed many times
// never reaches it by accident.
const DefaultRecursionLimit = 30

// NodeFunc is the work of one node. It receives the state as of the last
// checkpoint and returns a partial update that the graph's Reducer merges.
// A node may run more than once (after a crash, or when resumed after an
// Interrupt, it runs again from its start): put side effects after the
// interrupt or key them with an idempotency key.
type NodeFunc[S any] func(ctx context.Context, state S) (S, error)

// Reducer merges a node's update into the state and returns the new state.
// It is called once per finished task, in the order of the sorted node names,
// so parallel tasks merge deterministically. It must not keep references to
// update that the node may change later.
type Reducer[S any] func(state, update S) S

// Router chooses the nodes that follow a node from the state after the
// superstep; it may return End, or several nodes to fan out.
type Router[S any] func(state S) []string

type join struct {
	from []string
	to   string
}

// Graph is a builder of a state graph over the state type S. Add nodes and
// edges, then Compile it with a Checkpointer. Building errors (an unknown
// node, a duplicate name) are collected and returned by Compile.
type Graph[S any] struct {
	reducer  Reducer[S]
	nodes    map[string]NodeFunc[S]
	edges    map[string][]string
	routers  map[string]Router[S]
	joins    []join
	format   int
	upgrades map[int]Upgrade
	errs     []error
}

// Upgrade turns the JSON of a state written at format version v into the JSON
// of version v+1. It is registered with Graph.StateFormat.
type Upgrade func(old []byte) ([]byte, error)

// NewGraph returns an empty graph whose updates are merged by reducer.
func NewGraph[S any](reducer Reducer[S]) *Graph[S] {
	return &Graph[S]{
		reducer:  reducer,
		nodes:    map[string]NodeFunc[S]{},
		edges:    map[string][]string{},
		routers:  map[string]Router[S]{},
		format:   1,
		upgrades: map[int]Upgrade{},
	}
}

// AddNode adds a node. Names must be unique, non-empty and not Start or End.
func (g *Graph[S]) AddNode(name string, fn NodeFunc[S]) *Graph[S] {
	switch {
	case name == "" || name == Start || name == End:
		g.errs = append(g.errs, fmt.Errorf("add node: reserved or empty name %q", name))
	case g.nodes[name] != nil:
		g.errs = append(g.errs, fmt.Errorf("add node %s: duplicate name", name))
	case fn == nil:
		g.errs = append(g.errs, fmt.Errorf("add node %s: nil function", name))
	default:
		g.nodes[name] = fn
	}
	return g
}

// AddEdge makes to run in the superstep after from. Several edges leaving one
// node fan out: their targets run as tasks of one superstep. A node reached
// by several edges in the same superstep runs once.
func (g *Graph[S]) AddEdge(from, to string) *Graph[S] {
	g.edges[from] = append(g.edges[from], to)
	return g
}

// AddConditionalEdges routes from a node by the state after its superstep.
// The router returns the next nodes (several fan out) or End.
func (g *Graph[S]) AddConditionalEdges(from string, route Router[S]) *Graph[S] {
	if g.routers[from] != nil {
		g.errs = append(g.errs, fmt.Errorf("add conditional edges from %s: router already set", from))
	}
	g.routers[from] = route
	return g
}

// AddJoin makes to run once, after every node of from has finished, however
// many supersteps apart they finish (a join after uneven parallel branches).
func (g *Graph[S]) AddJoin(from []string, to string) *Graph[S] {
	if len(from) == 0 {
		g.errs = append(g.errs, fmt.Errorf("add join to %s: no source nodes", to))
	}
	g.joins = append(g.joins, join{from: slices.Clone(from), to: to})
	return g
}

// StateFormat declares the format version of the state's JSON encoding
// (default 1) and the upgrades from older versions: upgrades[v] turns version
// v into v+1. A checkpoint written at an older version is upgraded when read;
// one that cannot be upgraded or decoded gives a *StateDecodeError.
func (g *Graph[S]) StateFormat(version int, upgrades map[int]Upgrade) *Graph[S] {
	if version < 1 {
		g.errs = append(g.errs, fmt.Errorf("state format %d: must be at least 1", version))
	}
	g.format = version
	for v, u := range upgrades {
		g.upgrades[v] = u
	}
	return g
}

// Options configure a compiled graph.
type Options struct {
	// Checkpointer stores checkpoints; required.
	Checkpointer Checkpointer
	// InterruptBefore and InterruptAfter are static breakpoints: the run
	// pauses before these nodes run, or after their superstep is saved. A
	// pause asks no question; Resume with an empty Command continues it.
	InterruptBefore []string
	InterruptAfter  []string
	// RecursionLimit is the most supersteps one invocation runs; 0 means
	// DefaultRecursionLimit.
	RecursionLimit int
	// Now is the clock for CreatedAt; nil means time.Now. Times are stored in UTC.
	Now func() time.Time
	// Hook, when set, is called at verification points: "before:NODE" before
	// a task runs, "after:NODE" when its node returned and before the
	// superstep's checkpoint is written, "after-checkpoint:NODE" after it was.
	// Fault injection uses it to kill the process at a chosen point.
	Hook func(point string)
	// OnTask, when set, is told when each task starts and ends (a timeline).
	// It is called on the task's goroutine, synchronously.
	OnTask func(TaskEvent)
	// BeforeStep, when set, is asked before the tasks of each superstep run
	// (the run's owner checks that it may go on: its run status, its lease,
	// the attempts a node has had). An error stops the run there: no task
	// of that superstep runs, nothing more is written, and Invoke or Resume
	// returns the error as it is, with the snapshot of the head.
	BeforeStep func(ctx context.Context, ev StepEvent) error
}

// StepEvent is the superstep about to run: the thread, the superstep's
// number (0 for the first after the input) and the tasks that will run now.
// Tasks whose update was saved before, or that wait for an answer, are not
// listed.
type StepEvent struct {
	ThreadID string
	Step     int
	Tasks    []StepTask
}

// StepTask is one task of a StepEvent: its id (stable for the superstep, as
// in TaskEvent) and its node.
type StepTask struct {
	ID   string
	Node string
}

// WithCheckpointer returns a copy of r bound to cp instead of the
// Checkpointer it was compiled with: the same graph and options, for runs
// whose writes must go through another view of the store (a fenced one,
// see Fencer). r is unchanged; the copy is as safe for concurrent use.
func (r *Runnable[S]) WithCheckpointer(cp Checkpointer) *Runnable[S] {
	c := *r
	c.opts.Checkpointer = cp
	return &c
}

// Runnable is a compiled graph bound to a Checkpointer. It is safe for
// concurrent use; concurrent runs of one thread are serialised by the
// Checkpointer's compare-and-set (the loser gets ErrConflict).
type Runnable[S any] struct {
	g      *Graph[S]
	opts   Options
	before map[string]bool
	after  map[string]bool
}

// Compile checks the graph and binds it to opts. It returns the building
// errors joined, or an error when an edge names an unknown node, no edge
// leaves Start, or a breakpoint names an unknown node.
func (g *Graph[S]) Compile(opts Options) (*Runnable[S], error) {
	errs := g.validate()
	if opts.Checkpointer == nil {
		errs = append(errs, errors.New("compile: no checkpointer"))
	}
	r := &Runnable[S]{g: g, opts: opts, before: map[string]bool{}, after: map[string]bool{}}
	for _, n := range opts.InterruptBefore {
		if g.nodes[n] == nil {
			errs = append(errs, fmt.Errorf("compile: breakpoint before unknown node %q", n))
		}
		r.before[n] = true
	}
	for _, n := range opts.InterruptAfter {
		if g.nodes[n] == nil {
			errs = append(errs, fmt.Errorf("compile: breakpoint after unknown node %q", n))
		}
		r.after[n] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if r.opts.RecursionLimit <= 0 {
		r.opts.RecursionLimit = DefaultRecursionLimit
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	return r, nil
}

// validate returns the building errors and those of the graph's shape: an
// edge naming an unknown node, no edge leaving Start.
func (g *Graph[S]) validate() []error {
	errs := slices.Clone(g.errs)
	if g.reducer == nil {
		errs = append(errs, errors.New("compile: no reducer"))
	}
	errs = append(errs, g.edgeErrors()...)
	for _, j := range g.joins {
		for _, f := range append(slices.Clone(j.from), j.to) {
			if !g.known(f) {
				errs = append(errs, fmt.Errorf("compile: join names unknown node %q", f))
			}
		}
	}
	if len(g.edges[Start]) == 0 && g.routers[Start] == nil {
		errs = append(errs, errors.New("compile: no edge leaves Start"))
	}
	return errs
}

// edgeErrors returns an error for each edge and conditional edge that
// names an unknown node, in the order of the source nodes' names.
func (g *Graph[S]) edgeErrors() []error {
	var errs []error
	for _, from := range slices.Sorted(maps.Keys(g.edges)) {
		if from != Start && g.nodes[from] == nil {
			errs = append(errs, fmt.Errorf("compile: edge from unknown node %q", from))
		}
		for _, to := range g.edges[from] {
			if !g.known(to) {
				errs = append(errs, fmt.Errorf("compile: edge %s -> unknown node %q", from, to))
			}
		}
	}
	for _, from := range slices.Sorted(maps.Keys(g.routers)) {
		if from != Start && g.nodes[from] == nil {
			errs = append(errs, fmt.Errorf("compile: conditional edges from unknown node %q", from))
		}
	}
	return errs
}

// known reports whether an edge may lead to n: End or a node of the graph.
func (g *Graph[S]) known(n string) bool { return n == End || g.nodes[n] != nil }

// successors returns the nodes that follow the nodes ran, given the merged
// state, and the join progress carried to the next checkpoint. A router
// naming an unknown node is an error.
func (g *Graph[S]) successors(ran []string, state S, waiting map[string][]string) ([]string, map[string][]string, error) {
	set, err := g.routed(ran, state)
	if err != nil {
		return nil, nil, err
	}
	nextWaiting := g.joinProgress(ran, waiting, set)
	delete(set, End)
	next := make([]string, 0, len(set))
	for n := range set {
		next = append(next, n)
	}
	sort.Strings(next)
	return next, nextWaiting, nil
}

// routed returns the set of nodes (End among them) that the edges and
// routers leaving the nodes ran lead to, given the merged state. A router
// that names an unknown node or panics is an error.
func (g *Graph[S]) routed(ran []string, state S) (map[string]bool, error) {
	set := map[string]bool{}
	for _, n := range ran {
		for _, to := range g.edges[n] {
			set[to] = true
		}
		route := g.routers[n]
		if route == nil {
			continue
		}
		tos, err := callRouter(n, route, state)
		if err != nil {
			return nil, err
		}
		for _, to := range tos {
			if to != End && g.nodes[to] == nil {
				return nil, fmt.Errorf("router of %s chose unknown node %q", n, to)
			}
			set[to] = true
		}
	}
	return set, nil
}

// joinProgress records the nodes ran in the progress of the joins, waiting
// (target → sources finished so far, left unchanged), and returns the
// progress for the next checkpoint: nil when there is none. A join whose
// sources have now all finished leaves it, and its target is added to set.
func (g *Graph[S]) joinProgress(ran []string, waiting map[string][]string, set map[string]bool) map[string][]string {
	var next map[string][]string
	for k, v := range waiting {
		if next == nil {
			next = map[string][]string{}
		}
		next[k] = slices.Clone(v)
	}
	for _, j := range g.joins {
		seen, touched := j.record(next[j.to], ran)
		if !touched {
			continue
		}
		if next == nil {
			next = map[string][]string{}
		}
		if len(seen) == len(j.from) {
			set[j.to] = true
			delete(next, j.to)
		} else {
			sort.Strings(seen)
			next[j.to] = seen
		}
	}
	return next
}

// record appends to seen, the sources of j finished so far, those among ran
// it lacks, and reports whether there were any.
func (j join) record(seen, ran []string) ([]string, bool) {
	touched := false
	for _, n := range ran {
		if slices.Contains(j.from, n) && !slices.Contains(seen, n) {
			seen = append(seen, n)
			touched = true
		}
	}
	return seen, touched
}

// callRouter runs a router, turning a panic into an error as callNode does
// for nodes.
func callRouter[S any](from string, route Router[S], state S) (tos []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("router of %s panicked: %v", from, p)
		}
	}()
	return route(state), nil
}
