package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"assistant/flow/returns"
)

// answerPage is POST /tasks/{task}/answers: the form's answer (action
// approve, cancel, edit, revise, or reason), bound to the task, draft
// and version the form carries, is given as resume gives it; then a
// redirect to the task page (Post/Redirect/Get). An answer that is not
// taken is a page that says why and shows the task as it is now.
func (s *Server) answerPage(w http.ResponseWriter, r *http.Request, user string) {
	task := r.PathValue("task")
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	f, err := oneForm(r)
	if err != nil {
		s.render(w, http.StatusBadRequest, "notice", user, noticePage{Title: "Not an answer", Message: "Nothing changed: " + err.Error() + "."})
		return
	}
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
	err = returns.ValidTaskID(task)
	if err == nil {
		err = returns.CheckResume(o)
	}
	var v *returns.View
	if err == nil {
		v, err = s.decide(r.Context(), o, action)
	}
	if err != nil {
		s.answerRefused(w, r, user, o, action, err)
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
	p.problem = fasterWords(p, action)
	s.render(w, http.StatusConflict, "task", user, p)
}

// answerRefused answers an answer o that was not taken (err): the task
// page as it is now, with what happened in a person's words and the
// status of err (409 a conflict, 400 an answer the rules refuse, 503
// busy).
func (s *Server) answerRefused(w http.ResponseWriter, r *http.Request, user string, o returns.ResumeOptions, action string, err error) {
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
	p.problem = refusalWords(p, o, action, status, msg)
	if status >= http.StatusInternalServerError && status != http.StatusServiceUnavailable {
		s.log.Error("answer", "task", o.Task, "err", err)
	}
	s.render(w, status, "task", user, p)
}
