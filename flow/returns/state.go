package returns

import (
	"time"
)

// Stages of a return request (docs/design.md "Stages").
const (
	StageNeedReason = "need_reason"
	StageDraftReady = "draft_ready"
	StageSubmitted  = "submitted"
	StageCancelled  = "cancelled"
	StageFailed     = "failed"
)

// Run statuses of a task (docs/design.md "Run status"): what the run is doing, as opposed to
// where the request stands (the stage).
const (
	StatusRunning     = "running"
	StatusWaiting     = "waiting"
	StatusInterrupted = "interrupted"
	StatusDone        = "done"
	StatusCancelled   = "cancelled"
	StatusFailed      = "failed"
)

// Interrupt kinds, the value of "kind" in the JSON output.
const (
	KindNeedReason = "need_reason"
	KindApproval   = "approval"
)

// Actions a person can take at the approval question.
const (
	ActionApprove = "approve"
	ActionCancel  = "cancel"
)

// Error codes of a failed request (State.Error.Code). The eligibility codes
// come from business.Eligibility.
const (
	CodeDraftExpired = "draft_expired"
	// CodeAttemptsExhausted: a node failed Config.MaxAttempts times
	// (crashes, errors); the run is not tried again.
	CodeAttemptsExhausted = "attempts_exhausted"
	// CodeRecursionLimit: the run ran more supersteps than one invocation
	// may (a bug in the graph, not a crash); it is not tried again.
	CodeRecursionLimit = "recursion_limit"
	CodeOrderNotFound  = "order_not_found"
)

// State is the return request's graph state, stored as JSON in every
// checkpoint (state format 2, see format.go). A node returns a State holding
// only the fields it changes; Reduce merges it.
//
// The state keeps each fact once: the draft's order, reason, user and task
// are the request's own fields, so Draft holds only what the request does
// not already say. Which nodes ran is in the checkpoint chain
// (metadata.writes) and the timeline steps, not in the state.
type State struct {
	Task       string    `json:"task,omitempty"`
	User       string    `json:"user,omitempty"`
	Order      string    `json:"order,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	TTLSeconds int64     `json:"ttl_seconds,omitempty"`
	Stage      string    `json:"stage,omitempty"`
	Draft      *DraftRef `json:"draft,omitempty"`
	Decision   string    `json:"decision,omitempty"` // approve or cancel, once answered
	Result     *Result   `json:"result,omitempty"`
	Error      *Failure  `json:"error,omitempty"`
}

// DraftRef is the request's draft in the business store (business.Draft):
// its id and when it expires. Its order, reason and user are the State's
// Order, Reason and User.
type DraftRef struct {
	ID        string    `json:"draft_id"`
	ExpiresAt time.Time `json:"expires_at"` // UTC, wall clock
}

// Result is the submitted application, as printed in "result".
type Result struct {
	ApplicationID string `json:"application_id"`
	ReviewStatus  string `json:"review_status"`
	// Reused is true when the application already existed for the draft
	// (a retried or repeated submit): no second application was made.
	Reused bool `json:"reused"`
}

// Failure is why a request ended failed, as printed in "error".
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Reduce merges a node's update into the state: every non-zero field of upd
// overwrites.
func Reduce(s, upd State) State {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&s.Task, upd.Task)
	set(&s.User, upd.User)
	set(&s.Order, upd.Order)
	set(&s.Reason, upd.Reason)
	set(&s.Stage, upd.Stage)
	set(&s.Decision, upd.Decision)
	if upd.TTLSeconds != 0 {
		s.TTLSeconds = upd.TTLSeconds
	}
	if upd.Draft != nil {
		d := *upd.Draft
		s.Draft = &d
	}
	if upd.Result != nil {
		r := *upd.Result
		s.Result = &r
	}
	if upd.Error != nil {
		e := *upd.Error
		s.Error = &e
	}
	return s
}
