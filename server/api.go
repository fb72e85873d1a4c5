package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"assistant/flow/returns"
)

// startBody is POST /api/v1/tasks's: start's arguments and flags.
type startBody struct {
	Task      string  `json:"task"`
	Order     string  `json:"order"`
	Reason    string  `json:"reason"`
	DraftTTL  *string `json:"draft_ttl"`
	Approvals *int    `json:"approvals"`
}

// startTask starts a task for the signed-in person, as start does: 201
// for a new task, 200 for the same input again.
func (s *Server) startTask(w http.ResponseWriter, r *http.Request, user string) {
	var b startBody
	if err := decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	o := returns.StartOptions{Task: b.Task, Order: b.Order, Reason: b.Reason, User: user, TTL: 300 * time.Second, Approvals: 1}
	if b.Approvals != nil {
		if *b.Approvals < 1 || *b.Approvals > returns.MaxApprovals {
			s.fail(w, fmt.Errorf("%w: approvals must be 1 or 2, not %d", returns.ErrInvalid, *b.Approvals))
			return
		}
		o.Approvals = *b.Approvals
	}
	if b.DraftTTL != nil {
		d, err := time.ParseDuration(*b.DraftTTL)
		if err != nil || d <= 0 {
			s.fail(w, fmt.Errorf("%w: draft_ttl must be a positive duration such as \"300s\" or \"10m\", not %q", returns.ErrInvalid, *b.DraftTTL))
			return
		}
		o.TTL = d
	}
	if err := returns.ValidateStart(o); err != nil {
		s.fail(w, err)
		return
	}
	unlock, err := s.tasks.lock(r.Context(), o.Task)
	if err != nil {
		s.fail(w, err)
		return
	}
	defer unlock()
	status := http.StatusCreated
	if _, err := s.svc.Show(r.Context(), o.Task, user); err == nil {
		status = http.StatusOK // started before: the same input again
	}
	s.metrics.leasesHeld.Inc()
	v, err := s.svc.Start(r.Context(), o)
	s.metrics.leasesHeld.Dec()
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, status, v)
}

// answerBody is POST /api/v1/tasks/{task}/answers's: resume's flags. A
// body without action or reason continues a stopped or crashed run.
type answerBody struct {
	Action    string  `json:"action"`
	Version   *int    `json:"version"`
	DraftID   string  `json:"draft_id"`
	Interrupt string  `json:"interrupt"`
	Reason    *string `json:"reason"`
	Comment   string  `json:"comment"`
}

// answerTask answers the task's question (or continues its run) as the
// signed-in person, as resume does.
func (s *Server) answerTask(w http.ResponseWriter, r *http.Request, user string) {
	var b answerBody
	if err := decode(w, r, &b); err != nil {
		s.failDecode(w, err)
		return
	}
	o := returns.ResumeOptions{Task: r.PathValue("task"), User: user, Action: b.Action, DraftID: b.DraftID, InterruptID: b.Interrupt, Comment: b.Comment}
	if b.Reason != nil {
		o.Reason, o.HasReason = *b.Reason, true
	}
	if b.Version != nil {
		if *b.Version < 1 {
			s.fail(w, fmt.Errorf("%w: version must be 1 or more, not %d", returns.ErrInvalid, *b.Version))
			return
		}
		o.Version = *b.Version
	}
	if err := returns.ValidTaskID(o.Task); err != nil {
		s.fail(w, fmt.Errorf("%w: %v", returns.ErrInvalid, err))
		return
	}
	if err := returns.CheckResume(o); err != nil {
		s.fail(w, err)
		return
	}
	unlock, err := s.tasks.lock(r.Context(), o.Task)
	if err != nil {
		s.fail(w, err)
		return
	}
	defer unlock()
	s.metrics.leasesHeld.Inc()
	v, err := s.group.Decide(r.Context(), o)
	s.metrics.leasesHeld.Dec()
	outcome := "answered"
	if b.Action != "" {
		outcome = b.Action
	}
	if err != nil {
		_, code := statusOf(err)
		s.metrics.decisions.WithLabelValues(outcome, code).Inc()
		s.fail(w, err)
		return
	}
	s.metrics.decisions.WithLabelValues(outcome, "ok").Inc()
	s.reply(w, http.StatusOK, v)
}

// showTask is show's JSON; with ?wait=DURATION it waits, as wait does,
// until the task is decided, ended or expired, or the duration passed,
// or the server drains.
func (s *Server) showTask(w http.ResponseWriter, r *http.Request, user string) {
	task := r.PathValue("task")
	if err := returns.ValidTaskID(task); err != nil {
		s.fail(w, fmt.Errorf("%w: %v", returns.ErrInvalid, err))
		return
	}
	raw := r.URL.Query().Get("wait")
	if raw == "" {
		v, err := s.svc.Show(r.Context(), task, user)
		if err != nil {
			s.fail(w, err)
			return
		}
		s.reply(w, http.StatusOK, v)
		return
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 || d > MaxWait {
		s.fail(w, fmt.Errorf("%w: wait must be a duration from 0s to %s, such as \"30s\", not %q", returns.ErrInvalid, MaxWait, raw))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.drain:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.metrics.longPolls.Inc()
	v, err := s.svc.Wait(ctx, returns.WaitOptions{Task: task, User: user, Timeout: d})
	s.metrics.longPolls.Dec()
	if err != nil && ctx.Err() != nil && r.Context().Err() == nil {
		// The server drains: what the task shows now.
		v, err = s.svc.Show(r.Context(), task, user)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, http.StatusOK, v)
}

// listPage is the list route's JSON: list's, and the cursor of the next
// page (null on the last page).
type listPage struct {
	Tasks      []returns.TaskSummary `json:"tasks"`
	NextCursor *string               `json:"next_cursor"`
}

// listTasks is list's JSON with next_cursor:
// ?status=S,…&awaiting_me=true&limit=N&cursor=C.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request, user string) {
	q := r.URL.Query()
	o := returns.ListOptions{User: user}
	var err error
	if o.Statuses, err = returns.ParseStatuses(q["status"]); err != nil {
		s.fail(w, err)
		return
	}
	if raw := q.Get("awaiting_me"); raw != "" {
		if o.AwaitingMe, err = strconv.ParseBool(raw); err != nil {
			s.fail(w, fmt.Errorf("%w: awaiting_me must be true or false, not %q", returns.ErrInvalid, raw))
			return
		}
	}
	if raw := q.Get("limit"); raw != "" {
		if o.Limit, err = strconv.Atoi(raw); err != nil || o.Limit < 1 {
			s.fail(w, fmt.Errorf("%w: limit must be a whole number of 1 or more, not %q", returns.ErrInvalid, raw))
			return
		}
	}
	if raw, ok := q["cursor"]; ok {
		if o.After, err = parseCursor(raw[0]); err != nil {
			s.fail(w, err)
			return
		}
	}
	if err := returns.CheckListOptions(o); err != nil {
		s.fail(w, err)
		return
	}
	limit := o.Limit
	if limit > 0 {
		o.Limit++ // one more than the page tells whether a next page has any task
	}
	tasks, err := s.svc.ListTasks(r.Context(), o)
	if err != nil {
		s.fail(w, err)
		return
	}
	page := listPage{Tasks: tasks}
	if limit > 0 && len(tasks) > limit {
		page.Tasks = tasks[:limit]
		next := encodeCursor(returns.PositionOf(tasks[limit-1]))
		page.NextCursor = &next
	}
	if page.Tasks == nil {
		page.Tasks = []returns.TaskSummary{}
	}
	s.reply(w, http.StatusOK, page)
}

// taskHistory is history's JSON.
func (s *Server) taskHistory(w http.ResponseWriter, r *http.Request, user string) {
	task := r.PathValue("task")
	if err := returns.ValidTaskID(task); err != nil {
		s.fail(w, fmt.Errorf("%w: %v", returns.ErrInvalid, err))
		return
	}
	h, err := s.svc.History(r.Context(), task, user)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, http.StatusOK, h)
}

// showOrder is orders show's JSON.
func (s *Server) showOrder(w http.ResponseWriter, r *http.Request, user string) {
	order := r.PathValue("order")
	if err := returns.ValidOrderID(order); err != nil {
		s.fail(w, fmt.Errorf("%w: %v", returns.ErrInvalid, err))
		return
	}
	d, err := s.svc.ShowOrder(r.Context(), order, user)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, http.StatusOK, d)
}

// bearer is the token of the request's one Authorization: Bearer
// header, "" without one; given says an Authorization header was sent.
// Two Authorization headers are no token (the request names no one
// person), given.
func bearer(r *http.Request) (token string, given bool) {
	h, given, err := oneHeader(r, "Authorization")
	if err != nil {
		return "", true
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", given
	}
	return strings.TrimSpace(token), true
}
