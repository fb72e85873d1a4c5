package returns

import (
	"fmt"
	"time"
)

// ReasonQuestion is the payload of a need_reason interrupt.
type ReasonQuestion struct {
	Kind    string `json:"kind"` // KindNeedReason
	OrderID string `json:"order_id"`
	Prompt  string `json:"prompt"`
	// Problem says why the previous answer was refused; "" the first time.
	Problem string `json:"problem,omitempty"`
	// Comment is what the request for changes (revise) that sent the task
	// back asked for, and RequestedBy who asked; "" otherwise.
	Comment     string `json:"comment,omitempty"`
	RequestedBy string `json:"requested_by,omitempty"`
}

// ReasonAnswer is the resume value of a need_reason interrupt. By, At and
// DecisionID say who answered and when, for the decision trail (the
// DecisionID keys the trail's row, so a node that runs again records it
// once); an answer saved by an older build has none and is not recorded.
type ReasonAnswer struct {
	Reason     string    `json:"reason"`
	By         string    `json:"by,omitempty"`
	At         time.Time `json:"at,omitzero"`
	DecisionID string    `json:"decision_id,omitempty"`
}

// ApprovalQuestion is an approval question as shown to a person (the
// "value" of the interrupt in the JSON output): the draft and what
// approving it does. Only its approvalAsked part is stored; approvalView
// fills in the rest from the state.
type ApprovalQuestion struct {
	Kind      string    `json:"kind"` // KindApproval
	DraftID   string    `json:"draft_id"`
	OrderID   string    `json:"order_id"`
	Reason    string    `json:"reason"`
	ExpiresAt time.Time `json:"expires_at"`
	Effect    string    `json:"effect"`
	// Version is the draft's version (1 for the first).
	Version int `json:"version"`
	// Approver and Approvals: this question is approval Approver (1 or 2)
	// of the Approvals a task started with two approvals needs; both 0
	// when one approval is needed.
	Approver  int `json:"approver,omitempty"`
	Approvals int `json:"approvals,omitempty"`
	// Problem says why the previous answer was refused; "" the first time.
	Problem string `json:"problem,omitempty"`
}

// approvalAsked is the payload the review node stores with an approval
// interrupt: its kind, and why the previous answer was refused. The draft
// it asks about is the draft of the state of the checkpoint the question is
// saved against (prepare made it; nothing changes it), so the draft id and
// expiry are not stored twice. Tasks parked by state format 1 stored the
// whole ApprovalQuestion, which decodes into this too.
type approvalAsked struct {
	Kind      string `json:"kind"` // KindApproval
	Approver  int    `json:"approver,omitempty"`
	Approvals int    `json:"approvals,omitempty"`
	Problem   string `json:"problem,omitempty"`
}

// approvalEffect says what approving a draft for order does.
func approvalEffect(order string) string {
	return fmt.Sprintf("approve creates a return application for order %s, which awaits review (no refund is made); cancel ends the request without one", order)
}

// ApprovalAnswer is the resume value of an approval interrupt. DraftID must
// name the draft the question carried, so an answer given to an older
// question cannot approve a newer draft. Reason is the new reason of an
// edit, Comment what a revise asks for. By, At and DecisionID are as in
// ReasonAnswer.
type ApprovalAnswer struct {
	Action     string    `json:"action"`
	DraftID    string    `json:"draft_id"`
	Reason     string    `json:"reason,omitempty"`
	Comment    string    `json:"comment,omitempty"`
	By         string    `json:"by,omitempty"`
	At         time.Time `json:"at,omitzero"`
	DecisionID string    `json:"decision_id,omitempty"`
}
