package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// SubgraphNode returns a node of a graph over P that runs child, a graph over
// C, to its end inside the task of that node. in makes the child's input from
// the parent's state; out makes the parent's update from the child's final
// state.
//
// The child is not checkpointed on its own: the parent's task is the unit
// that is saved. A question the child asks (Interrupt in a child node)
// parks the parent's task; its PendingInterrupt has Node set to the parent
// node and Path to the nodes from the parent node down to the asking child
// node, e.g. ["review", "approve"]. It is answered like any other question,
// by its id. On resume the parent node runs again from its start, so the
// child runs again from its start too, with the answers given so far
// replayed to the Interrupt calls that asked them. Code of the parent node
// before the child, and child nodes before their questions, therefore run
// once per resume: keep them free of side effects or key those.
//
// A child node that fails fails the parent's task. Breakpoints and hooks of
// Options do not reach into a child; the child's supersteps count against
// DefaultRecursionLimit of their own. A child that does not compile makes
// every run of the node fail with the building error.
func SubgraphNode[P, C any](child *Graph[C], in func(P) C, out func(C) P) NodeFunc[P] {
	if err := errors.Join(child.validate()...); err != nil {
		err = fmt.Errorf("subgraph: %w", err)
		return func(context.Context, P) (P, error) {
			var zero P
			return zero, err
		}
	}
	return func(ctx context.Context, p P) (P, error) {
		var zero P
		sc, _ := ctx.Value(scopeKey{}).(*taskScope)
		if sc == nil {
			return zero, ErrNotInNode
		}
		final, err := child.runInline(ctx, sc, in(p))
		if err != nil {
			return zero, err
		}
		return out(final), nil
	}
}

// SubgraphError reports a child node of a subgraph that failed.
type SubgraphError struct {
	Path []string // from the parent node down to the failed child node
	Err  error
}

// Error implements the error interface for *SubgraphError.
func (e *SubgraphError) Error() string {
	return fmt.Sprintf("subgraph node %s: %v", strings.Join(e.Path, "/"), e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *SubgraphError) Unwrap() error { return e.Err }

// runInline runs the graph from input to its end without checkpoints, as
// part of the task whose scope is parent. It returns the final state, or an
// error: an *InterruptError (the questions are registered with the outer
// task), a *SubgraphError, a *RecursionLimitError or the context's error.
func (g *Graph[S]) runInline(ctx context.Context, parent *taskScope, input S) (S, error) {
	var zero S
	path := parent.path
	if parent.parent == nil {
		path = []string{parent.node}
	}
	// Numbering the runs keeps apart the questions of two subgraphs one node
	// runs one after the other.
	parent.mu.Lock()
	run := parent.subruns
	parent.subruns++
	parent.mu.Unlock()
	state := g.reducer(zero, input)
	next, waiting, err := g.successors([]string{Start}, state, nil)
	if err != nil {
		return zero, &SubgraphError{Path: path, Err: err}
	}
	for step := 0; len(next) > 0; step++ {
		if step >= DefaultRecursionLimit {
			return zero, &RecursionLimitError{ThreadID: "subgraph " + strings.Join(path, "/"), Limit: DefaultRecursionLimit}
		}
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		outs := g.runChildTasks(ctx, parent, path, strconv.Itoa(run)+"."+strconv.Itoa(step), next, state)
		if err := childStepError(path, next, outs); err != nil {
			return zero, err
		}
		if state, err = g.mergeChild(path, state, outs); err != nil {
			return zero, err
		}
		if next, waiting, err = g.successors(next, state, waiting); err != nil {
			return zero, &SubgraphError{Path: path, Err: err}
		}
	}
	return state, nil
}

// childOutcome is what a task of a subgraph came to: its update, its
// failure, or the question it asked.
type childOutcome[S any] struct {
	upd   S
	err   error
	asked *InterruptError
}

// runChildTasks runs the nodes next of one superstep of a subgraph
// concurrently on state and returns their outcomes, in the order of next,
// when all have ended. parent is the scope of the task running the
// subgraph, path the nodes down to the subgraph, and place numbers the
// subgraph run and superstep ("run.step"), so each child task's questions
// keep a stable place.
func (g *Graph[S]) runChildTasks(ctx context.Context, parent *taskScope, path []string, place string, next []string, state S) []childOutcome[S] {
	outs := make([]childOutcome[S], len(next))
	var wg sync.WaitGroup
	for i, node := range next {
		sc := &taskScope{
			node:   node,
			parent: parent,
			key:    parent.key + "/" + place + ":" + node,
			path:   append(slices.Clone(path), node),
		}
		wg.Add(1)
		go func(o *childOutcome[S]) {
			defer wg.Done()
			upd, err := callNode(context.WithValue(ctx, scopeKey{}, sc), node, g.nodes[node], state)
			// A child node that swallows its question and returns
			// success is caught by the outer task: its question stays
			// registered there, so the task fails with ErrInterruptIgnored.
			if !errors.As(err, &o.asked) {
				o.upd, o.err = upd, err
			}
		}(&outs[i])
	}
	wg.Wait()
	return outs
}

// childStepError returns the error that ends a subgraph run after a
// superstep of nodes next: the first failure, as a *SubgraphError, else the
// first question asked; nil when every task finished.
func childStepError[S any](path, next []string, outs []childOutcome[S]) error {
	var asked *InterruptError
	for i, o := range outs {
		if o.err != nil {
			return &SubgraphError{Path: append(slices.Clone(path), next[i]), Err: o.err}
		}
		if asked == nil {
			asked = o.asked
		}
	}
	if asked != nil {
		return asked
	}
	return nil
}

// mergeChild merges the updates of a finished superstep of a subgraph into
// state, in the order of outs. Each update goes through JSON first, as the
// checkpointed engine's do, so a node behaves the same inside a subgraph
// and out of it. Errors are *SubgraphError.
func (g *Graph[S]) mergeChild(path []string, state S, outs []childOutcome[S]) (S, error) {
	for _, o := range outs {
		raw, err := json.Marshal(o.upd)
		if err != nil {
			return state, &SubgraphError{Path: path, Err: fmt.Errorf("encode update: %w", err)}
		}
		var upd S
		if err := json.Unmarshal(raw, &upd); err != nil {
			return state, &SubgraphError{Path: path, Err: fmt.Errorf("decode update: %w", err)}
		}
		state = g.reducer(state, upd)
	}
	return state, nil
}
