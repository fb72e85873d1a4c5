package flow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
// Calling Interrupt outside a running node returns ErrNotInNode. An answer that
// does not decode into T returns a *ResumeDecodeError and the task fails.
func Interrupt[T any](ctx context.Context, payload any) (T, error) {
	var zero T
	sc, _ := ctx.Value(scopeKey{}).(*taskScope)
	if sc == nil {
		return zero, ErrNotInNode
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	idx := sc.calls
	sc.calls++
	id := interruptID(sc.taskID, idx)
	if raw, ok := sc.resumes[idx]; ok {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return zero, &ResumeDecodeError{InterruptID: id, Node: sc.node, Err: err}
		}
		return v, nil
	}
	val, err := json.Marshal(payload)
	if err != nil {
		return zero, fmt.Errorf("interrupt %s: encode payload: %w", sc.node, err)
	}
	ie := &InterruptError{Interrupt: PendingInterrupt{ID: id, Node: sc.node, TaskID: sc.taskID, Idx: idx, Value: val}}
	sc.raised = append(sc.raised, ie)
	return zero, ie
}

// PendingInterrupt is a question a task raised that is not answered yet.
type PendingInterrupt struct {
	ID     string          `json:"id"`      // stable id, to answer with Command.ResumeMap
	Node   string          `json:"node"`    // the node that asked
	TaskID string          `json:"task_id"` // the task that asked
	Idx    int             `json:"idx"`     // order of the Interrupt call within the node
	Value  json.RawMessage `json:"value"`   // the payload given to Interrupt, as JSON
}

// InterruptError is the error value Interrupt returns. A node returns it
// (wrapped or not) to park its task.
type InterruptError struct {
	Interrupt PendingInterrupt
}

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

// ResumeDecodeError reports an answer that does not decode into the type
// the node asked for.
type ResumeDecodeError struct {
	InterruptID string
	Node        string
	Err         error
}

func (e *ResumeDecodeError) Error() string {
	return fmt.Sprintf("resume value for interrupt %s in node %s: %v", e.InterruptID, e.Node, e.Err)
}

func (e *ResumeDecodeError) Unwrap() error { return e.Err }

// UnknownInterruptError names the id that Command.ResumeMap gave and no
// pending interrupt has. It matches ErrUnknownInterrupt.
type UnknownInterruptError struct{ ID string }

func (e *UnknownInterruptError) Error() string {
	return fmt.Sprintf("interrupt %q is not pending (unknown or already answered)", e.ID)
}

// Is makes errors.Is(err, ErrUnknownInterrupt) true.
func (e *UnknownInterruptError) Is(target error) bool { return target == ErrUnknownInterrupt }

type scopeKey struct{}

// taskScope is what Interrupt needs of the running task.
type taskScope struct {
	mu      sync.Mutex
	taskID  string
	node    string
	resumes map[int]json.RawMessage
	calls   int
	raised  []*InterruptError
}

// taskID is stable for a node within the superstep that follows checkpoint
// parent, so a re-run of the superstep gets the same task and interrupt ids.
func taskID(parent, node string) string {
	sum := sha256.Sum256([]byte(parent + "\x00" + node))
	return hex.EncodeToString(sum[:8])
}

func interruptID(task string, idx int) string {
	sum := sha256.Sum256([]byte(task + "\x00" + strconv.Itoa(idx)))
	return hex.EncodeToString(sum[:8])
}
