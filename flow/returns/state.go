package returns

import (
	"slices"
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

// Actions a person can take at the approval question (ApprovalAnswer.Action):
// approve submits (with two approvals, once both approved), cancel ends the
// request, edit prepares a new draft version with a new reason, revise
// sends the request back to its owner for a new reason (a need_reason
// question carrying the comment). ActionReason is how the decision trail
// names an answer to a need_reason question.
const (
	ActionApprove = "approve"
	ActionCancel  = "cancel"
	ActionEdit    = "edit"
	ActionRevise  = "revise"
	ActionReason  = "reason"
)

// Actions lists the actions an approval answer may take.
var Actions = []string{ActionApprove, ActionCancel, ActionEdit, ActionRevise}

// MaxApprovals is the most approvals a start may ask for (InputApprovals).
const MaxApprovals = 2

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
	// CodeTooManyRevisions: an edit or a request for changes would have
	// made more than business.MaxDraftVersions drafts of one task.
	CodeTooManyRevisions = "too_many_revisions"
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
	Decision   string    `json:"decision,omitempty"` // the last action taken at the approval question
	Result     *Result   `json:"result,omitempty"`
	Error      *Failure  `json:"error,omitempty"`
	// Approvals is how many people must approve each draft: 2 asks two
	// approval questions at once (review and review_2); 0 or 1 asks one.
	Approvals int `json:"approvals,omitempty"`
	// Comment is what the last request for changes (revise) asked for; the
	// need_reason question it leads to carries it.
	Comment string `json:"comment,omitempty"`
	// Decisions is the trail of answers the run has taken, oldest first
	// (appended by Reduce). The business file keeps the same trail
	// (business.Decision), with answers a superstep has not merged yet.
	Decisions []Decision `json:"decisions,omitempty"`
	// Uncounted are the approvals of Decisions that a submit found no
	// longer count (business.ApprovalsCount: an approver whose grant was
	// revoked, the requester of a task that needs two, another version),
	// oldest first (appended by Reduce). They stay in the trail, marked
	// why, and the run asks for another approval instead.
	Uncounted []Uncounted `json:"uncounted,omitempty"`
}

// Uncounted is an approval a submit no longer counts: its decision id,
// its approver and why.
type Uncounted struct {
	ID      string `json:"id"`
	By      string `json:"by"`
	Because string `json:"because"`
}

// uncounted returns why the submit of the run of s no longer counts
// decision id, or "" when it counts.
func uncounted(s State, id string) string {
	for _, u := range s.Uncounted {
		if u.ID == id && id != "" {
			return u.Because
		}
	}
	return ""
}

// Decision is one answer in the trail: who gave it, when, the action, and
// the draft and version it was bound to ("" and 0 before any draft).
type Decision struct {
	ID      string    `json:"id"`
	By      string    `json:"by"`
	Action  string    `json:"action"`
	DraftID string    `json:"draft_id,omitempty"`
	Version int       `json:"version,omitempty"`
	At      time.Time `json:"at"` // UTC, to the millisecond
	Comment string    `json:"comment,omitempty"`
	Reason  string    `json:"reason,omitempty"`
}

// DraftRef is the request's draft in the business store (business.Draft):
// its id and when it expires. Its order, reason and user are the State's
// Order, Reason and User.
type DraftRef struct {
	ID        string    `json:"draft_id"`
	ExpiresAt time.Time `json:"expires_at"` // UTC, wall clock
	// Version is the draft's version; 0 in a state stored before drafts
	// had versions, which means 1 (VersionOf).
	Version int `json:"version,omitempty"`
}

// VersionOf returns the version of draft d: 0 for no draft, 1 for a draft
// stored before versions.
func VersionOf(d *DraftRef) int {
	switch {
	case d == nil:
		return 0
	case d.Version < 1:
		return 1
	}
	return d.Version
}

// Result is the submitted application, as printed in "result".
type Result struct {
	ApplicationID string `json:"application_id"`
	ReviewStatus  string `json:"review_status"`
	// Reused is true when the application already existed for the draft
	// (a retried or repeated submit): no second application was made.
	Reused bool `json:"reused"`
}

// Failure is why a request ended failed, as printed in "error": its code,
// what happened (Message) and, apart from it, what to do next (Hint,
// worded by the Service's Wording; "" for nothing).
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty" output:"absent-when-zero"`
}

// Reduce merges a node's update into the state: every non-zero field of upd
// overwrites, except Decisions and Uncounted, which are appended.
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
	set(&s.Comment, upd.Comment)
	if upd.Approvals != 0 {
		s.Approvals = upd.Approvals
	}
	if len(upd.Decisions) > 0 {
		s.Decisions = append(slices.Clip(s.Decisions), upd.Decisions...)
	}
	if len(upd.Uncounted) > 0 {
		s.Uncounted = append(slices.Clip(s.Uncounted), upd.Uncounted...)
	}
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
