package flow_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"assistant/flow"
)

// countingStore is a Checkpointer that counts the reads of a thread's head
// (Get without a checkpoint id). It hides every optional power of the store
// it wraps; countingHeadWriter passes HeadWriter on.
type countingStore struct {
	flow.Checkpointer
	headReads atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, thread, id string) (*flow.Checkpoint, error) {
	if id == "" {
		c.headReads.Add(1)
	}
	return c.Checkpointer.Get(ctx, thread, id)
}

// countingHeadWriter is a countingStore with the HeadWriter power of the
// store it wraps.
type countingHeadWriter struct{ *countingStore }

func (c countingHeadWriter) PutWritesAtHead(ctx context.Context, thread, id string, ws []flow.Write) error {
	return c.Checkpointer.(flow.HeadWriter).PutWritesAtHead(ctx, thread, id, ws)
}

// counting wraps inner in a countingStore, with inner's HeadWriter power
// when headWriter is set, and returns the store and its count of head reads.
func counting(inner flow.Checkpointer, headWriter bool) (flow.Checkpointer, *atomic.Int64) {
	c := &countingStore{Checkpointer: inner}
	if headWriter {
		return countingHeadWriter{c}, &c.headReads
	}
	return c, &c.headReads
}

// resumeStep is one call of a resumeScenario: the command made from the
// snapshot of the head, and the error both Resume and ResumeAt must match
// (nil for none).
type resumeStep struct {
	cmd     func(tb testing.TB, snap *flow.Snapshot[St]) flow.Command
	wantErr error
}

// answer returns a command that answers the question asked by node.
func answer(node, value string) func(testing.TB, *flow.Snapshot[St]) flow.Command {
	return func(tb testing.TB, snap *flow.Snapshot[St]) flow.Command {
		return flow.Command{ResumeMap: map[string]any{byNode(tb, snap, node): value}}
	}
}

// command returns a command that does not depend on the snapshot.
func command(cmd flow.Command) func(testing.TB, *flow.Snapshot[St]) flow.Command {
	return func(testing.TB, *flow.Snapshot[St]) flow.Command { return cmd }
}

// resumeScenario is a run driven once with Resume and once with State
// and ResumeAt: a graph, its breakpoints, and the calls after Invoke.
type resumeScenario struct {
	name   string
	graph  func(c *calls) *flow.Graph[St]
	before []string // Options.InterruptBefore
	steps  []resumeStep
}

// resumeScenarios are the scenarios of TestResumeAtMatchesResume.
func resumeScenarios() []resumeScenario {
	twoAsks := func(c *calls) *flow.Graph[St] { return fanOut(c, ask(c, "b"), ask(c, "c")) }
	chain := func(c *calls) *flow.Graph[St] {
		return flow.NewGraph(reduce).AddNode("a", step(c, "a")).AddNode("b", step(c, "b")).
			AddEdge(flow.Start, "a").AddEdge("a", "b").AddEdge("b", flow.End)
	}
	return []resumeScenario{
		{"AnswerTheQuestion", approval, nil, []resumeStep{
			{cmd: command(flow.Command{Resume: "yes"})},
		}},
		{"RefusalsThenAnswer", approval, nil, []resumeStep{
			{cmd: command(flow.Command{}), wantErr: flow.ErrResumeValueRequired},
			{cmd: command(flow.Command{ResumeMap: map[string]any{"nope": "x"}}), wantErr: flow.ErrUnknownInterrupt},
			{cmd: command(flow.Command{Resume: "yes"})},
			{cmd: command(flow.Command{Resume: "again"}), wantErr: flow.ErrNoPendingInterrupt},
			{cmd: command(flow.Command{})}, // an ended thread: nothing to do
		}},
		{"ParallelQuestionsOneByOne", twoAsks, nil, []resumeStep{
			{cmd: command(flow.Command{Resume: "both?"}), wantErr: flow.ErrAmbiguousResume},
			{cmd: answer("b", "B!")},
			{cmd: answer("c", "C!")},
		}},
		{"ContinueAtBreakpoint", chain, []string{"b"}, []resumeStep{
			{cmd: command(flow.Command{Resume: "x"}), wantErr: flow.ErrNoPendingInterrupt},
			{cmd: command(flow.Command{})},
		}},
		{"ContinueSiblingsAtBreakpoint", func(c *calls) *flow.Graph[St] { return fanOut(c, step(c, "b"), step(c, "c")) }, []string{"b"}, []resumeStep{
			{cmd: command(flow.Command{})},
		}},
	}
}

// TestResumeAtMatchesResume drives each scenario on two threads, one with
// Resume and one with State then ResumeAt, and checks every call gives the
// same result, runs the same nodes, and that ResumeAt reads no head where
// the store has the HeadWriter power (Resume reads one).
func TestResumeAtMatchesResume(t *testing.T) {
	t.Parallel()
	for _, sc := range resumeScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
				for _, hw := range []bool{true, false} {
					wantReads := int64(0)
					if !hw {
						wantReads = 1 // no HeadWriter: the head is checked by reading it
					}
					storeA, readsA := counting(open(t), hw)
					storeB, readsB := counting(open(t), hw)
					cA, cB := newCalls(), newCalls()
					rA := mustCompile(t, sc.graph(cA), flow.Options{Checkpointer: storeA, InterruptBefore: sc.before})
					rB := mustCompile(t, sc.graph(cB), flow.Options{Checkpointer: storeB, InterruptBefore: sc.before})
					sameOutcome(t, "invoke", must(t)(rA.Invoke(t.Context(), "t1", St{})), must(t)(rB.Invoke(t.Context(), "t1", St{})))
					for i, st := range sc.steps {
						headA := must(t)(rA.State(t.Context(), "t1"))
						n := readsA.Load()
						snapA, errA := rA.Resume(t.Context(), "t1", st.cmd(t, headA))
						if got := readsA.Load() - n; got != 1 {
							t.Errorf("step %d: Resume read the head %d times, want 1", i, got)
						}
						headB := must(t)(rB.State(t.Context(), "t1"))
						n = readsB.Load()
						snapB, errB := rB.ResumeAt(t.Context(), headB, st.cmd(t, headB))
						if got := readsB.Load() - n; got != wantReads {
							t.Errorf("step %d (head writer %v): ResumeAt read the head %d times, want %d", i, hw, got, wantReads)
						}
						if !matchErr(errA, st.wantErr) || !matchErr(errB, st.wantErr) {
							t.Fatalf("step %d: Resume err %v, ResumeAt err %v; want %v", i, errA, errB, st.wantErr)
						}
						sameOutcome(t, "step", snapA, snapB)
						if a, b := cA.snapshot(), cB.snapshot(); !mapsEqual(a, b) {
							t.Fatalf("step %d: nodes ran %v with Resume, %v with ResumeAt", i, a, b)
						}
					}
				}
			})
		})
	}
}

// matchErr reports whether err is nil when want is, and matches want
// otherwise.
func matchErr(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

// sameOutcome fails the test unless a and b show runs at the same point:
// values, nodes due, open questions by node, breakpoint and step. Both may
// be nil (a refused call).
func sameOutcome(tb testing.TB, what string, a, b *flow.Snapshot[St]) {
	tb.Helper()
	if (a == nil) != (b == nil) {
		tb.Fatalf("%s: snapshots %+v and %+v", what, a, b)
	}
	if a == nil {
		return
	}
	type view struct {
		Values     St
		Next       []string
		Pending    []string
		Breakpoint string
		Step       int
		Done       bool
	}
	va := view{a.Values, a.Next, pendingNodes(a), a.Breakpoint, a.Step, a.Done()}
	vb := view{b.Values, b.Next, pendingNodes(b), b.Breakpoint, b.Step, b.Done()}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	if string(ja) != string(jb) {
		tb.Fatalf("%s: Resume gave %s, ResumeAt %s", what, ja, jb)
	}
}

// dump returns the thread's checkpoints, newest first, each with its
// pending writes, as JSON: what a call that writes nothing leaves as it was.
func dump(tb testing.TB, s flow.Checkpointer, thread string) string {
	tb.Helper()
	ctx := context.Background()
	cps, err := s.List(ctx, thread, flow.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	for i, cp := range cps {
		if cps[i], err = s.Get(ctx, thread, cp.ID); err != nil {
			tb.Fatal(err)
		}
	}
	b, err := json.Marshal(cps)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// movedHeadCase is a thread whose head another writer moves (move) after
// a snapshot was read, and the ResumeAt call (cmd) from that snapshot.
type movedHeadCase struct {
	name   string
	graph  func(c *calls) *flow.Graph[St]
	before []string // Options.InterruptBefore
	move   func(ctx context.Context, r *flow.Runnable[St], s flow.Checkpointer) error
	cmd    func(tb testing.TB, snap *flow.Snapshot[St]) flow.Command
	// ran counts node runs of the ResumeAt call with HeadWriter; without
	// it the head is read first and no node runs.
	ran map[string]int
}

// movedHeadCases are the cases of TestResumeAtMovedHead.
func movedHeadCases() []movedHeadCase {
	fix := St{Trace: []string{"fix"}}
	return []movedHeadCase{
		{
			name:  "AnsweredByAnother",
			graph: approval,
			move: func(ctx context.Context, r *flow.Runnable[St], _ flow.Checkpointer) error {
				_, err := r.Resume(ctx, "t1", flow.Command{Resume: "first"})
				return err
			},
			cmd: command(flow.Command{Resume: "second"}),
			ran: map[string]int{"review": 0, "submit": 0},
		},
		{
			name:  "PartialAnswerAfterCorrection",
			graph: func(c *calls) *flow.Graph[St] { return fanOut(c, ask(c, "b"), ask(c, "c")) },
			move: func(ctx context.Context, r *flow.Runnable[St], _ flow.Checkpointer) error {
				_, err := r.UpdateState(ctx, "t1", fix, "a")
				return err
			},
			cmd: answer("b", "B!"),
			ran: map[string]int{"b": 0, "c": 0},
		},
		{
			name:   "ContinueSiblingsAfterCorrection",
			graph:  func(c *calls) *flow.Graph[St] { return fanOut(c, step(c, "b"), step(c, "c")) },
			before: []string{"b"},
			move: func(ctx context.Context, r *flow.Runnable[St], _ flow.Checkpointer) error {
				_, err := r.UpdateState(ctx, "t1", fix, "a")
				return err
			},
			cmd: command(flow.Command{}),
			ran: map[string]int{"b": 1, "c": 1, "d": 0}, // run, then refused, as in a race of two Resume calls
		},
		{
			name: "ContinueAloneAfterCorrection",
			graph: func(c *calls) *flow.Graph[St] {
				return flow.NewGraph(reduce).AddNode("a", step(c, "a")).AddNode("b", step(c, "b")).
					AddEdge(flow.Start, "a").AddEdge("a", "b").AddEdge("b", flow.End)
			},
			before: []string{"b"},
			move: func(ctx context.Context, r *flow.Runnable[St], _ flow.Checkpointer) error {
				_, err := r.UpdateState(ctx, "t1", fix, "a")
				return err
			},
			cmd: command(flow.Command{}),
			ran: map[string]int{"b": 1},
		},
		{
			name:  "ThreadDeleted",
			graph: approval,
			move: func(ctx context.Context, _ *flow.Runnable[St], s flow.Checkpointer) error {
				return s.DeleteThread(ctx, "t1")
			},
			cmd: command(flow.Command{Resume: "yes"}),
			ran: map[string]int{"review": 0},
		},
	}
}

// TestResumeAtMovedHead reads a snapshot, lets another writer move the
// thread's head, and checks ResumeAt from the old snapshot fails with
// ErrConflict and writes nothing, with and without the HeadWriter power:
// also where the run would have written no checkpoint (a partial answer).
func TestResumeAtMovedHead(t *testing.T) {
	t.Parallel()
	for _, tc := range movedHeadCases() {
		t.Run(tc.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
				for _, hw := range []bool{true, false} {
					checkMovedHead(t, tc, open(t), hw)
				}
			})
		})
	}
}

// checkMovedHead runs tc on base, wrapped with its HeadWriter power when
// hw is set (see counting).
func checkMovedHead(t *testing.T, tc movedHeadCase, base flow.Checkpointer, hw bool) {
	t.Helper()
	store, _ := counting(base, hw)
	c := newCalls()
	r := mustCompile(t, tc.graph(c), flow.Options{Checkpointer: store, InterruptBefore: tc.before})
	must(t)(r.Invoke(t.Context(), "t1", St{}))
	snap := must(t)(r.State(t.Context(), "t1"))
	other := mustCompile(t, tc.graph(newCalls()), flow.Options{Checkpointer: base, InterruptBefore: tc.before})
	if err := tc.move(t.Context(), other, base); err != nil {
		t.Fatalf("moving the head: %v", err)
	}
	before, ranBefore := dump(t, base, "t1"), c.snapshot()
	_, err := r.ResumeAt(t.Context(), snap, tc.cmd(t, snap))
	var ce *flow.ConflictError
	if !errors.Is(err, flow.ErrConflict) || !errors.As(err, &ce) {
		t.Fatalf("head writer %v: err %v, want a *ConflictError", hw, err)
	}
	if ce.Want != snap.CheckpointID {
		t.Errorf("conflict %+v, want the snapshot's checkpoint %s as Want", ce, snap.CheckpointID)
	}
	if after := dump(t, base, "t1"); after != before {
		t.Fatalf("head writer %v: ResumeAt wrote to the thread:\nbefore %s\nafter  %s", hw, before, after)
	}
	for node, n := range tc.ran {
		if !hw {
			n = 0
		}
		if got := c.get(node) - ranBefore[node]; got != n {
			t.Errorf("head writer %v: node %s ran %d times in ResumeAt, want %d", hw, node, got, n)
		}
	}
}

// TestResumeAtSnapshotNotFromState checks a snapshot State did not make
// (here Invoke's) still resumes, at the cost of one read of the head, and
// that the snapshot given is not changed by the run.
func TestResumeAtSnapshotNotFromState(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
		store, reads := counting(open(t), true)
		r := mustCompile(t, approval(newCalls()), flow.Options{Checkpointer: store})
		snap := must(t)(r.Invoke(t.Context(), "t1", St{}))
		n := reads.Load()
		done := must(t)(r.ResumeAt(t.Context(), snap, flow.Command{Resume: "yes"}))
		if got := reads.Load() - n; got != 1 {
			t.Errorf("ResumeAt read the head %d times, want 1", got)
		}
		if !done.Done() || done.Values.Answers["review"] != "yes" {
			t.Fatalf("values %+v done %v", done.Values, done.Done())
		}
		if !snap.Waiting() || len(snap.Tasks) != 1 || snap.Tasks[0].Answers != nil {
			t.Fatalf("the snapshot given changed: %+v", snap)
		}
		if _, err := r.ResumeAt(t.Context(), nil, flow.Command{}); err == nil {
			t.Fatal("ResumeAt(nil): want an error")
		}
	})
}

// TestResumeAtKeepsTheSnapshot checks ResumeAt does not change the snapshot
// from State it is given: its tasks and questions stay as they were read,
// and the snapshot State reads next shows what the run saved.
func TestResumeAtKeepsTheSnapshot(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, open func(testing.TB) flow.Checkpointer) {
		c := newCalls()
		r := mustCompile(t, fanOut(c, ask(c, "b"), ask(c, "c")), flow.Options{Checkpointer: open(t)})
		must(t)(r.Invoke(t.Context(), "t1", St{}))
		head := must(t)(r.State(t.Context(), "t1"))
		want, _ := json.Marshal(head)
		snap := must(t)(r.ResumeAt(t.Context(), head, answer("b", "B!")(t, head)))
		if got := pendingNodes(snap); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("pending %v, want [c]", got)
		}
		if got, _ := json.Marshal(head); string(got) != string(want) {
			t.Fatalf("the snapshot given changed:\n was %s\n now %s", want, got)
		}
		head = must(t)(r.State(t.Context(), "t1"))
		if got := pendingNodes(head); !slices.Equal(got, []string{"c"}) || !head.Tasks[0].Done {
			t.Fatalf("head read again: pending %v, tasks %+v; want b done and c asking", got, head.Tasks)
		}
		done := must(t)(r.ResumeAt(t.Context(), head, answer("c", "C!")(t, head)))
		if !done.Done() || done.Values.Answers["b"] != "B!" || done.Values.Answers["c"] != "C!" {
			t.Fatalf("values %+v done %v", done.Values, done.Done())
		}
		c.want(t, map[string]int{"a": 1, "b": 2, "c": 2, "d": 1})
	})
}
