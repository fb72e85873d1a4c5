package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"assistant/flow"
)

func TestFanOutAndJoin(t *testing.T) {
	t.Parallel()

	t.Run("EdgeListRunsOneSuperstepAndMergesInNodeOrder", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			cDone := make(chan struct{})
			g := flow.NewGraph(reduce).
				AddNode("a", step(c, "a")).
				AddNode("b", func(ctx context.Context, s St) (St, error) {
					// b finishes after c, yet merges first: order is by node name.
					<-cDone
					c.inc("b")
					return St{Trace: []string{"b"}}, nil
				}).
				AddNode("c", func(ctx context.Context, s St) (St, error) {
					defer close(cDone)
					c.inc("c")
					return St{Trace: []string{"c"}}, nil
				}).
				AddNode("d", step(c, "d")).
				AddEdge(flow.Start, "a").AddEdge("a", "b").AddEdge("a", "c").
				AddEdge("b", "d").AddEdge("c", "d").AddEdge("d", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if !snap.Done() || !slices.Equal(snap.Values.Trace, []string{"a", "b", "c", "d"}) {
				t.Fatalf("trace %v done %v, want [a b c d] done", snap.Values.Trace, snap.Done())
			}
			c.want(t, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1})
			hist, err := r.History(t.Context(), "t1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != 4 { // input, a, {b c}, d
				t.Fatalf("history has %d checkpoints, want 4", len(hist))
			}
			if w := hist[1].Metadata.Writes; len(w) != 2 || w["b"] == nil || w["c"] == nil {
				t.Errorf("superstep 1 writes %v, want b and c", w)
			}
		})
	})

	t.Run("ConditionalEdgeFansOut", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).
				AddNode("a", step(c, "a")).AddNode("x", step(c, "x")).AddNode("y", step(c, "y")).
				AddEdge(flow.Start, "a").
				AddConditionalEdges("a", func(St) []string { return []string{"y", "x"} }).
				AddEdge("x", flow.End).AddEdge("y", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if !slices.Equal(snap.Values.Trace, []string{"a", "x", "y"}) {
				t.Fatalf("trace %v, want [a x y]", snap.Values.Trace)
			}
			c.want(t, map[string]int{"a": 1, "x": 1, "y": 1})
		})
	})

	t.Run("JoinWaitsForUnevenBranches", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).
				AddNode("a", step(c, "a")).AddNode("short", step(c, "short")).
				AddNode("long1", step(c, "long1")).AddNode("long2", step(c, "long2")).
				AddNode("join", step(c, "join")).
				AddEdge(flow.Start, "a").AddEdge("a", "short").AddEdge("a", "long1").AddEdge("long1", "long2").
				AddJoin([]string{"short", "long2"}, "join").AddEdge("join", flow.End)
			// The breakpoint makes the join's progress go through the store.
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t), InterruptAfter: []string{"long1"}})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if !snap.AtBreakpoint() || c.get("join") != 0 {
				t.Fatalf("want a pause after long1 before the join ran; next %v", snap.Next)
			}
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
			if want := []string{"a", "long1", "short", "long2", "join"}; !slices.Equal(snap.Values.Trace, want) {
				t.Fatalf("trace %v, want %v", snap.Values.Trace, want)
			}
			c.want(t, map[string]int{"a": 1, "short": 1, "long1": 1, "long2": 1, "join": 1})
		})
	})
}

// fanOut builds Start → a → {b, c} → d → End with the given b and c.
func fanOut(c *calls, b, cc flow.NodeFunc[St]) *flow.Graph[St] {
	return flow.NewGraph(reduce).
		AddNode("a", step(c, "a")).AddNode("b", b).AddNode("c", cc).AddNode("d", step(c, "d")).
		AddEdge(flow.Start, "a").AddEdge("a", "b").AddEdge("a", "c").
		AddEdge("b", "d").AddEdge("c", "d").AddEdge("d", flow.End)
}

func TestPendingWrites(t *testing.T) {
	t.Parallel()

	t.Run("SiblingAsksFinishedSiblingNotRunAgain", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			r := mustCompile(t, fanOut(c, step(c, "b"), ask(c, "c")), flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if len(snap.Tasks) != 2 || !snap.Tasks[0].Done || snap.Tasks[1].Done {
				t.Fatalf("tasks %+v, want b done and c not", snap.Tasks)
			}
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "yes"}))
			if !snap.Done() || snap.Values.Answers["c"] != "yes" {
				t.Fatalf("values %+v done %v", snap.Values, snap.Done())
			}
			c.want(t, map[string]int{"a": 1, "b": 1, "c": 2, "d": 1})
		})
	})

	t.Run("SiblingFailsFinishedSiblingNotRunAgain", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			boom := errors.New("boom")
			flaky := func(ctx context.Context, s St) (St, error) {
				c.inc("c")
				if c.get("c") == 1 {
					return St{}, boom
				}
				return St{Trace: []string{"c"}}, nil
			}
			r := mustCompile(t, fanOut(c, step(c, "b"), flaky), flow.Options{Checkpointer: open(t)})
			snap, err := r.Invoke(t.Context(), "t1", St{})
			var te *flow.TaskError
			if !errors.As(err, &te) || te.Node != "c" || !errors.Is(err, boom) {
				t.Fatalf("err %v, want a TaskError of node c wrapping boom", err)
			}
			if snap.Tasks[1].Error == "" || !snap.Tasks[0].Done {
				t.Fatalf("tasks %+v, want b done and c failed", snap.Tasks)
			}
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
			if want := []string{"a", "b", "c", "d"}; !slices.Equal(snap.Values.Trace, want) {
				t.Fatalf("trace %v, want %v", snap.Values.Trace, want)
			}
			c.want(t, map[string]int{"a": 1, "b": 1, "c": 2, "d": 1})
		})
	})
}

func TestSeveralInterrupts(t *testing.T) {
	t.Parallel()

	t.Run("ParallelQuestionsAnsweredOneByOne", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			r := mustCompile(t, fanOut(c, ask(c, "b"), ask(c, "c")), flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if got := pendingNodes(snap); !slices.Equal(got, []string{"b", "c"}) {
				t.Fatalf("pending %v, want [b c]", got)
			}
			idB, idC := byNode(t, snap, "b"), byNode(t, snap, "c")
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{ResumeMap: map[string]any{idB: "B!"}}))
			if got := pendingNodes(snap); !slices.Equal(got, []string{"c"}) || snap.Interrupts[0].ID != idC {
				t.Fatalf("pending %v, want only c with its id unchanged", snap.Interrupts)
			}
			// c still waits for its answer, so it did not run again.
			c.want(t, map[string]int{"b": 2, "c": 1, "d": 0})
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{ResumeMap: map[string]any{idC: "C!"}}))
			if !snap.Done() || snap.Values.Answers["b"] != "B!" || snap.Values.Answers["c"] != "C!" {
				t.Fatalf("values %+v done %v", snap.Values, snap.Done())
			}
			c.want(t, map[string]int{"a": 1, "b": 2, "c": 2, "d": 1})
		})
	})

	t.Run("SeveralQuestionsFromOneNode", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).AddNode("form", func(ctx context.Context, s St) (St, error) {
				c.inc("form")
				// Both questions are asked in one run; the node returns them joined.
				name, err1 := flow.Interrupt[string](ctx, "name?")
				size, err2 := flow.Interrupt[string](ctx, "size?")
				if err := errors.Join(err1, err2); err != nil {
					return St{}, err
				}
				return St{Answers: map[string]string{"name": name, "size": size}}, nil
			}).AddEdge(flow.Start, "form").AddEdge("form", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if len(snap.Interrupts) != 2 || snap.Interrupts[0].Idx != 0 || snap.Interrupts[1].Idx != 1 {
				t.Fatalf("pending %+v, want two questions idx 0 and 1", snap.Interrupts)
			}
			name, size := snap.Interrupts[0].ID, snap.Interrupts[1].ID
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{ResumeMap: map[string]any{size: "L"}}))
			if len(snap.Interrupts) != 1 || snap.Interrupts[0].ID != name {
				t.Fatalf("pending %+v, want only the name question", snap.Interrupts)
			}
			c.want(t, map[string]int{"form": 1})
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{ResumeMap: map[string]any{name: "Ada"}}))
			if !snap.Done() || snap.Values.Answers["name"] != "Ada" || snap.Values.Answers["size"] != "L" {
				t.Fatalf("values %+v", snap.Values)
			}
			c.want(t, map[string]int{"form": 2})
		})
	})

	t.Run("QuestionsOneAfterAnotherInOneNode", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).AddNode("form", func(ctx context.Context, s St) (St, error) {
				c.inc("form")
				name, err := flow.Interrupt[string](ctx, "name?")
				if err != nil {
					return St{}, err
				}
				size, err := flow.Interrupt[string](ctx, "size?")
				if err != nil {
					return St{}, err
				}
				return St{Answers: map[string]string{"name": name, "size": size}}, nil
			}).AddEdge(flow.Start, "form").AddEdge("form", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
			first := must(t)(r.Invoke(t.Context(), "t1", St{}))
			second := must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "Ada"}))
			if len(second.Interrupts) != 1 || second.Interrupts[0].Idx != 1 || second.Interrupts[0].ID == first.Interrupts[0].ID {
				t.Fatalf("second question %+v, want idx 1 with a new id", second.Interrupts)
			}
			snap := must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "L"}))
			if snap.Values.Answers["name"] != "Ada" || snap.Values.Answers["size"] != "L" {
				t.Fatalf("answers %v", snap.Values.Answers)
			}
			c.want(t, map[string]int{"form": 3})
		})
	})

	t.Run("WrongAnswersAreRefusedWithoutChange", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			cp := open(t)
			r := mustCompile(t, fanOut(c, ask(c, "b"), ask(c, "c")), flow.Options{Checkpointer: cp})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			idB := byNode(t, snap, "b")
			must(t)(r.Resume(t.Context(), "t1", flow.Command{ResumeMap: map[string]any{idB: "B!"}}))
			before := headOf(t, cp, "t1")
			counts := c.snapshot()
			for _, tc := range []struct {
				name string
				cmd  flow.Command
				want error
			}{
				{"UnknownID", flow.Command{ResumeMap: map[string]any{"nope": "x"}}, flow.ErrUnknownInterrupt},
				{"AlreadyAnsweredID", flow.Command{ResumeMap: map[string]any{idB: "again"}}, flow.ErrUnknownInterrupt},
				{"NoAnswerWhileQuestionPending", flow.Command{}, flow.ErrResumeValueRequired},
			} {
				_, err := r.Resume(t.Context(), "t1", tc.cmd)
				want := tc.want
				if !errors.Is(err, want) {
					t.Errorf("%s: err %v, want %v", tc.name, err, want)
				}
				var ue *flow.UnknownInterruptError
				if want == flow.ErrUnknownInterrupt && !errors.As(err, &ue) {
					t.Errorf("%s: err %T, want *UnknownInterruptError", tc.name, err)
				}
			}
			if after := headOf(t, cp, "t1"); !sameHead(before, after) {
				t.Errorf("head changed by refused answers:\nbefore %+v\nafter  %+v", before, after)
			}
			if got := c.snapshot(); !mapsEqual(got, counts) {
				t.Errorf("calls changed by refused answers: %v → %v", counts, got)
			}

			// A single value needs exactly one pending question: a fresh
			// thread has two.
			snap = must(t)(r.Invoke(t.Context(), "t2", St{}))
			before = headOf(t, cp, "t2")
			if _, err := r.Resume(t.Context(), "t2", flow.Command{Resume: "x"}); !errors.Is(err, flow.ErrAmbiguousResume) {
				t.Errorf("single value with two pending: err %v, want ErrAmbiguousResume", err)
			}
			mixed := flow.Command{ResumeMap: map[string]any{byNode(t, snap, "b"): "ok", "nope": "x"}}
			if _, err := r.Resume(t.Context(), "t2", mixed); !errors.Is(err, flow.ErrUnknownInterrupt) {
				t.Errorf("one good and one unknown id: err %v, want ErrUnknownInterrupt", err)
			}
			if after := headOf(t, cp, "t2"); !sameHead(before, after) {
				t.Errorf("head of t2 changed by refused answers")
			}
		})
	})

	t.Run("AnswerWithoutQuestionIsRefused", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).AddNode("work", step(c, "work")).
				AddEdge(flow.Start, "work").AddEdge("work", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t), InterruptBefore: []string{"work"}})
			must(t)(r.Invoke(t.Context(), "t1", St{}))
			if _, err := r.Resume(t.Context(), "t1", flow.Command{Resume: "x"}); !errors.Is(err, flow.ErrNoPendingInterrupt) {
				t.Fatalf("err %v, want ErrNoPendingInterrupt", err)
			}
			c.want(t, map[string]int{"work": 0})
		})
	})
}

// headOf returns the thread's head with its pending writes.
func headOf(tb testing.TB, cp flow.Checkpointer, thread string) *flow.Checkpoint {
	tb.Helper()
	h, err := cp.Get(context.Background(), thread, "")
	if err != nil || h == nil {
		tb.Fatalf("get head of %s: %v", thread, err)
	}
	return h
}

func sameHead(a, b *flow.Checkpoint) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestInterruptSignal(t *testing.T) {
	t.Parallel()

	t.Run("WrappedInterruptStillParks", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).
				AddNode("approve", func(ctx context.Context, s St) (St, error) {
					c.inc("approve")
					v, err := flow.Interrupt[string](ctx, "approve?")
					if err != nil {
						return St{}, fmt.Errorf("approval: %w", err)
					}
					return St{Answers: map[string]string{"approve": v}}, nil
				}).
				AddNode("submit", step(c, "submit")).
				AddEdge(flow.Start, "approve").AddEdge("approve", "submit").AddEdge("submit", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if !snap.Waiting() {
				t.Fatalf("want a pending question, got next %v", snap.Next)
			}
			c.want(t, map[string]int{"approve": 1, "submit": 0})
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "yes"}))
			if !snap.Done() || snap.Values.Answers["approve"] != "yes" {
				t.Fatalf("values %+v done %v, want the answer passed through", snap.Values, snap.Done())
			}
			c.want(t, map[string]int{"approve": 2, "submit": 1})
		})
	})

	t.Run("SwallowedInterruptFailsTheTask", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).
				AddNode("approve", func(ctx context.Context, s St) (St, error) {
					c.inc("approve")
					_, _ = flow.Interrupt[string](ctx, "approve?") // ignores the gate
					return St{Trace: []string{"approve"}}, nil
				}).
				AddNode("submit", step(c, "submit")).
				AddEdge(flow.Start, "approve").AddEdge("approve", "submit").AddEdge("submit", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
			snap, err := r.Invoke(t.Context(), "t1", St{})
			if !errors.Is(err, flow.ErrInterruptIgnored) {
				t.Fatalf("err %v, want ErrInterruptIgnored", err)
			}
			if len(snap.Values.Trace) != 0 || !slices.Equal(snap.Next, []string{"approve"}) {
				t.Fatalf("values %+v next %v: the update must not be applied", snap.Values, snap.Next)
			}
			c.want(t, map[string]int{"approve": 1, "submit": 0})
		})
	})

	t.Run("OutsideANode", func(t *testing.T) {
		if _, err := flow.Interrupt[string](t.Context(), "x"); !errors.Is(err, flow.ErrNotInNode) {
			t.Fatalf("err %v, want ErrNotInNode", err)
		}
	})

	t.Run("AnswerOfWrongTypeFailsTheTask", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).
				AddNode("n", func(ctx context.Context, s St) (St, error) {
					c.inc("n")
					if _, err := flow.Interrupt[int](ctx, "how many?"); err != nil {
						return St{}, err
					}
					return St{}, nil
				}).
				AddEdge(flow.Start, "n").AddEdge("n", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
			must(t)(r.Invoke(t.Context(), "t1", St{}))
			_, err := r.Resume(t.Context(), "t1", flow.Command{Resume: "many"})
			var de *flow.ResumeDecodeError
			if !errors.As(err, &de) || de.Node != "n" {
				t.Fatalf("err %v, want a ResumeDecodeError of node n", err)
			}
			c.want(t, map[string]int{"n": 2})
		})
	})
}

// loop builds Start → tick → (tick while N < max) → End; tick asks a
// question each round when asking is set.
func loop(c *calls, max int, asking bool) *flow.Graph[St] {
	return flow.NewGraph(reduce).
		AddNode("tick", func(ctx context.Context, s St) (St, error) {
			c.inc("tick")
			if asking {
				if _, err := flow.Interrupt[string](ctx, fmt.Sprintf("round %d?", s.N+1)); err != nil {
					return St{}, err
				}
			}
			return St{N: s.N + 1}, nil
		}).
		AddEdge(flow.Start, "tick").
		AddConditionalEdges("tick", func(s St) []string {
			if s.N < max {
				return []string{"tick"}
			}
			return []string{flow.End}
		})
}

func TestRecursionLimit(t *testing.T) {
	t.Parallel()

	t.Run("CountsSuperstepsOfOneInvocation", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			r := mustCompile(t, loop(c, 10, true), flow.Options{Checkpointer: open(t), RecursionLimit: 2})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			for i := 0; snap.Waiting(); i++ {
				// Ten rounds of one question each: the thread lives far more
				// than 2 supersteps but every invocation runs at most 2.
				snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "go"}))
			}
			if !snap.Done() || snap.Values.N != 10 {
				t.Fatalf("N %d done %v, want 10 done", snap.Values.N, snap.Done())
			}
			c.want(t, map[string]int{"tick": 20}) // each round: ask, then run with the answer
		})
	})

	t.Run("EndlessLoopStopsWithTypedError", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			r := mustCompile(t, loop(c, 1000, false), flow.Options{Checkpointer: open(t), RecursionLimit: 3})
			snap, err := r.Invoke(t.Context(), "t1", St{})
			var le *flow.RecursionLimitError
			if !errors.As(err, &le) || le.Limit != 3 {
				t.Fatalf("err %v, want RecursionLimitError with limit 3", err)
			}
			if snap.Values.N != 3 || !slices.Equal(snap.Next, []string{"tick"}) {
				t.Fatalf("N %d next %v, want 3 and [tick]", snap.Values.N, snap.Next)
			}
			// Continuing gives the next invocation a budget of its own.
			snap, err = r.Resume(t.Context(), "t1", flow.Command{})
			if !errors.As(err, &le) || snap.Values.N != 6 {
				t.Fatalf("after continue: N %d err %v, want 6 and the limit again", snap.Values.N, err)
			}
			c.want(t, map[string]int{"tick": 6})
		})
	})
}

func TestBreakpoints(t *testing.T) {
	t.Parallel()

	t.Run("BeforePausesWithoutQuestion", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).AddNode("work", step(c, "work")).
				AddEdge(flow.Start, "work").AddEdge("work", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t), InterruptBefore: []string{"work"}})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if !snap.AtBreakpoint() || snap.Waiting() || snap.Breakpoint != "before:work" || !slices.Equal(snap.Next, []string{"work"}) {
				t.Fatalf("snapshot %+v, want a pause before work with no question", snap)
			}
			c.want(t, map[string]int{"work": 0})
			snap = must(t)(r.State(t.Context(), "t1")) // a later reader sees the same
			if !snap.AtBreakpoint() {
				t.Fatalf("State does not report the breakpoint")
			}
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
			if !snap.Done() || snap.AtBreakpoint() {
				t.Fatalf("after continue: next %v breakpoint %q", snap.Next, snap.Breakpoint)
			}
			c.want(t, map[string]int{"work": 1})
		})
	})

	t.Run("AfterPausesOnceTheSuperstepIsSaved", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).AddNode("work", step(c, "work")).AddNode("finish", step(c, "finish")).
				AddEdge(flow.Start, "work").AddEdge("work", "finish").AddEdge("finish", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t), InterruptAfter: []string{"work"}})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if !snap.AtBreakpoint() || snap.Breakpoint != "after:work" || !slices.Equal(snap.Next, []string{"finish"}) {
				t.Fatalf("snapshot %+v, want a pause after work", snap)
			}
			c.want(t, map[string]int{"work": 1, "finish": 0})
			must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
			c.want(t, map[string]int{"work": 1, "finish": 1})
		})
	})

	t.Run("QuestionAfterBreakpointIsNotABreakpoint", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			g := flow.NewGraph(reduce).AddNode("approve", ask(c, "approve")).
				AddEdge(flow.Start, "approve").AddEdge("approve", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t), InterruptBefore: []string{"approve"}})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if !snap.AtBreakpoint() {
				t.Fatalf("want a breakpoint pause first")
			}
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
			if snap.AtBreakpoint() || snap.Breakpoint != "" || !snap.Waiting() {
				t.Fatalf("snapshot breakpoint %q waiting %v, want a question and no breakpoint", snap.Breakpoint, snap.Waiting())
			}
			if _, err := r.Resume(t.Context(), "t1", flow.Command{}); !errors.Is(err, flow.ErrResumeValueRequired) {
				t.Fatalf("continue without answer: err %v, want ErrResumeValueRequired", err)
			}
			c.want(t, map[string]int{"approve": 1})
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "ok"}))
			if !snap.Done() {
				t.Fatalf("not done: %v", snap.Next)
			}
			c.want(t, map[string]int{"approve": 2})
		})
	})
}

func TestUpdateState(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
		c := newCalls()
		g := flow.NewGraph(reduce).
			AddNode("draft", step(c, "draft")).AddNode("review", ask(c, "review")).AddNode("submit", step(c, "submit")).
			AddEdge(flow.Start, "draft").AddEdge("draft", "review").AddEdge("review", "submit").AddEdge("submit", flow.End)
		r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
		snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
		if !snap.Waiting() {
			t.Fatalf("want the review question")
		}
		// An operator answers for the reviewer: the correction goes through
		// the reducer as if review had written it.
		fix := St{Trace: []string{"operator"}, Answers: map[string]string{"review": "approved by operator"}}
		snap = must(t)(r.UpdateState(t.Context(), "t1", fix, "review"))
		if snap.Metadata.Source != flow.SourceUpdate || snap.Waiting() || !slices.Equal(snap.Next, []string{"submit"}) {
			t.Fatalf("snapshot source %q waiting %v next %v", snap.Metadata.Source, snap.Waiting(), snap.Next)
		}
		if want := []string{"draft", "operator"}; !slices.Equal(snap.Values.Trace, want) {
			t.Fatalf("trace %v, want %v (applied through the reducer)", snap.Values.Trace, want)
		}
		if w := snap.Metadata.Writes["review"]; w == nil {
			t.Fatalf("metadata writes %v, want the correction under review", snap.Metadata.Writes)
		}
		snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
		if !snap.Done() || snap.Values.Answers["review"] != "approved by operator" {
			t.Fatalf("values %+v", snap.Values)
		}
		c.want(t, map[string]int{"draft": 1, "review": 1, "submit": 1})

		if _, err := r.UpdateState(t.Context(), "t1", St{}, "nope"); err == nil {
			t.Errorf("update as unknown node: want an error")
		}
		if _, err := r.UpdateState(t.Context(), "missing", St{}, "review"); !errors.Is(err, flow.ErrThreadNotFound) {
			t.Errorf("update of missing thread: err %v, want ErrThreadNotFound", err)
		}
	})
}

// failingSync is a Checkpointer whose Sync fails while fail is set: its
// commits are made, but not durable against a power loss.
type failingSync struct {
	flow.Checkpointer
	fail bool
}

var errSyncFailed = errors.New("fsync failed")

func (f *failingSync) Sync(context.Context) error {
	if f.fail {
		return errSyncFailed
	}
	return nil
}

// TestUpdateStateReportsSyncError checks that a correction whose durability
// sync fails says so, with the snapshot of the head it wrote.
func TestUpdateStateReportsSyncError(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
		fs := &failingSync{Checkpointer: open(t)}
		r := mustCompile(t, approval(newCalls()), flow.Options{Checkpointer: fs})
		must(t)(r.Invoke(t.Context(), "t1", St{}))
		fs.fail = true
		snap, err := r.UpdateState(t.Context(), "t1", St{Trace: []string{"fix"}}, "review")
		if !errors.Is(err, errSyncFailed) {
			t.Fatalf("err %v, want the sync error", err)
		}
		if snap == nil || snap.Metadata.Source != flow.SourceUpdate || !slices.Equal(snap.Values.Trace, []string{"fix"}) {
			t.Fatalf("snapshot %+v, want the corrected head beside the error", snap)
		}
	})
}

func TestHistory(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
		c := newCalls()
		g := flow.NewGraph(reduce).
			AddNode("a", step(c, "a")).AddNode("b", ask(c, "b")).
			AddEdge(flow.Start, "a").AddEdge("a", "b").AddEdge("b", flow.End)
		r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
		must(t)(r.Invoke(t.Context(), "t1", St{}))
		must(t)(r.UpdateState(t.Context(), "t1", St{Trace: []string{"fix"}}, "a"))
		must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
		must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "ok"}))
		hist, err := r.History(t.Context(), "t1", 0)
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			Step   int
			Source string
			Writes []string
			Next   []string
		}
		var got []row
		for _, s := range hist {
			var w []string
			for n := range s.Metadata.Writes {
				w = append(w, n)
			}
			slices.Sort(w)
			got = append(got, row{s.Step, s.Metadata.Source, w, s.Next})
		}
		want := []row{
			{2, flow.SourceLoop, []string{"b"}, []string{}},
			{1, flow.SourceUpdate, []string{"a"}, []string{"b"}},
			{0, flow.SourceLoop, []string{"a"}, []string{"b"}},
			{-1, flow.SourceInput, nil, []string{"a"}},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("history\n got %v\nwant %v", got, want)
		}
		if hist[0].CheckpointID == "" || hist[0].ParentID != hist[1].CheckpointID {
			t.Errorf("history is not a chain newest first")
		}
		if limited, _ := r.History(t.Context(), "t1", 2); len(limited) != 2 || limited[0].CheckpointID != hist[0].CheckpointID {
			t.Errorf("History with limit 2 gave %d snapshots", len(limited))
		}
		// b asked, was dropped by the correction, asked again, then ran with the answer.
		c.want(t, map[string]int{"a": 1, "b": 3})
	})
}

func TestSubgraph(t *testing.T) {
	t.Parallel()

	// child: Start → ask1 → ask2 → End, each asking one question.
	child := func(c *calls) *flow.Graph[St] {
		return flow.NewGraph(reduce).
			AddNode("ask1", ask(c, "ask1")).AddNode("ask2", ask(c, "ask2")).
			AddEdge(flow.Start, "ask1").AddEdge("ask1", "ask2").AddEdge("ask2", flow.End)
	}
	// parent: Start → prep → review (runs the child) → done → End.
	parent := func(c *calls, ch *flow.Graph[St]) *flow.Graph[St] {
		sub := flow.SubgraphNode(ch, func(p St) St { return St{} }, func(ch St) St {
			return St{Trace: []string{"review"}, Answers: ch.Answers}
		})
		return flow.NewGraph(reduce).
			AddNode("prep", step(c, "prep")).
			AddNode("review", func(ctx context.Context, s St) (St, error) {
				c.inc("review") // code before the child runs again on every resume
				return sub(ctx, s)
			}).
			AddNode("done", step(c, "done")).
			AddEdge(flow.Start, "prep").AddEdge("prep", "review").AddEdge("review", "done").AddEdge("done", flow.End)
	}

	t.Run("QuestionsSurfaceWithPathAndResumeReplaysAnswers", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			r := mustCompile(t, parent(c, child(c)), flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if len(snap.Interrupts) != 1 || !slices.Equal(snap.Interrupts[0].Path, []string{"review", "ask1"}) || snap.Interrupts[0].Node != "review" {
				t.Fatalf("pending %+v, want one question at review/ask1", snap.Interrupts)
			}
			first := snap.Interrupts[0].ID
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "one"}))
			if len(snap.Interrupts) != 1 || !slices.Equal(snap.Interrupts[0].Path, []string{"review", "ask2"}) || snap.Interrupts[0].ID == first {
				t.Fatalf("pending %+v, want one new question at review/ask2", snap.Interrupts)
			}
			// A later reader sees the path too (it is stored).
			if st := must(t)(r.State(t.Context(), "t1")); !slices.Equal(st.Interrupts[0].Path, []string{"review", "ask2"}) {
				t.Fatalf("State path %v", st.Interrupts[0].Path)
			}
			if _, err := r.Resume(t.Context(), "t1", flow.Command{ResumeMap: map[string]any{first: "again"}}); !errors.Is(err, flow.ErrUnknownInterrupt) {
				t.Fatalf("answering the answered child question: err %v", err)
			}
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "two"}))
			if !snap.Done() || snap.Values.Answers["ask1"] != "one" || snap.Values.Answers["ask2"] != "two" {
				t.Fatalf("values %+v done %v", snap.Values, snap.Done())
			}
			if want := []string{"prep", "review", "done"}; !slices.Equal(snap.Values.Trace, want) {
				t.Fatalf("trace %v, want %v", snap.Values.Trace, want)
			}
			// The parent node and the child restart from their start on each resume.
			c.want(t, map[string]int{"prep": 1, "review": 3, "ask1": 3, "ask2": 2, "done": 1})
		})
	})

	t.Run("ParallelChildQuestions", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			ch := flow.NewGraph(reduce).
				AddNode("x", ask(c, "x")).AddNode("y", ask(c, "y")).
				AddEdge(flow.Start, "x").AddEdge(flow.Start, "y").AddEdge("x", flow.End).AddEdge("y", flow.End)
			r := mustCompile(t, parent(c, ch), flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if len(snap.Interrupts) != 2 {
				t.Fatalf("pending %+v, want two", snap.Interrupts)
			}
			var idY string
			for _, in := range snap.Interrupts {
				if slices.Equal(in.Path, []string{"review", "y"}) {
					idY = in.ID
				}
			}
			if idY == "" {
				t.Fatalf("no question with path review/y: %+v", snap.Interrupts)
			}
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{ResumeMap: map[string]any{idY: "Y"}}))
			if len(snap.Interrupts) != 1 || !slices.Equal(snap.Interrupts[0].Path, []string{"review", "x"}) {
				t.Fatalf("pending %+v, want only review/x", snap.Interrupts)
			}
			c.want(t, map[string]int{"review": 1, "x": 1, "y": 1}) // parked until every child question is answered
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "X"}))
			if !snap.Done() || snap.Values.Answers["x"] != "X" || snap.Values.Answers["y"] != "Y" {
				t.Fatalf("values %+v", snap.Values)
			}
			c.want(t, map[string]int{"review": 2, "x": 2, "y": 2, "done": 1})
		})
	})

	t.Run("ChildFailureFailsTheParentTask", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			boom := errors.New("boom")
			ch := flow.NewGraph(reduce).AddNode("bad", func(context.Context, St) (St, error) { return St{}, boom }).
				AddEdge(flow.Start, "bad").AddEdge("bad", flow.End)
			r := mustCompile(t, parent(c, ch), flow.Options{Checkpointer: open(t)})
			_, err := r.Invoke(t.Context(), "t1", St{})
			var se *flow.SubgraphError
			if !errors.Is(err, boom) || !errors.As(err, &se) || !slices.Equal(se.Path, []string{"review", "bad"}) {
				t.Fatalf("err %v, want a SubgraphError at review/bad wrapping boom", err)
			}
			c.want(t, map[string]int{"review": 1, "done": 0})
		})
	})

	t.Run("NestedSubgraph", func(t *testing.T) {
		eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
			c := newCalls()
			id := func(s St) St { return s }
			inner := flow.NewGraph(reduce).AddNode("leaf", ask(c, "leaf")).
				AddEdge(flow.Start, "leaf").AddEdge("leaf", flow.End)
			middle := flow.NewGraph(reduce).AddNode("mid", flow.SubgraphNode(inner, id, id)).
				AddEdge(flow.Start, "mid").AddEdge("mid", flow.End)
			g := flow.NewGraph(reduce).AddNode("top", flow.SubgraphNode(middle, id, id)).
				AddEdge(flow.Start, "top").AddEdge("top", flow.End)
			r := mustCompile(t, g, flow.Options{Checkpointer: open(t)})
			snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
			if len(snap.Interrupts) != 1 || !slices.Equal(snap.Interrupts[0].Path, []string{"top", "mid", "leaf"}) {
				t.Fatalf("pending %+v, want top/mid/leaf", snap.Interrupts)
			}
			snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{Resume: "deep"}))
			if !snap.Done() || snap.Values.Answers["leaf"] != "deep" {
				t.Fatalf("values %+v", snap.Values)
			}
			c.want(t, map[string]int{"leaf": 2})
		})
	})
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	c := newCalls()
	g := flow.NewGraph(reduce).AddNode("a", step(c, "a")).AddEdge(flow.Start, "a").AddEdge("a", "ghost")
	if _, err := g.Compile(flow.Options{Checkpointer: stores[0].open(t)}); err == nil {
		t.Fatal("edge to unknown node compiled")
	}
	bad := flow.NewGraph(reduce).AddNode("a", step(c, "a")).AddEdge(flow.Start, "a").
		AddConditionalEdges("a", func(St) []string { return []string{"ghost"} })
	r := mustCompile(t, bad, flow.Options{Checkpointer: stores[0].open(t)})
	if _, err := r.Invoke(t.Context(), "t1", St{}); err == nil {
		t.Fatal("router naming an unknown node: want an error")
	}
	sub := flow.SubgraphNode(flow.NewGraph(reduce), func(s St) St { return s }, func(s St) St { return s })
	if _, err := sub(t.Context(), St{}); err == nil {
		t.Fatal("subgraph without edges: want the building error")
	}
}

// failingPut is a Checkpointer whose Put fails while fail is set, as when a
// request stops after running a task and before its checkpoint is written.
type failingPut struct {
	flow.Checkpointer
	fail bool
}

var errDiskFull = errors.New("disk full")

func (f *failingPut) Put(ctx context.Context, cp *flow.Checkpoint) error {
	if f.fail {
		return errDiskFull
	}
	return f.Checkpointer.Put(ctx, cp)
}

func TestAnswerInFlight(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
		c := newCalls()
		fp := &failingPut{Checkpointer: open(t)}
		r := mustCompile(t, approval(c), flow.Options{Checkpointer: fp})
		snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
		id := snap.Interrupts[0].ID
		fp.fail = true
		if _, err := r.Resume(t.Context(), "t1", flow.Command{Resume: "yes"}); !errors.Is(err, errDiskFull) {
			t.Fatalf("err %v, want the storage error", err)
		}
		fp.fail = false
		// The answer is saved; its task has not finished with it. A second
		// answer is a conflict, whether given as a value or by id.
		for _, cmd := range []flow.Command{{Resume: "no"}, {ResumeMap: map[string]any{id: "no"}}} {
			_, err := r.Resume(t.Context(), "t1", cmd)
			var fe *flow.AnswerInFlightError
			if !errors.Is(err, flow.ErrConflict) || !errors.As(err, &fe) || fe.InterruptID != id {
				t.Fatalf("second answer %+v: err %v, want AnswerInFlightError for %s", cmd, err, id)
			}
		}
		snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
		if !snap.Done() || snap.Values.Answers["review"] != "yes" {
			t.Fatalf("values %+v done %v, want the first answer used", snap.Values, snap.Done())
		}
		c.want(t, map[string]int{"review": 3, "submit": 1})
	})
}

func TestBreakpointClearsOnceItsSuperstepStarts(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
		c := newCalls()
		boom := errors.New("boom")
		g := fanOut(c, step(c, "b"), func(context.Context, St) (St, error) { c.inc("c"); return St{}, boom })
		r := mustCompile(t, g, flow.Options{Checkpointer: open(t), InterruptBefore: []string{"b"}})
		snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
		if snap.Breakpoint != "before:b" || !snap.AtBreakpoint() {
			t.Fatalf("breakpoint %q, want before:b", snap.Breakpoint)
		}
		snap, err := r.Resume(t.Context(), "t1", flow.Command{})
		if !errors.Is(err, boom) || snap.AtBreakpoint() {
			t.Fatalf("err %v breakpoint %q: a failed continue is not a breakpoint pause", err, snap.Breakpoint)
		}
		c.want(t, map[string]int{"a": 1, "b": 1, "c": 1})
	})
}

func TestUpdateStateKeepsBreakpointBeforeNextNode(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
		c := newCalls()
		g := flow.NewGraph(reduce).AddNode("prep", step(c, "prep")).AddNode("work", step(c, "work")).
			AddEdge(flow.Start, "prep").AddEdge("prep", "work").AddEdge("work", flow.End)
		r := mustCompile(t, g, flow.Options{Checkpointer: open(t), InterruptBefore: []string{"work"}})
		must(t)(r.Invoke(t.Context(), "t1", St{}))
		snap := must(t)(r.UpdateState(t.Context(), "t1", St{Trace: []string{"fixed"}}, "prep"))
		if !snap.AtBreakpoint() || !slices.Equal(snap.Next, []string{"work"}) {
			t.Fatalf("after the correction: breakpoint %q next %v, want still paused before work", snap.Breakpoint, snap.Next)
		}
		snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
		if want := []string{"prep", "fixed", "work"}; !slices.Equal(snap.Values.Trace, want) {
			t.Fatalf("trace %v, want %v", snap.Values.Trace, want)
		}
		c.want(t, map[string]int{"prep": 1, "work": 1})
	})
}

func TestBreakpointAfterLastNodeIsNoPause(t *testing.T) {
	t.Parallel()
	c := newCalls()
	g := flow.NewGraph(reduce).AddNode("work", step(c, "work")).
		AddEdge(flow.Start, "work").AddEdge("work", flow.End)
	r := mustCompile(t, g, flow.Options{Checkpointer: stores[0].open(t), InterruptAfter: []string{"work"}})
	snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
	if !snap.Done() || snap.AtBreakpoint() {
		t.Fatalf("done %v breakpoint %q: a finished run is not paused", snap.Done(), snap.Breakpoint)
	}
	c.want(t, map[string]int{"work": 1})
}
