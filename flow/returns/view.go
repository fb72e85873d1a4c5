package returns

import (
	"encoding/json"
	"time"

	"assistant/flow"
	"assistant/runs"
)

// View is what start, show and resume print (docs/json.md "start, show, resume, wait, stop and batch"): one
// object with stable field names. Absent things are null, lists are [].
type View struct {
	// SchemaVersion prints as returns.SchemaVersion (docs/json.md).
	SchemaVersion Schema `json:"schema_version"`

	Task       string          `json:"task"`
	User       string          `json:"user"`
	Order      string          `json:"order"`
	Status     string          `json:"status"`
	Stage      string          `json:"stage"`
	Kind       *string         `json:"kind"`
	Next       []string        `json:"next"`
	Interrupts []InterruptView `json:"interrupts"`
	Draft      *DraftView      `json:"draft"`
	// Decisions is the trail of answers given to the task, oldest first
	// ([] when none): from the business file where the command read it
	// (Service.withTrail), else from the state.
	Decisions []DecisionView `json:"decisions"`
	// Stands is the answer the decision trail holds for the question
	// asked whose checkpoint was lost: it stands, and only it given again
	// (StandingHint) carries the task on; omitted otherwise.
	Stands *DecisionView `json:"stands,omitempty"`
	// AwaitingSubmit are the approvals the task's head carries to a
	// submit that has not finished (its run was killed or stopped before
	// it): no application was made yet, and the approval of a task that
	// needs one is not in the trail yet. Each says, by NotCounted, whether
	// the submit would no longer count it now. [] when none.
	AwaitingSubmit []DecisionView `json:"awaiting_submit"`
	Result         *Result        `json:"result"`
	Error          *Failure       `json:"error"`
	// Holder is the process driving a running or interrupted task, if any;
	// omitted otherwise. Alive false means it is gone: Recover or Resume
	// continues the run.
	Holder *HolderView `json:"holder,omitempty"`
	// Batch is the progress of a batch task; omitted for a return task.
	Batch *BatchProgress `json:"batch,omitempty"`
	// Recovery is what continuing a crashed run cost, when this command did
	// (resume, start or recover of a run whose process died); omitted
	// otherwise.
	Recovery *RecoveryView `json:"recovery,omitempty"`
	// Actions are what the person the view was made for (the user of
	// show, start, resume, wait or stop) may do now with the task, each
	// one that can succeed at the time of the view (viewerActions): the
	// answers approve, cancel, edit, revise and reason, resume (continue a
	// stopped or abandoned run), recover, stop, and start (a new request
	// for the same order, after its draft expired). [] when nothing can.
	Actions []string `json:"actions"`
	// Note is a line for the person about what the command chose (which of
	// two approval questions an answer went to); not part of the JSON.
	Note string `json:"-"`
	// NoApprove is, for the person the view was made for (the user of
	// Show, Start or Resume), why their approve of the draft asked about
	// could not be carried out now (forViewer: they approved it already,
	// or the submit would not count it, as of the requester of a task
	// that needs two); "" when it could, or nothing asks an approval. The
	// card then offers them no approve. Not part of the JSON.
	NoApprove string `json:"-"`
	// Unrecorded is set on a view that shows the end a task has now but
	// its records do not hold yet: a draft that expired while it waited
	// for approval (asNow); recover records that end. Not part of the JSON.
	Unrecorded bool `json:"-"`
}

// DecisionView is one answer of the trail as printed: who, when (UTC, ms),
// the action (reason, approve, cancel, edit, revise), and the draft and
// version it was bound to (null before any draft). Comment is a revise's
// request, Reason the reason an edit or a reason answer gave.
type DecisionView struct {
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Action  string    `json:"action"`
	DraftID *string   `json:"draft_id"`
	Version *int      `json:"version"`
	Comment string    `json:"comment,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	// NotCounted says why a submit no longer counts this approval
	// (business.ApprovalsCount: "revoked at …", the requester's own, another
	// version); omitted for an answer that counts.
	NotCounted string `json:"not_counted_because,omitempty" output:"absent-when-zero"`
}

// decisionView is d as printed.
func decisionView(by, action, draftID string, version int, at time.Time, comment, reason string) DecisionView {
	v := DecisionView{By: by, At: at.UTC().Truncate(time.Millisecond), Action: action, Comment: comment, Reason: reason}
	if draftID != "" {
		v.DraftID = &draftID
	}
	if version > 0 {
		v.Version = &version
	}
	return v
}

// HolderView names the process that holds a task's lease.
type HolderView struct {
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Until time.Time `json:"until"` // UTC; the lease lapses then unless renewed
	Alive bool      `json:"alive"`
}

// InterruptView is one pending question. Value is the question's payload:
// for approval it holds the draft (draft_id, order_id, reason, expires_at)
// and the effect of approving, composed from the state (approvalView).
type InterruptView struct {
	ID    string          `json:"id"`
	Node  string          `json:"node"`
	Kind  string          `json:"kind"`
	Value json.RawMessage `json:"value"`
}

// DraftView is the draft as printed; ExpiresAt is wall-clock UTC.
type DraftView struct {
	DraftID string `json:"draft_id"`
	// Version is the draft's version, 1 for the first; an edit or a
	// request for changes makes the next.
	Version   int       `json:"version"`
	OrderID   string    `json:"order_id"`
	Reason    string    `json:"reason"`
	ExpiresAt time.Time `json:"expires_at"`
	// Expired is true when the draft was not acted on (the run neither
	// submitted nor cancelled it) and the service clock read at the time
	// of the view is at or past ExpiresAt: approving it can no longer
	// submit anything (markExpired).
	Expired bool `json:"expired"`
	// NotReturnable is, for a draft waiting for approval, the reason code
	// (business.Store.Eligibility: final_sale, return_window_closed, …, or
	// order_not_found) its order may not be returned at the time of the
	// view, as submit would find it: approving then submits nothing. nil
	// when the order may be returned, or nothing waits (asNow).
	NotReturnable *string `json:"not_returnable"`
}

// markExpired sets v.Draft.Expired from now, the service clock read when
// the view is made (a draft expires at ExpiresAt, as business.Submit
// refuses it then). A submitted or cancelled run's draft is not expired:
// it was acted on in time. v may be nil.
func (v *View) markExpired(now time.Time) *View {
	if v == nil || v.Draft == nil {
		return v
	}
	v.Draft.Expired = v.Result == nil && v.Status != StatusCancelled && v.Status != StatusDone && !now.Before(v.Draft.ExpiresAt)
	return v
}

// DraftExpired reports whether v is a return task still waiting for
// approval of a draft that has expired (markExpired): no answer can
// submit it any more; recover ends it failed with draft_expired. A view
// as it is now (asNow) shows such a task failed instead (ExpiredNow).
func (v *View) DraftExpired() bool {
	return v != nil && v.Draft != nil && v.Draft.Expired && (v.Status == StatusWaiting || v.Status == StatusInterrupted) && v.Kind != nil && *v.Kind == KindApproval
}

// ExpiredNow reports whether v shows a task whose draft expired while it
// waited for approval as the end it has now, which its records do not hold
// yet (asNow): recover records it.
func (v *View) ExpiredNow() bool {
	return v != nil && v.Unrecorded && v.Error != nil && v.Error.Code == CodeDraftExpired
}

// view builds the View of a task from its head snapshot (nil when the task
// has no checkpoint yet).
func view(t runs.TaskRecord, snap *flow.Snapshot[State]) *View {
	v := &View{Task: t.ID, User: t.User, Order: t.OrderID, Next: []string{}, Interrupts: []InterruptView{}, Decisions: []DecisionView{}, AwaitingSubmit: []DecisionView{}, Actions: []string{}}
	if snap == nil {
		// No checkpoint yet: the run is part-way, or stopped part-way.
		v.Status, v.Stage = StatusRunning, t.Stage
		if t.Status == StatusInterrupted {
			v.Status = StatusInterrupted
		}
		return v
	}
	st := snap.Values
	v.Next = append(v.Next, snap.Next...)
	for _, in := range snap.Interrupts {
		k := kindOf(in.Value)
		val := in.Value
		if k == KindApproval {
			val = approvalView(in.Value, st)
		}
		v.Interrupts = append(v.Interrupts, InterruptView{ID: in.ID, Node: in.Node, Kind: k, Value: val})
	}
	if st.Draft != nil {
		v.Draft = &DraftView{DraftID: st.Draft.ID, Version: VersionOf(st.Draft), OrderID: st.Order, Reason: st.Reason, ExpiresAt: st.Draft.ExpiresAt.UTC()}
	}
	for _, d := range st.Decisions {
		dv := decisionView(d.By, d.Action, d.DraftID, d.Version, d.At, d.Comment, d.Reason)
		dv.NotCounted = uncounted(st, d.ID)
		v.Decisions = append(v.Decisions, dv)
	}
	v.Result, v.Error = st.Result, st.Error
	v.Stage = st.Stage
	switch {
	case len(v.Interrupts) > 0:
		k := v.Interrupts[0].Kind
		v.Kind = &k
		v.Status = StatusWaiting
		if t.Status == StatusInterrupted {
			// Stopped by an operator after it reached the question: the
			// stop stands until a person answers or resumes it.
			v.Status = StatusInterrupted
		}
		if k == KindNeedReason {
			v.Stage = StageNeedReason
		}
	case snap.Done():
		switch st.Stage {
		case StageCancelled:
			v.Status = StatusCancelled
		case StageFailed:
			v.Status = StatusFailed
		default:
			v.Status = StatusDone
		}
	default:
		v.Status = StatusRunning
		if t.Status == StatusInterrupted {
			v.Status = StatusInterrupted
		}
	}
	return v
}

// approvalView is the approval question as shown: the stored payload (its
// kind, and why an answer was refused) with the draft, order, reason and
// effect taken from the state. A payload stored by state format 1 already
// holds them and keeps its own.
func approvalView(stored json.RawMessage, st State) json.RawMessage {
	q, ok := approvalShown(stored, st)
	if !ok {
		return stored
	}
	b, err := json.Marshal(q)
	if err != nil {
		return stored
	}
	return b
}

// approvalShown is the approval question approvalView shows, decoded:
// false when stored does not decode.
func approvalShown(stored json.RawMessage, st State) (ApprovalQuestion, bool) {
	var q ApprovalQuestion
	if err := json.Unmarshal(stored, &q); err != nil {
		return q, false
	}
	if q.DraftID == "" && st.Draft != nil {
		q.DraftID, q.ExpiresAt, q.Version = st.Draft.ID, st.Draft.ExpiresAt, VersionOf(st.Draft)
	}
	if q.Version == 0 {
		q.Version = 1 // a question stored before drafts had versions
	}
	if q.OrderID == "" {
		q.OrderID = st.Order
	}
	if q.Reason == "" {
		q.Reason = st.Reason
	}
	if q.Effect == "" {
		q.Effect = approvalEffect(q.OrderID)
	}
	q.ExpiresAt = q.ExpiresAt.UTC().Truncate(time.Millisecond) // docs/json.md "Times"
	return q, true
}

// done reports whether v is a finished run's (done, cancelled, failed).
func (v *View) done() bool { return endedStatus(v.Status) }

// endedStatus reports whether status is one a run ends with: done,
// cancelled or failed. No status changes after it.
func endedStatus(status string) bool {
	return status == StatusDone || status == StatusCancelled || status == StatusFailed
}
