package flow_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"assistant/checkpoints"
	"assistant/flow"
)

// Doc is the state of the examples.
type Doc struct {
	Steps    []string `json:"steps,omitempty"`
	Approved string   `json:"approved,omitempty"`
}

func mergeDoc(s, u Doc) Doc {
	s.Steps = append(slices.Clone(s.Steps), u.Steps...)
	if u.Approved != "" {
		s.Approved = u.Approved
	}
	return s
}

func did(name string) flow.NodeFunc[Doc] {
	return func(context.Context, Doc) (Doc, error) { return Doc{Steps: []string{name}}, nil }
}

// A run asks a question, stops, and is resumed later with the answer.
func Example() {
	ctx := context.Background()
	g := flow.NewGraph(mergeDoc).
		AddNode("draft", did("draft")).
		AddNode("review", func(ctx context.Context, d Doc) (Doc, error) {
			who, err := flow.Interrupt[string](ctx, "who approves the draft?")
			if err != nil {
				return Doc{}, fmt.Errorf("review: %w", err) // parks the task
			}
			return Doc{Steps: []string{"review"}, Approved: who}, nil
		}).
		AddNode("submit", did("submit")).
		AddEdge(flow.Start, "draft").AddEdge("draft", "review").
		AddEdge("review", "submit").AddEdge("submit", flow.End)
	r, err := g.Compile(flow.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		panic(err)
	}

	snap, _ := r.Invoke(ctx, "doc-1", Doc{})
	fmt.Println("asked:", string(snap.Interrupts[0].Value), "next:", snap.Next)

	snap, _ = r.Resume(ctx, "doc-1", flow.Command{Resume: "Ada"})
	fmt.Println("steps:", snap.Values.Steps, "approved by:", snap.Values.Approved, "done:", snap.Done())
	// Output:
	// asked: "who approves the draft?" next: [review]
	// steps: [draft review submit] approved by: Ada done: true
}

// A caller that read the head to check an answer continues from that
// snapshot: ResumeAt does not read the head again, and refuses with
// ErrConflict if the thread moved on meanwhile.
func ExampleRunnable_ResumeAt() {
	ctx := context.Background()
	g := flow.NewGraph(mergeDoc).
		AddNode("review", func(ctx context.Context, d Doc) (Doc, error) {
			who, err := flow.Interrupt[string](ctx, "who approves?")
			if err != nil {
				return Doc{}, err
			}
			return Doc{Steps: []string{"review"}, Approved: who}, nil
		}).
		AddEdge(flow.Start, "review").AddEdge("review", flow.End)
	r, err := g.Compile(flow.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		panic(err)
	}
	if _, err := r.Invoke(ctx, "doc-1", Doc{}); err != nil {
		panic(err)
	}

	head, _ := r.State(ctx, "doc-1") // e.g. to show the question first
	fmt.Println("waiting:", head.Waiting())
	snap, _ := r.ResumeAt(ctx, head, flow.Command{Resume: "Ada"})
	fmt.Println("approved by:", snap.Values.Approved, "done:", snap.Done())

	_, err = r.ResumeAt(ctx, head, flow.Command{Resume: "Bob"}) // head is stale now
	fmt.Println("stale snapshot refused:", errors.Is(err, flow.ErrConflict))
	// Output:
	// waiting: true
	// approved by: Ada done: true
	// stale snapshot refused: true
}

// Two parallel tasks ask at once; each question is answered by its id, and
// the snapshot lists only those still open.
func ExampleCommand_resumeMap() {
	ctx := context.Background()
	ask := func(name string) flow.NodeFunc[Doc] {
		return func(ctx context.Context, d Doc) (Doc, error) {
			ok, err := flow.Interrupt[string](ctx, "approve "+name+"?")
			if err != nil {
				return Doc{}, err
			}
			return Doc{Steps: []string{name + ":" + ok}}, nil
		}
	}
	g := flow.NewGraph(mergeDoc).
		AddNode("legal", ask("legal")).AddNode("finance", ask("finance")).
		AddEdge(flow.Start, "legal").AddEdge(flow.Start, "finance").
		AddEdge("legal", flow.End).AddEdge("finance", flow.End)
	r, _ := g.Compile(flow.Options{Checkpointer: checkpoints.NewMemory()})

	snap, _ := r.Invoke(ctx, "doc-2", Doc{})
	fmt.Println("pending:", len(snap.Interrupts))
	ids := map[string]string{}
	for _, in := range snap.Interrupts {
		ids[in.Node] = in.ID
	}
	snap, _ = r.Resume(ctx, "doc-2", flow.Command{ResumeMap: map[string]any{ids["legal"]: "yes"}})
	fmt.Println("pending:", len(snap.Interrupts), "from", snap.Interrupts[0].Node)
	_, err := r.Resume(ctx, "doc-2", flow.Command{ResumeMap: map[string]any{ids["legal"]: "again"}})
	fmt.Println("answer legal again:", err != nil)
	snap, _ = r.Resume(ctx, "doc-2", flow.Command{ResumeMap: map[string]any{ids["finance"]: "no"}})
	fmt.Println("steps:", snap.Values.Steps, "done:", snap.Done())
	// Output:
	// pending: 2
	// pending: 1 from finance
	// answer legal again: true
	// steps: [finance:no legal:yes] done: true
}

// A static breakpoint pauses without a question; an empty Command continues.
func ExampleOptions_interruptBefore() {
	ctx := context.Background()
	g := flow.NewGraph(mergeDoc).AddNode("work", did("work")).
		AddEdge(flow.Start, "work").AddEdge("work", flow.End)
	r, _ := g.Compile(flow.Options{Checkpointer: checkpoints.NewMemory(), InterruptBefore: []string{"work"}})

	snap, _ := r.Invoke(ctx, "job", Doc{})
	fmt.Println("next:", snap.Next, "question:", snap.Waiting(), "breakpoint:", snap.AtBreakpoint())
	snap, _ = r.Resume(ctx, "job", flow.Command{})
	fmt.Println("steps:", snap.Values.Steps, "done:", snap.Done())
	// Output:
	// next: [work] question: false breakpoint: true
	// steps: [work] done: true
}

// An operator correction goes through the reducer as if a node wrote it.
func ExampleRunnable_UpdateState() {
	ctx := context.Background()
	g := flow.NewGraph(mergeDoc).
		AddNode("review", func(ctx context.Context, d Doc) (Doc, error) {
			who, err := flow.Interrupt[string](ctx, "approve?")
			if err != nil {
				return Doc{}, err
			}
			return Doc{Approved: who}, nil
		}).
		AddNode("submit", did("submit")).
		AddEdge(flow.Start, "review").AddEdge("review", "submit").AddEdge("submit", flow.End)
	r, _ := g.Compile(flow.Options{Checkpointer: checkpoints.NewMemory()})

	r.Invoke(ctx, "doc-3", Doc{})
	snap, _ := r.UpdateState(ctx, "doc-3", Doc{Approved: "operator"}, "review")
	fmt.Println("source:", snap.Metadata.Source, "next:", snap.Next, "question:", snap.Waiting())
	snap, _ = r.Resume(ctx, "doc-3", flow.Command{})
	fmt.Println("approved by:", snap.Values.Approved, "steps:", snap.Values.Steps)
	// Output:
	// source: update next: [submit] question: false
	// approved by: operator steps: [submit]
}

// History lists every checkpoint, newest first.
func ExampleRunnable_History() {
	ctx := context.Background()
	g := flow.NewGraph(mergeDoc).AddNode("a", did("a")).AddNode("b", did("b")).
		AddEdge(flow.Start, "a").AddEdge("a", "b").AddEdge("b", flow.End)
	r, _ := g.Compile(flow.Options{Checkpointer: checkpoints.NewMemory()})
	r.Invoke(ctx, "doc-4", Doc{})

	hist, _ := r.History(ctx, "doc-4", 0)
	for _, s := range hist {
		var wrote []string
		for n := range s.Metadata.Writes {
			wrote = append(wrote, n)
		}
		fmt.Printf("step %d %-5s wrote %v next %v\n", s.Step, s.Metadata.Source, wrote, s.Next)
	}
	// Output:
	// step 1 loop  wrote [b] next []
	// step 0 loop  wrote [a] next [b]
	// step -1 input wrote [] next [a]
}

// A subgraph runs as one node; its question surfaces with its path.
func ExampleSubgraphNode() {
	ctx := context.Background()
	approvals := flow.NewGraph(mergeDoc).
		AddNode("sign", func(ctx context.Context, d Doc) (Doc, error) {
			who, err := flow.Interrupt[string](ctx, "signature?")
			if err != nil {
				return Doc{}, err
			}
			return Doc{Steps: []string{"signed"}, Approved: who}, nil
		}).
		AddEdge(flow.Start, "sign").AddEdge("sign", flow.End)
	same := func(d Doc) Doc { return d }
	g := flow.NewGraph(mergeDoc).
		AddNode("review", flow.SubgraphNode(approvals, func(Doc) Doc { return Doc{} }, same)).
		AddEdge(flow.Start, "review").AddEdge("review", flow.End)
	r, _ := g.Compile(flow.Options{Checkpointer: checkpoints.NewMemory()})

	snap, _ := r.Invoke(ctx, "doc-5", Doc{})
	fmt.Println("asked at:", snap.Interrupts[0].Path)
	snap, _ = r.Resume(ctx, "doc-5", flow.Command{Resume: "Grace"})
	fmt.Println("steps:", snap.Values.Steps, "approved by:", snap.Values.Approved)
	// Output:
	// asked at: [review sign]
	// steps: [signed] approved by: Grace
}
