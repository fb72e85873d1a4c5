package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"assistant/flow/returns"
	"assistant/runs"
)

// taskPage is a task page's data (templates/task.html).
type taskPage struct {
	View     *returns.View
	Item     string
	Question *returns.ApprovalQuestion
	// Needed and Given: approvals the draft needs, and those of the trail
	// that count for its current version.
	Needed, Given int
	// Approvers are the people whose approval of the current version
	// counts.
	Approvers []string
	// The actions that can succeed now, for the person viewing.
	Approve, Cancel, Edit, Revise, Reason bool
	// NoApprove says why approve is not offered while other actions are.
	NoApprove string
	// Closed says why nothing can be pressed; "" when something can.
	Closed string
	// DraftTitle heads the draft: as it will be submitted, as it was, or
	// plainly the draft of an ended task.
	DraftTitle string
	// Outcome is what the person's answer led to (after a redirect);
	// Problem what happened to an answer that was not taken, with its
	// title.
	Outcome string
	// OutcomeWarn is set when the answer was taken but did not do what
	// it was for (an approval that left nothing submitted).
	OutcomeWarn bool
	problem
	Trail         []returns.DecisionView
	ExpiresIn     string
	Now           time.Time
	ApplicationID string
	// Forms are the answers offered, in the order shown (answerForms).
	Forms []answerForm
	// Previous is the version before the draft (nil for version 1), and
	// Changes the fields that differ from it.
	Previous *returns.DraftView
	Changes  []draftChange
	// Steps are the run's timeline, as history shows it (timelineOf).
	Steps []timelineStep
}

// timelineStep is one step of the run's timeline as the page words it:
// what the step does, how it ended, when it started, and the attempt
// when an earlier run of the same step failed or was cut short (a
// question asked again after an answer is not a retry).
type timelineStep struct {
	runs.TimelineStep
	Words, StatusWords string
	Retry              int
}

// ranAgain reports whether later holds a step of node: a question asked
// and then answered (or asked again) is no longer waiting.
func ranAgain(later []runs.TimelineStep, node string) bool {
	for _, st := range later {
		if st.Node == node {
			return true
		}
	}
	return false
}

// timelineOf words the steps of a run's timeline.
func timelineOf(steps []runs.TimelineStep) []timelineStep {
	out := make([]timelineStep, 0, len(steps))
	broken := map[string]bool{}
	for i, st := range steps {
		ts := timelineStep{TimelineStep: st, Words: st.Node, StatusWords: st.Status}
		if w, ok := stepNames[st.Node]; ok {
			ts.Words = w
		}
		switch {
		case st.Status == runs.StepDone && (st.Node == returns.NodeReview || st.Node == returns.NodeReview2 || st.Node == returns.NodeAskReason):
			ts.StatusWords = "answered"
		case st.Status == runs.StepDone:
			ts.StatusWords = "finished"
		case st.Status == runs.StepWaiting && ranAgain(steps[i+1:], st.Node):
			ts.StatusWords = "asked"
		case st.Status == runs.StepWaiting:
			ts.StatusWords = "waiting for an answer"
		case st.Status == runs.StepRunning && i < len(steps)-1:
			ts.StatusWords = "cut short"
		}
		if broken[st.Node] {
			ts.Retry = st.Attempt
		}
		if st.Status == runs.StepFailed || ts.StatusWords == "cut short" {
			broken[st.Node] = true
		}
		out = append(out, ts)
	}
	return out
}

// draftChange is one field of the draft that differs from the version
// before it: text Old → New, or, for a time, At old → new.
type draftChange struct {
	Field    string
	Old, New string
	OldAt    time.Time
	NewAt    time.Time
}

// draftChanges are the fields of cur that differ from prev: order,
// reason, expiry.
func draftChanges(prev, cur *returns.DraftView) []draftChange {
	var out []draftChange
	if prev.OrderID != cur.OrderID {
		out = append(out, draftChange{Field: "Order", Old: prev.OrderID, New: cur.OrderID})
	}
	if prev.Reason != cur.Reason {
		out = append(out, draftChange{Field: "Reason", Old: prev.Reason, New: cur.Reason})
	}
	if !prev.ExpiresAt.Equal(cur.ExpiresAt) {
		out = append(out, draftChange{Field: "Expires", OldAt: prev.ExpiresAt, NewAt: cur.ExpiresAt})
	}
	return out
}

// answerForm is one form of the task page's answers: a post of Action
// bound to the draft and version shown (unless it answers the reason
// question), with a text field when Text is set, and its button.
type answerForm struct {
	Action      string
	Bound       bool
	Text        *textField
	Button      string
	ButtonClass string
}

// textField is the labelled text area of an answer form.
type textField struct {
	ID, Name, Label, Value string
}

// answerForms are the forms of the actions p offers, approve first.
func answerForms(p *taskPage) []answerForm {
	var out []answerForm
	if d := p.View.Draft; d != nil {
		if p.Approve {
			out = append(out, answerForm{Action: returns.ActionApprove, Bound: true, Button: fmt.Sprintf("Approve version %d", d.Version), ButtonClass: "primary"})
		}
		if p.Edit {
			out = append(out, answerForm{Action: returns.ActionEdit, Bound: true, Button: "Edit the reason",
				Text: &textField{ID: "edit-reason", Name: "reason", Label: "New reason (makes a new draft version)", Value: d.Reason}})
		}
		if p.Revise {
			out = append(out, answerForm{Action: returns.ActionRevise, Bound: true, Button: "Send back for changes",
				Text: &textField{ID: "revise-comment", Name: "comment", Label: "Ask the requester to change something"}})
		}
		if p.Cancel {
			out = append(out, answerForm{Action: returns.ActionCancel, Bound: true, Button: "Cancel the request", ButtonClass: "danger"})
		}
	}
	if p.Reason {
		out = append(out, answerForm{Action: returns.ActionReason, Button: "Give the reason", ButtonClass: "primary",
			Text: &textField{ID: "reason", Name: "reason", Label: "Reason for the return"}})
	}
	return out
}

// taskPageHandler is GET /tasks/{task}: the task as it is now
// (returns.Service.Show) and the actions that can succeed; after an
// answer (?answered=ACTION) what it led to.
func (s *Server) taskPageHandler(w http.ResponseWriter, r *http.Request, user string) {
	p, ok := s.loadTask(w, r, user)
	if !ok {
		return
	}
	if a := r.URL.Query().Get("answered"); a != "" {
		p.Outcome, p.OutcomeWarn = outcomeWords(p, a)
	}
	s.render(w, http.StatusOK, "task", user, p)
}

// loadTask reads the page of the path's task for user; a malformed id,
// an unknown task or another person's (alike) is answered here as a
// page, and ok is false.
func (s *Server) loadTask(w http.ResponseWriter, r *http.Request, user string) (*taskPage, bool) {
	task := r.PathValue("task")
	if err := returns.ValidTaskID(task); err != nil {
		s.render(w, http.StatusNotFound, "notice", user, noticePage{Title: "No such task", Message: fmt.Sprintf("There is no task %q that you may see.", task)})
		return nil, false
	}
	v, err := s.svc.Show(r.Context(), task, user)
	if err != nil {
		if returns.KindOf(returns.Classify(err)) == returns.ErrNotFound {
			s.render(w, http.StatusNotFound, "notice", user, noticePage{Title: "No such task", Message: fmt.Sprintf("There is no task %s that you may see.", task)})
			return nil, false
		}
		s.pageFailed(w, err)
		return nil, false
	}
	item, err := s.svc.OrderItem(r.Context(), v)
	if err != nil {
		s.pageFailed(w, err)
		return nil, false
	}
	p := taskPageOf(v, item, user, s.now())
	if p.Previous, err = s.svc.PreviousDraft(r.Context(), v); err != nil {
		s.pageFailed(w, err)
		return nil, false
	}
	if p.Previous != nil {
		p.Changes = draftChanges(p.Previous, v.Draft)
	}
	h, err := s.svc.History(r.Context(), task, user)
	if err != nil {
		s.pageFailed(w, err)
		return nil, false
	}
	p.Steps = timelineOf(h.Steps)
	return p, true
}

// taskPageOf is the page of v for user at now: which actions can succeed
// (the rules resume judges: an approval of the current, unexpired draft
// of a returnable order, not twice by one person, never by the requester
// of a task that needs two), or why none can.
func taskPageOf(v *returns.View, item, user string, now time.Time) *taskPage {
	p := &taskPage{View: v, Item: item, Needed: 1, Trail: v.Decisions, Now: now, DraftTitle: "The draft"}
	switch v.Status {
	case returns.StatusWaiting:
		p.DraftTitle = "The draft as it will be submitted"
	case returns.StatusDone:
		p.DraftTitle = "The draft that was submitted"
	}
	if v.Kind != nil && *v.Kind == returns.KindApproval && len(v.Interrupts) > 0 {
		var q returns.ApprovalQuestion
		if json.Unmarshal(v.Interrupts[0].Value, &q) == nil {
			p.Question = &q
			p.Needed = max(q.Approvals, 1)
		}
	}
	approvedByMe := false
	if v.Draft != nil {
		p.ExpiresIn = durationWords(v.Draft.ExpiresAt.Sub(now))
		seen := map[string]bool{}
		for _, d := range v.Decisions {
			if d.Action != returns.ActionApprove || d.DraftID == nil || *d.DraftID != v.Draft.DraftID {
				continue
			}
			if d.By == user {
				approvedByMe = true
			}
			if d.NotCounted == "" && !seen[d.By] && !(p.Needed >= 2 && d.By == v.User) {
				seen[d.By] = true
				p.Approvers = append(p.Approvers, d.By)
			}
		}
		p.Given = len(p.Approvers)
	}
	switch {
	case v.Status == returns.StatusDone:
		p.Closed = "Submitted: nothing more can be answered."
		if v.Result != nil {
			p.ApplicationID = v.Result.ApplicationID
		}
	case v.Status == returns.StatusCancelled:
		p.Closed = "Cancelled: the request ended without a return application, and nothing more can be answered."
	case v.Status == returns.StatusFailed:
		p.Closed = "Ended without a return application: nothing more can be answered."
		if v.Error != nil {
			p.Closed = "Ended without a return application: " + v.Error.Message + "."
		}
	case v.DraftExpired():
		p.Closed = fmt.Sprintf("The draft expired at %s before it was approved: approving it can no longer submit anything.", v.Draft.ExpiresAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	case v.Status == returns.StatusInterrupted:
		p.Closed = "Stopped by an operator: nothing can be answered here until the run is resumed."
	case v.Result != nil:
		// The submit made the application; the run has not recorded its
		// end yet (its process is finishing, or gone: recover ends it).
		p.Closed = "Submitted: the return application was made, and nothing more can be answered; the run is recording its end."
		if v.Holder != nil && !v.Holder.Alive {
			p.Closed = "Submitted: the return application was made, and nothing more can be answered; its process stopped before it recorded its end, which an operator's `assistant recover` does."
		}
		p.ApplicationID = v.Result.ApplicationID
	case v.Status == returns.StatusRunning:
		p.Closed = "Running now: reload the page in a moment to see the question it asks."
	case v.Status != returns.StatusWaiting || v.Kind == nil:
		p.Closed = "Nothing to answer."
	case *v.Kind == returns.KindNeedReason:
		p.Reason = true
	case v.Draft != nil && v.Draft.NotReturnable != nil:
		p.Closed = fmt.Sprintf("The order may no longer be returned (%s): approving would submit nothing.", *v.Draft.NotReturnable)
	case v.Draft != nil:
		p.Cancel, p.Edit, p.Revise = true, true, true
		switch {
		case p.Needed >= 2 && user == v.User:
			p.NoApprove = fmt.Sprintf("You requested this task: its %d approvals must come from other people.", p.Needed)
		case approvedByMe:
			p.NoApprove = fmt.Sprintf("You approved version %d already: the other approval must come from someone else.", v.Draft.Version)
		default:
			p.Approve = true
		}
	}
	p.Forms = answerForms(p)
	return p
}

// outcomeWords says what an answer with action led to, read from the
// task as it is now; warn is set when it did not do what it was for: an
// approval taken while another approval of the draft stopped counting,
// so that nothing was submitted.
func outcomeWords(p *taskPage, action string) (words string, warn bool) {
	v := p.View
	switch {
	case v.Status == returns.StatusDone && v.Result != nil:
		return fmt.Sprintf("Submitted: return application %s was made and awaits review. No refund is made.", v.Result.ApplicationID), false
	case v.Status == returns.StatusCancelled:
		return "Cancelled: the request ended and no return application was made.", false
	case v.Status == returns.StatusFailed:
		return "The task ended without a return application.", false
	case v.Status != returns.StatusWaiting || v.Draft == nil:
		return "Your answer was taken.", false
	case action == returns.ActionApprove:
		if why := notCounted(v); why != "" {
			return fmt.Sprintf("Your approval of version %d is recorded, but %s, so nothing was submitted: %d of %d approvals count now, and the task waits for %s.",
				v.Draft.Version, why, p.Given, p.Needed, plural(p.Needed-p.Given, "another approval", "more approvals")), true
		}
		if p.Given < p.Needed {
			return fmt.Sprintf("Your approval of version %d is recorded: %d of %d approvals, waiting for the second approver.", v.Draft.Version, p.Given, p.Needed), false
		}
	case action == returns.ActionEdit:
		return fmt.Sprintf("Version %d is the draft now; it needs approval.", v.Draft.Version), false
	case action == returns.ActionRevise:
		return fmt.Sprintf("Your request for changes went to %s, who requested the task.", v.User), false
	case action == returns.ActionReason:
		return fmt.Sprintf("Draft version %d is ready for approval.", v.Draft.Version), false
	}
	return "Your answer was taken.", false
}

// notCounted says which approvals of v's current draft the trail marks
// as no longer counting, and why ("the approval of alice no longer
// counts: revoked at …"); "" when none is.
func notCounted(v *returns.View) string {
	var why []string
	for _, d := range v.Decisions {
		if d.Action == returns.ActionApprove && d.NotCounted != "" && d.DraftID != nil && *d.DraftID == v.Draft.DraftID {
			why = append(why, fmt.Sprintf("the approval of %s no longer counts (%s)", d.By, d.NotCounted))
		}
	}
	return strings.Join(why, "; ")
}

// plural is one when n is 1, else n and many ("2 more approvals").
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf("%d %s", n, many)
}
