package returns

import "fmt"

// Outcome is where a task stands for a program that branches on it: the
// exit code of wait, and of start, resume, show and batch when asked to
// exit by it (docs/cli.md "Exit codes"). cmd maps each to its number;
// this package decides which one a View is.
type Outcome int

// The outcomes, in the order of their exit codes (0, 5, 6, 7, 8).
const (
	// OutcomeDone: the request was submitted, or a batch ran every row.
	OutcomeDone Outcome = iota
	// OutcomeCancelled: a person cancelled the request.
	OutcomeCancelled
	// OutcomeFailed: the run ended failed; View.Error.Code says why
	// (draft_expired, final_sale, attempts_exhausted, …). A task waiting
	// at an approval whose draft has expired is failed too: no answer can
	// submit it any more.
	OutcomeFailed
	// OutcomeNotFinished: a person must still answer (waiting), or a live
	// process still drives the run (running, holder alive).
	OutcomeNotFinished
	// OutcomeInterrupted: the run was stopped (status interrupted), or it
	// is running but the process that drove it is gone; Resume or Recover
	// continues it.
	OutcomeInterrupted
)

// String names the outcome as docs/cli.md "Exit codes" does.
func (o Outcome) String() string {
	switch o {
	case OutcomeDone:
		return "done"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeFailed:
		return "failed"
	case OutcomeNotFinished:
		return "not finished"
	case OutcomeInterrupted:
		return "interrupted"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// OutcomeOf is the outcome of the task v shows. A task waiting at (or
// stopped at) an approval whose draft has expired (View.DraftExpired, as
// of when the view was made) is failed. A running view without a holder
// (no lease read) counts as not finished, and so does an unknown status:
// nothing says it ended.
func OutcomeOf(v *View) Outcome {
	if v.DraftExpired() {
		return OutcomeFailed
	}
	switch v.Status {
	case StatusDone:
		return OutcomeDone
	case StatusCancelled:
		return OutcomeCancelled
	case StatusFailed:
		return OutcomeFailed
	case StatusInterrupted:
		return OutcomeInterrupted
	case StatusRunning:
		if v.Holder != nil && !v.Holder.Alive {
			return OutcomeInterrupted
		}
	}
	return OutcomeNotFinished
}
