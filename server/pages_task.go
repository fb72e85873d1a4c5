package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"assistant/flow/returns"
)

// This file serves the inbox's page of one task (docs/inbox.md): the
// task as it is now, and the answers posted from it, each told back as
// what became of it.

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
	Outcome               string
	ProblemTitle, Problem string
	Trail                 []returns.DecisionView
	ExpiresIn             string
	Now                   time.Time
	ApplicationID         string
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
		p.Outcome = outcomeWords(p, a, user)
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
	return taskPageOf(v, item, user, s.now()), true
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
	return p
}

// outcomeWords says what an answer with action led to, read from the
// task as it is now.
func outcomeWords(p *taskPage, action, user string) string {
	v := p.View
	switch {
	case v.Status == returns.StatusDone && v.Result != nil:
		return fmt.Sprintf("Submitted: return application %s was made and awaits review. No refund is made.", v.Result.ApplicationID)
	case v.Status == returns.StatusCancelled:
		return "Cancelled: the request ended and no return application was made."
	case v.Status == returns.StatusFailed:
		return "The task ended without a return application."
	case v.Status != returns.StatusWaiting || v.Draft == nil:
		return "Your answer was taken."
	case action == returns.ActionApprove && p.Given < p.Needed:
		return fmt.Sprintf("Your approval of version %d is recorded: %d of %d approvals, waiting for the second approver.", v.Draft.Version, p.Given, p.Needed)
	case action == returns.ActionEdit:
		return fmt.Sprintf("Version %d is the draft now; it needs approval.", v.Draft.Version)
	case action == returns.ActionRevise:
		return fmt.Sprintf("Your request for changes went to %s, who requested the task.", v.User)
	case action == returns.ActionReason:
		return fmt.Sprintf("Draft version %d is ready for approval.", v.Draft.Version)
	}
	return "Your answer was taken."
}

// answerPage is POST /tasks/{task}/answers: the form's answer (action
// approve, cancel, edit, revise, or reason), bound to the task, draft
// and version the form carries, is given as resume gives it; then a
// redirect to the task page (Post/Redirect/Get). An answer that is not
// taken is a page that says why and shows the task as it is now.
func (s *Server) answerPage(w http.ResponseWriter, r *http.Request, user string) {
	task := r.PathValue("task")
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	if err := r.ParseForm(); err != nil {
		s.render(w, http.StatusBadRequest, "notice", user, noticePage{Title: "Not an answer", Message: "The form could not be read: " + err.Error() + "."})
		return
	}
	f := r.PostForm
	if f.Get("task") != task {
		s.render(w, http.StatusBadRequest, "notice", user, noticePage{Title: "Not an answer", Message: fmt.Sprintf("The form is for task %q, and it was sent to task %q: nothing changed.", f.Get("task"), task)})
		return
	}
	o := returns.ResumeOptions{Task: task, User: user, DraftID: f.Get("draft")}
	action := f.Get("action")
	if raw := f.Get("version"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			s.render(w, http.StatusBadRequest, "notice", user, noticePage{Title: "Not an answer", Message: fmt.Sprintf("The form's version must be 1 or more, not %q: nothing changed.", raw)})
			return
		}
		o.Version = n
	}
	switch action {
	case returns.ActionApprove, returns.ActionCancel:
		o.Action = action
	case returns.ActionEdit:
		o.Action, o.Reason, o.HasReason = action, f.Get("reason"), true
	case returns.ActionRevise:
		o.Action, o.Comment = action, f.Get("comment")
	case returns.ActionReason:
		o.Reason, o.HasReason, o.Version, o.DraftID = f.Get("reason"), true, 0, ""
	default:
		s.render(w, http.StatusBadRequest, "notice", user, noticePage{Title: "Not an answer", Message: fmt.Sprintf("The form's action must be approve, cancel, edit, revise or reason, not %q: nothing changed.", action)})
		return
	}
	err := returns.ValidTaskID(task)
	if err == nil {
		err = returns.CheckResume(o)
	}
	var v *returns.View
	if err == nil {
		v, err = s.decide(r.Context(), o, action)
	}
	if err != nil {
		s.answerRefused(w, r, user, o, err)
		return
	}
	if !answeredBy(v, user, action, o.Version) {
		// The task had ended with this same answer from someone else:
		// resume reports that end, and nothing of this person's changed.
		s.answerOvertaken(w, r, user, action)
		return
	}
	http.Redirect(w, r, "/tasks/"+url.PathEscape(task)+"?answered="+url.QueryEscape(action), http.StatusSeeOther)
}

// decide gives the answer o as the API does (one run of a task at a time
// in this process), counted in the decisions metric by outcome.
func (s *Server) decide(ctx context.Context, o returns.ResumeOptions, outcome string) (*returns.View, error) {
	unlock, err := s.tasks.lock(ctx, o.Task)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.metrics.leasesHeld.Inc()
	v, err := s.svc.Resume(ctx, o)
	s.metrics.leasesHeld.Dec()
	code := "ok"
	if err != nil {
		_, code = statusOf(err)
	}
	s.metrics.decisions.WithLabelValues(outcome, code).Inc()
	return v, err
}

// answeredBy reports whether v's trail holds user's answer action (of
// version, when not 0): false when the task took someone else's answer
// and reports it to this one (an approve of a task another approver
// submitted first).
func answeredBy(v *returns.View, user, action string, version int) bool {
	for _, d := range v.Decisions {
		if d.By == user && d.Action == action && (version == 0 || d.Version == nil || *d.Version == version) {
			return true
		}
	}
	return false
}

// answerOvertaken answers an answer action that found the task already ended
// by someone else's: 409, the task page saying who was faster.
func (s *Server) answerOvertaken(w http.ResponseWriter, r *http.Request, user, action string) {
	p, ok := s.loadTask(w, r, user)
	if !ok {
		return
	}
	p.ProblemTitle = "Someone was faster: the task was decided before your answer arrived"
	p.Problem = fmt.Sprintf("Your %s changed nothing: the task is %s.", action, p.View.Status)
	if n := len(p.View.Decisions); n > 0 {
		last := p.View.Decisions[n-1]
		p.Problem = fmt.Sprintf("%s answered %s at %s, before your %s arrived; yours changed nothing, and the task is %s.", last.By, last.Action, last.At.UTC().Format("2006-01-02 15:04:05 UTC"), action, p.View.Status)
	}
	s.render(w, http.StatusConflict, "task", user, p)
}

// answerRefused answers an answer o that was not taken (err): the task
// page as it is now, with what happened in a person's words and the
// status of err (409 a conflict, 400 an answer the rules refuse, 503
// busy).
func (s *Server) answerRefused(w http.ResponseWriter, r *http.Request, user string, o returns.ResumeOptions, err error) {
	status, _ := statusOf(err)
	if status == http.StatusNotFound {
		s.render(w, status, "notice", user, noticePage{Title: "No such task", Message: fmt.Sprintf("There is no task %s that you may see: nothing changed.", o.Task)})
		return
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterBusy))
	}
	p, ok := s.loadTask(w, r, user)
	if !ok {
		return
	}
	msg, _ := returns.Describe(returns.Classify(err), APIWords)
	p.ProblemTitle, p.Problem = problemTitle(p, o, status), msg+"."
	if status >= http.StatusInternalServerError && status != http.StatusServiceUnavailable {
		s.log.Error("answer", "task", o.Task, "err", err)
	}
	s.render(w, status, "task", user, p)
}

// problemTitle names, in a person's words, why answer o was not taken,
// from the task's page as it is now and the answer's status.
func problemTitle(p *taskPage, o returns.ResumeOptions, status int) string {
	cur := p.View
	switch {
	case status == http.StatusServiceUnavailable:
		return "The task is busy: try again in a moment"
	case cur.Status == returns.StatusDone || cur.Status == returns.StatusCancelled || cur.Status == returns.StatusFailed:
		return "Someone was faster: the task was decided before your answer arrived"
	case o.Version > 0 && cur.Draft != nil && cur.Draft.Version != o.Version:
		return fmt.Sprintf("The draft changed since you loaded the page: you saw version %d, it is version %d now", o.Version, cur.Draft.Version)
	case o.Action == returns.ActionApprove && o.User == cur.User && p.Needed >= 2:
		return "You requested this task: your approval cannot be one of its two"
	case status == http.StatusConflict:
		return "Your answer no longer fits the task"
	}
	return "Your answer was not taken"
}
