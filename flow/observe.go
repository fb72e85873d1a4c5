package flow

// Outcomes of a task, in TaskEvent.Outcome.
const (
	OutcomeDone        = "done"        // the node returned an update
	OutcomeInterrupted = "interrupted" // the node asked a question (Interrupt)
	OutcomeFailed      = "failed"      // the node failed, was cancelled, or its write failed
)

// TaskEvent reports a task starting (Outcome "") or ending. Observers build
// timelines from them; the engine's correctness does not depend on them.
type TaskEvent struct {
	ThreadID string
	TaskID   string
	Node     string
	Step     int    // the superstep the task belongs to (0 for the first)
	Outcome  string // "" when the task starts; OutcomeDone, OutcomeInterrupted or OutcomeFailed when it ends
	Err      error  // the cause when Outcome is OutcomeFailed
}

// observe calls Options.OnTask when set. It runs on the task's goroutine, so
// an observer that is shared by parallel tasks must be safe for concurrent use.
func (r *Runnable[S]) observe(ev TaskEvent) {
	if r.opts.OnTask != nil {
		r.opts.OnTask(ev)
	}
}
