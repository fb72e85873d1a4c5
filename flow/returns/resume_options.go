package returns

import (
	"fmt"
	"slices"
	"strings"

	"assistant/internal/termtext"
)

// ResumeOptions are the input of Resume. Set Reason (with HasReason) to
// answer need_reason, Action to answer approval, neither to continue a run
// that stopped part-way. User is who answers: the task's owner or an
// approver the owner granted (ErrNotFound for anyone else).
type ResumeOptions struct {
	Task      string
	User      string
	Reason    string // a reason answer, or the new reason of an edit
	HasReason bool
	Action    string // approve, cancel, edit (with Reason) or revise (with Comment)
	Comment   string // what a revise asks the owner to change
	DraftID   string // optional: must name the current draft (an older version: stale, ErrConflict)
	// Version, optional (0: any), must be the current draft's version; an
	// older one is stale (ErrConflict).
	Version     int
	InterruptID string // optional: which pending interrupt to answer
	// DecisionID, when set, is the id the answer's decision is recorded
	// under (the trail keeps one decision per id): a decide row gives the
	// same id each time it is run again after a crash, so its decision is
	// recorded once. "" makes a new id per answer.
	DecisionID string
}

// answering reports whether o answers a question (rather than continuing a
// run).
func (o ResumeOptions) answering() bool { return o.HasReason || o.Action != "" }

// reasonAnswer reports whether o answers a need_reason question (an edit
// gives a reason too, at the approval question).
func (o ResumeOptions) reasonAnswer() bool { return o.HasReason && o.Action == "" }

// given is the answer o gives as a message says it: its action, or its
// reason (its Input worded by the front end).
func (o ResumeOptions) given() phrase {
	if o.Action != "" {
		return phrasef("%s", o.Action)
	}
	return phrasef("%s %q", InputReason, o.Reason)
}

// CheckResume checks ResumeOptions without touching any file; errors match
// ErrInvalid (checkResume).
func CheckResume(o ResumeOptions) error { return checkResume(o) }

// checkResume checks ResumeOptions without touching any file; errors match
// ErrInvalid. A blank reason is an answer the flow refuses by asking again;
// a reason that can never be valid (control characters, too long) is bad
// input.
func checkResume(o ResumeOptions) error {
	if o.Action != "" && !slices.Contains(Actions, o.Action) {
		return errorf(Hint{}, "%w: %s must be one of %s, not %s", ErrInvalid, InputAction, strings.Join(Actions, ", "), termtext.Quote(o.Action))
	}
	if o.HasReason && o.Action != "" && o.Action != ActionEdit {
		return errorf(Hint{}, "%w: give %s or %s, not both (only %s edit takes %s, the new draft's reason)", ErrInvalid, InputReason, InputAction, InputAction, InputReason)
	}
	if o.Action == ActionEdit {
		if !o.HasReason {
			return errorf(Hint{}, "%w: %s edit needs %s, the reason of the new draft version", ErrInvalid, InputAction, InputReason)
		}
		if err := ValidReason(strings.TrimSpace(o.Reason)); err != nil {
			return errorf(Hint{}, "%w: %s edit needs %s, the reason of the new draft version (%v)", ErrInvalid, InputAction, InputReason, err)
		}
	}
	if (o.Comment != "") != (o.Action == ActionRevise) {
		if o.Action == ActionRevise {
			return errorf(Hint{}, "%w: %s revise needs %s, what the owner should change", ErrInvalid, InputAction, InputComment)
		}
		return errorf(Hint{}, "%w: %s goes with %s revise", ErrInvalid, InputComment, InputAction)
	}
	if o.Action == ActionRevise {
		if err := ValidReason(strings.TrimSpace(o.Comment)); err != nil {
			return errorf(Hint{}, "%w: %s: %v", ErrInvalid, InputComment, strings.Replace(err.Error(), "the reason", "the comment", 1))
		}
	}
	if o.Version < 0 || (o.Version > 0 && o.Action == "") {
		return errorf(Hint{}, "%w: %s names the draft version an %s is for (1 or more)", ErrInvalid, InputVersion, InputAction)
	}
	if r := strings.TrimSpace(o.Reason); o.reasonAnswer() && r != "" {
		if err := ValidReason(r); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	return nil
}
