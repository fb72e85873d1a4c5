package server

import (
	"fmt"
	"net/http"
	"time"

	"assistant/flow/returns"
)

// problem is what the task page says about an answer that was not
// taken, in a desk clerk's words: a title, and a message that may name
// a time (Before, At, After: At is drawn as a time in the viewer's zone
// with UTC beside; zero for none).
type problem struct {
	ProblemTitle string
	Problem      string
	ProblemAt    time.Time
	ProblemAfter string
}

// pastTense is what an answer does, as "nothing was …" says it.
var pastTense = map[string]string{
	returns.ActionApprove: "approved",
	returns.ActionEdit:    "edited",
	returns.ActionRevise:  "sent back",
	returns.ActionCancel:  "cancelled",
	returns.ActionReason:  "answered",
}

// answerNoun names an answer as "your …" says it.
var answerNoun = map[string]string{
	returns.ActionApprove: "approval",
	returns.ActionEdit:    "edit",
	returns.ActionRevise:  "request for changes",
	returns.ActionCancel:  "cancel",
	returns.ActionReason:  "reason",
}

// fasterWords says that someone else's answer ended the task before
// action arrived: who, what and when, and that the task is as below.
func fasterWords(p *taskPage, action string) problem {
	out := problem{ProblemTitle: "Someone was faster: the task was decided before your answer arrived",
		Problem: fmt.Sprintf("Your %s changed nothing: the task is %s.", answerNoun[action], p.View.Status)}
	if n := len(p.View.Decisions); n > 0 {
		last := p.View.Decisions[n-1]
		out.Problem = fmt.Sprintf("%s answered %s at", last.By, last.Action)
		out.ProblemAt = last.At
		out.ProblemAfter = fmt.Sprintf(", before your %s arrived: yours changed nothing, and the task is %s. It is shown below as it is now.", answerNoun[action], p.View.Status)
	}
	return out
}

// refusalWords says why answer o (action) was not taken, from the task's
// page as it is now and the answer's status; msg is the service's own
// words, used only where no plainer ones fit.
func refusalWords(p *taskPage, o returns.ResumeOptions, action string, status int, msg string) problem {
	cur := p.View
	switch {
	case status == http.StatusServiceUnavailable:
		return problem{ProblemTitle: "The task is busy: try again in a moment",
			Problem: "Another answer to this task is being carried out right now. Yours changed nothing; press it again in a moment."}
	case cur.Status == returns.StatusDone || cur.Status == returns.StatusCancelled || cur.Status == returns.StatusFailed:
		return fasterWords(p, action)
	case o.Version > 0 && cur.Draft != nil && cur.Draft.Version != o.Version:
		return staleWords(p, o, action)
	case o.Action == returns.ActionApprove && o.User == cur.User && p.Needed >= 2:
		return problem{ProblemTitle: "You requested this task: your approval cannot be one of its two",
			Problem: fmt.Sprintf("A task that needs %d approvals takes them from people other than its requester. Nothing was approved; the task waits for %s from someone else.", p.Needed, plural(p.Needed-p.Given, "one more approval", "more approvals"))}
	case status == http.StatusConflict:
		return problem{ProblemTitle: "Your answer no longer fits the task", Problem: msg + ". Nothing changed; the task as it is now is below."}
	}
	return problem{ProblemTitle: "Your answer was not taken", Problem: msg + ". Nothing changed; the task as it is now is below."}
}

// staleWords says that the draft changed to another version after the
// page that sent o was loaded: which version the person saw, who made
// the current one and when, and that it is shown below to review.
func staleWords(p *taskPage, o returns.ResumeOptions, action string) problem {
	d := p.View.Draft
	out := problem{ProblemTitle: fmt.Sprintf("This draft was changed to version %d after you opened it; review version %d below", d.Version, d.Version)}
	tail := fmt.Sprintf("Nothing was %s. Read version %d below, with what changed, and answer it if it is right.", pastTense[action], d.Version)
	// The answer that made the current version: the last edit, or the
	// reason given after a request for changes.
	for i := len(p.View.Decisions) - 1; i >= 0; i-- {
		dec := p.View.Decisions[i]
		if dec.Action == returns.ActionEdit || dec.Action == returns.ActionReason {
			out.Problem = fmt.Sprintf("You opened version %d, and %s made version %d at", o.Version, dec.By, d.Version)
			out.ProblemAt = dec.At
			out.ProblemAfter = fmt.Sprintf(" with the reason “%s”. %s", d.Reason, tail)
			return out
		}
	}
	out.Problem = fmt.Sprintf("You opened version %d; the draft is version %d now, with the reason “%s”. %s", o.Version, d.Version, d.Reason, tail)
	return out
}
