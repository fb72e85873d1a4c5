package flow

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Interrupt parks the running task with a question for a person.
//
// The first time a node reaches it, Interrupt returns the zero T and an
// *InterruptError that the node must return (wrapping is fine: the engine
// finds it with errors.As). The engine saves the question as a pending write
// and the run stops. When the thread is resumed with an answer, the task runs
// again from its start and this call returns the answer decoded into T.
//
// Several calls in one node are matched to answers by their order in the node:
// the first call gets the answer of the first question, and so on. Each
// question has a stable id (the same on every re-run of the task) that
// Command.ResumeMap uses.
//
// Several questions may be asked before the node returns (for example
// joined with errors.Join); they are all pending at once. Inside a subgraph
// (SubgraphNode) the question belongs to the outer task, with a Path.
//
// Calling Interrupt outside a running node returns ErrNotInNode. An answer that
// does not decode into T returns a *ResumeDecodeError and the task fails.
func Interrupt[T any](ctx context.Context, payload any) (T, error) {
	var zero T
	sc, _ := ctx.Value(scopeKey{}).(*taskScope)
	if sc == nil {
		return zero, ErrNotInNode
	}
	raw, id, err := sc.interrupt(payload)
	if err != nil {
		return zero, err
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return zero, &ResumeDecodeError{InterruptID: id, Node: sc.node, Err: err}
	}
	return v, nil
}

// PendingInterrupt is a question a task raised that is not answered yet.
type PendingInterrupt struct {
	ID     string          `json:"id"`      // stable id, to answer with Command.ResumeMap
	Node   string          `json:"node"`    // the node that asked
	TaskID string          `json:"task_id"` // the task that asked
	Idx    int             `json:"idx"`     // order of the Interrupt call within the node (a larger stable number inside a subgraph)
	Value  json.RawMessage `json:"value"`   // the payload given to Interrupt, as JSON
	// Path locates the question: [Node] for a question the node asked
	// itself, [Node, child node, …] for one asked inside a subgraph the node
	// runs (SubgraphNode).
	Path []string `json:"path,omitempty"`
}

// InterruptError is the error value Interrupt returns. A node returns it
// (wrapped or not) to park its task.
type InterruptError struct {
	Interrupt PendingInterrupt
}

// Error implements the error interface for *InterruptError.
func (e *InterruptError) Error() string {
	return fmt.Sprintf("interrupt %s in node %s", e.Interrupt.ID, e.Interrupt.Node)
}

// Command resumes a thread. With no fields set it continues a run paused at a
// static breakpoint, or stopped part-way (a crash, a cancelled context).
type Command struct {
	// Resume answers the one pending interrupt. It is an error to use it
	// when several interrupts are pending.
	Resume any
	// ResumeMap answers interrupts by id; ids not pending are an error.
	ResumeMap map[string]any
}

func (c Command) hasValue() bool { return c.Resume != nil || len(c.ResumeMap) > 0 }

// Errors of Interrupt and Resume. Each is matched with errors.Is.
var (
	// ErrNotInNode: Interrupt was called outside a node run by the engine.
	ErrNotInNode = errors.New("flow: Interrupt called outside a running node")
	// ErrInterruptIgnored: a node called Interrupt, got the interrupt error
	// and returned success anyway; the task fails instead of passing the gate.
	ErrInterruptIgnored = errors.New("flow: node returned success after Interrupt asked a question")
	// ErrNoPendingInterrupt: a resume value was given but no question is pending.
	ErrNoPendingInterrupt = errors.New("flow: no interrupt is pending")
	// ErrAmbiguousResume: one value given while several interrupts are pending.
	ErrAmbiguousResume = errors.New("flow: several interrupts are pending; answer them by id")
	// ErrResumeValueRequired: a question is pending and no answer was given.
	ErrResumeValueRequired = errors.New("flow: a question is pending; resume needs an answer")
	// ErrUnknownInterrupt: a ResumeMap id that is not pending (unknown, or already answered).
	ErrUnknownInterrupt = errors.New("flow: unknown or already answered interrupt id")
	// ErrThreadNotFound: the thread has no checkpoint.
	ErrThreadNotFound = errors.New("flow: thread not found")
	// ErrThreadExists: Invoke on a thread that already has checkpoints.
	ErrThreadExists = errors.New("flow: thread already exists")
)

// AnswerInFlightError refuses an answer to a question that another request
// answered and is still running (or that stopped before its task finished).
// It matches ErrConflict: the state changed under the request.
type AnswerInFlightError struct {
	ThreadID    string
	InterruptID string
}

// Error implements the error interface for *AnswerInFlightError.
func (e *AnswerInFlightError) Error() string {
	return fmt.Sprintf("question %s of thread %s was answered by another request that has not finished; show the thread, or resume it without an answer to continue", e.InterruptID, e.ThreadID)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *AnswerInFlightError) Is(target error) bool { return target == ErrConflict }

// ResumeDecodeError reports an answer that does not decode into the type
// the node asked for.
type ResumeDecodeError struct {
	InterruptID string
	Node        string
	Err         error
}

// Error implements the error interface for *ResumeDecodeError.
func (e *ResumeDecodeError) Error() string {
	return fmt.Sprintf("resume value for interrupt %s in node %s: %v", e.InterruptID, e.Node, e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *ResumeDecodeError) Unwrap() error { return e.Err }

// UnknownInterruptError names the id that Command.ResumeMap gave and no
// pending interrupt has. It matches ErrUnknownInterrupt.
type UnknownInterruptError struct{ ID string }

// Error implements the error interface for *UnknownInterruptError.
func (e *UnknownInterruptError) Error() string {
	return fmt.Sprintf("interrupt %q is not pending (unknown or already answered)", e.ID)
}

// Is makes errors.Is(err, ErrUnknownInterrupt) true.
func (e *UnknownInterruptError) Is(target error) bool { return target == ErrUnknownInterrupt }

type scopeKey struct{}

// taskScope is what Interrupt needs of the running task. The scope of a
// node of a subgraph (see SubgraphNode) has a parent: its questions and
// answers belong to the task of the outer graph, which alone is saved.
type taskScope struct {
	mu      sync.Mutex
	taskID  string // the outer task; "" in a subgraph scope
	node    string
	resumes map[int]json.RawMessage
	calls   int // Interrupt calls so far
	subruns int // subgraph runs so far (SubgraphNode)
	raised  []*InterruptError

	parent *taskScope // nil for a task of the outer graph
	key    string     // in a subgraph: the stable place of this child task
	path   []string   // node names from the outer task's node to this one
}

// task returns the scope of the outer graph's task.
func (sc *taskScope) task() *taskScope {
	for sc.parent != nil {
		sc = sc.parent
	}
	return sc
}

// interrupt is Interrupt without the decoding: it returns the saved answer
// of this call and the question's id, or the *InterruptError that parks the
// task.
func (sc *taskScope) interrupt(payload any) (json.RawMessage, string, error) {
	sc.mu.Lock()
	idx := sc.calls
	sc.calls++
	sc.mu.Unlock()
	root := sc.task()
	path := []string{root.node}
	if sc.parent != nil {
		// A question inside a subgraph is numbered by where it was asked
		// (child superstep, child node, call order) rather than by call
		// order in the outer task: sibling child tasks run concurrently and
		// may ask a different number of questions on each run.
		idx = subgraphIdx(sc.key + "#" + strconv.Itoa(idx))
		path = slices.Clone(sc.path)
	}
	id := interruptID(root.taskID, idx)
	root.mu.Lock()
	defer root.mu.Unlock()
	if raw, ok := root.resumes[idx]; ok {
		return raw, id, nil
	}
	val, err := json.Marshal(payload)
	if err != nil {
		return nil, id, fmt.Errorf("interrupt %s: encode payload: %w", strings.Join(path, "/"), err)
	}
	ie := &InterruptError{Interrupt: PendingInterrupt{
		ID: id, Node: root.node, TaskID: root.taskID, Idx: idx, Value: val, Path: path,
	}}
	root.raised = append(root.raised, ie)
	return nil, id, ie
}

// subgraphIdxBase keeps the numbers of subgraph questions apart from the
// call order numbers (0, 1, 2 …) of a node's own questions. Both stay below
// 2^53 so they survive any JSON reader.
const subgraphIdxBase = 1 << 40

func subgraphIdx(key string) int {
	sum := sha256.Sum256([]byte(key))
	return subgraphIdxBase + int(binary.BigEndian.Uint64(sum[:8])&(subgraphIdxBase-1))
}

// taskID is stable for a node within the superstep that follows checkpoint
// parent, so a re-run of the superstep gets the same task and interrupt ids.
func taskID(parent, node string) string {
	sum := sha256.Sum256([]byte(parent + "\x00" + node))
	return hex.EncodeToString(sum[:8])
}

// InterruptID returns the id of question idx (a node's call order, as
// PendingInterrupt.Idx and Write.Idx hold it) of task taskID: the id
// PendingInterrupt.ID carries while the question is open. A caller that
// reads a checkpoint's pending writes can name a question already
// answered by it.
func InterruptID(taskID string, idx int) string { return interruptID(taskID, idx) }

func interruptID(task string, idx int) string {
	sum := sha256.Sum256([]byte(task + "\x00" + strconv.Itoa(idx)))
	return hex.EncodeToString(sum[:8])
}
