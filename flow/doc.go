// Package flow is a small durable graph engine: a state graph whose runs are
// saved after every step, can stop to ask a person a question, and carry on in
// a later process — after minutes, days or a crash — from where they stopped.
//
// Build a Graph over a state type S (a Go struct, stored as JSON), add nodes
// and edges, and Compile it with a Checkpointer (checkpoints.NewMemory for
// tests, checkpoints.OpenSQLite for real runs). A node returns a partial
// update; the graph's Reducer merges it into the state.
//
//	g := flow.NewGraph(reduce).
//		AddNode("draft", draft).
//		AddNode("review", review). // asks with flow.Interrupt
//		AddNode("submit", submit).
//		AddEdge(flow.Start, "draft").AddEdge("draft", "review").
//		AddEdge("review", "submit").AddEdge("submit", flow.End)
//	r, err := g.Compile(flow.Options{Checkpointer: store})
//	snap, err := r.Invoke(ctx, "return-25", State{Order: "A3003"})
//	// snap.Interrupts[0] is the review question; later, in any process:
//	snap, err = r.Resume(ctx, "return-25", flow.Command{Resume: "approve"})
//
// # Supersteps, fan-out and joins
//
// A run is a sequence of supersteps. The nodes due (Snapshot.Next) run as the
// tasks of one superstep, concurrently; then their updates are merged in the
// order of the node names — not the order they finished — and one checkpoint
// is written. Several edges leaving a node, or a router (AddConditionalEdges)
// returning several nodes, fan out. A node reached by several edges in the
// same superstep runs once. AddJoin([]string{"a", "b"}, "c") runs c once,
// after a and b have both finished, however many supersteps apart.
//
// # Pending writes
//
// When a superstep has more than one task, each task's update is saved the
// moment it finishes. If a sibling then asks a question, fails, or the process
// dies, the finished tasks are not run again: resuming runs only the tasks
// that did not finish.
//
// # Questions (interrupts)
//
// A node asks with Interrupt and returns the error it gets (wrapping is fine,
// fmt.Errorf("approval: %w", err) still parks the task):
//
//	ok, err := flow.Interrupt[bool](ctx, Question{Draft: d})
//	if err != nil {
//		return State{}, err // parks the task; the run stops here
//	}
//	// resumed: ok is the person's answer
//
// On resume the task runs again from its start and Interrupt returns the
// answer; a node may therefore run more than once, so put side effects after
// the question or key them with an idempotency key. A node that got the
// interrupt error and returned success anyway fails (ErrInterruptIgnored)
// rather than running past the gate.
//
// Every question has a stable id. Several may be pending at once — from
// parallel tasks, or from one node asking several before it returns. Answer
// one with Command{Resume: v} when it is the only one, or any of them with
// Command{ResumeMap: map[string]any{id: v}}. A single value while several are
// pending (ErrAmbiguousResume), an unknown or already answered id
// (*UnknownInterruptError), an answer with no question (ErrNoPendingInterrupt)
// or no answer while one is asked (ErrResumeValueRequired) is refused and
// changes nothing. After a partial answer the snapshot lists only the
// questions still open; a task runs again only when all of its questions have
// answers.
//
// # Breakpoints
//
// Options.InterruptBefore and InterruptAfter pause a run before a node runs
// or after its superstep is saved. A pause asks nothing: Snapshot.Next is set,
// Snapshot.Interrupts is empty and Snapshot.AtBreakpoint reports true, so a UI
// shows "continue", not an answer form. Resume with an empty Command
// continues; a value is refused (ErrNoPendingInterrupt), and an empty Command
// while a question is open is refused too.
//
// # Recursion limit
//
// Options.RecursionLimit (DefaultRecursionLimit) counts the supersteps of one
// Invoke or Resume call, not of the thread's life: a thread resumed a hundred
// times never hits it by accident. A run that reaches it stops with a
// *RecursionLimitError; its last checkpoint stays the resume point.
//
// # Operator corrections and history
//
// UpdateState(ctx, thread, values, "review") applies values through the
// reducer as if node review had written them and records a checkpoint of its
// own (Metadata.Source "update"); next are review's successors, and questions
// open at the old head are dropped. History lists every checkpoint of a
// thread newest first, each with its step, source, the writes of each node
// and next. Only the head can be resumed: forking a run from an older
// checkpoint (time travel) is not supported.
//
// # Subgraphs
//
// SubgraphNode runs a whole graph as one node of another. A question asked
// inside surfaces to the caller with Path (e.g. ["review", "approve"]) and is
// answered by id like any other. On resume the parent node re-runs from its
// start, and the child from its start with the answers replayed: code in the
// parent node before the child runs once per resume.
//
//	g.AddNode("review", flow.SubgraphNode(approvals, toApproval, fromApproval))
//
// # Concurrency
//
// Checkpoints form a chain per thread; Checkpointer.Put is a compare-and-set
// on the head. Two engines — goroutines or processes — resuming one thread
// at the same moment both run, exactly one commits, and the other gets an
// error matching ErrConflict; nothing of the winner is lost and nothing of
// the loser lands. A second answer to a question whose first answer is still
// being used is refused the same way (*AnswerInFlightError).
//
// A caller that has read the head already (State, to show the question or
// check an answer) continues with ResumeAt(ctx, snap, cmd) instead of
// Resume: the head is not read again, and if the thread moved on since the
// snapshot was read, the first write is refused with ErrConflict and nothing
// is written (stores with HeadWriter check pending writes against the head
// in the same commit).
//
// # Store powers
//
// Checkpointer is all the engine needs. Stores offer more through optional
// interfaces, found by type assertion as database/sql does: Syncer and
// DurableWriter (durability against power loss at the end of a run),
// HeadWriter (ResumeAt's check), Pruner (dropping old checkpoints) and
// Bufferer (a WriteBuffer that keeps many runs' writes for one commit):
//
//	if p, ok := store.(flow.Pruner); ok {
//		rows, bytes, err := p.Prune(ctx, threadID, 1)
//		…
//	}
package flow
