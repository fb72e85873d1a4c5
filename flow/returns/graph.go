package returns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"assistant/business"
	"assistant/flow"
)

// Limits of the return flow. DefaultDraftTTL comes from business (300 s).
const (
	MaxReasonRunes = 500
	MaxTaskIDBytes = 128
	MinDraftTTL    = time.Second
	MaxDraftTTL    = 7 * 24 * time.Hour
)

// Node names of the return-request graph.
const (
	NodeLookup    = "lookup"
	NodeAskReason = "ask_reason"
	NodePrepare   = "prepare"
	NodeReview    = "review"
	NodeSubmit    = "submit"
	NodeCancel    = "cancel"
	// NodeGiveUp never runs: a run a guard stopped (attempts exhausted,
	// the recursion limit) ends with a state update as this node, whose
	// only edge is to End.
	NodeGiveUp = "give_up"
)

// ReasonQuestion is the payload of a need_reason interrupt.
type ReasonQuestion struct {
	Kind    string `json:"kind"` // KindNeedReason
	OrderID string `json:"order_id"`
	Prompt  string `json:"prompt"`
	// Problem says why the previous answer was refused; "" the first time.
	Problem string `json:"problem,omitempty"`
}

// ReasonAnswer is the resume value of a need_reason interrupt.
type ReasonAnswer struct {
	Reason string `json:"reason"`
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
	Kind    string `json:"kind"` // KindApproval
	Problem string `json:"problem,omitempty"`
}

// approvalEffect says what approving a draft for order does.
func approvalEffect(order string) string {
	return fmt.Sprintf("approve submits a return application for order %s; cancel ends the request without one", order)
}

// ApprovalAnswer is the resume value of an approval interrupt. DraftID must
// name the draft the question carried, so an answer given to an older
// question cannot approve a newer draft.
type ApprovalAnswer struct {
	Action  string `json:"action"`
	DraftID string `json:"draft_id"`
}

// Deps are what the nodes need from outside the graph.
type Deps struct {
	Desk  *business.Store
	Now   func() time.Time // wall clock; nil means time.Now
	Fault func(point string)
}

// Build returns the return-request graph (docs/design.md "The return-request flow"):
//
//	lookup → ask_reason (only without a valid reason) → prepare → review → submit | cancel
//
// Side effects are keyed: prepare reuses the task's draft, submit reuses the
// draft's application, so any node may run again after a crash.
func Build(d Deps) *flow.Graph[State] {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Fault == nil {
		d.Fault = func(string) {}
	}
	n := nodes{d}
	g := flow.NewGraph(Reduce)
	g.StateFormat(StateFormat, stateUpgrades)
	g.AddNode(NodeLookup, n.lookup)
	g.AddNode(NodeAskReason, n.askReason)
	g.AddNode(NodePrepare, n.prepare)
	g.AddNode(NodeReview, n.review)
	g.AddNode(NodeSubmit, n.submit)
	g.AddNode(NodeCancel, n.cancel)
	g.AddEdge(flow.Start, NodeLookup)
	g.AddConditionalEdges(NodeLookup, func(s State) []string {
		switch {
		case s.Stage == StageFailed || s.Stage == StageSubmitted:
			return []string{flow.End}
		case ValidReason(s.Reason) != nil:
			return []string{NodeAskReason}
		}
		return []string{NodePrepare}
	})
	g.AddEdge(NodeAskReason, NodePrepare)
	g.AddEdge(NodePrepare, NodeReview)
	g.AddConditionalEdges(NodeReview, func(s State) []string {
		if s.Decision == ActionApprove {
			return []string{NodeSubmit}
		}
		return []string{NodeCancel}
	})
	g.AddEdge(NodeSubmit, flow.End)
	g.AddEdge(NodeCancel, flow.End)
	g.AddNode(NodeGiveUp, giveUp)
	g.AddEdge(NodeGiveUp, flow.End)
	return g
}

type nodes struct{ Deps }

// giveUp is NodeGiveUp's work: nothing. The node is only named by a state
// update that ends a run a guard stopped.
func giveUp(context.Context, State) (State, error) { return State{}, nil }

func (n nodes) lookup(ctx context.Context, s State) (State, error) {
	o, err := n.Desk.Order(ctx, s.Order, s.User)
	if errors.Is(err, business.ErrNotFound) {
		return n.refused(ctx, s, &Failure{Code: CodeOrderNotFound, Message: fmt.Sprintf("order %s not found", s.Order)})
	}
	if err != nil {
		return State{}, err
	}
	code, err := n.Desk.Eligibility(ctx, o, n.Now())
	if err != nil {
		return State{}, err
	}
	if code != "" {
		return n.refused(ctx, s, &Failure{Code: code, Message: eligibilityMessage(code, o.ID)})
	}
	return State{}, nil
}

// refused ends a request whose order lookup refused it with f, unless the
// business file holds an application of the task already: the business
// file is the truth for side effects, so a task whose run was lost (an
// older checkpoints.sqlite, say) and runs again is submitted, not refused
// for the open application it made itself. Only a refused lookup reads
// the application, so an eligible order costs no extra query.
func (n nodes) refused(ctx context.Context, s State, f *Failure) (State, error) {
	done, err := n.submitted(ctx, s)
	if err != nil || done.Stage != "" {
		return done, err
	}
	return State{Stage: StageFailed, Error: f}, nil
}

func eligibilityMessage(code, order string) string {
	switch code {
	case "not_delivered":
		return fmt.Sprintf("order %s has not been delivered yet; a return can be requested after delivery", order)
	case "return_window_closed":
		return fmt.Sprintf("order %s was delivered more than 30 days ago; the return window is closed", order)
	case "final_sale":
		return fmt.Sprintf("order %s is a final-sale item and cannot be returned", order)
	case "open_application":
		return fmt.Sprintf("order %s already has an open return application", order)
	}
	return fmt.Sprintf("order %s cannot be returned (%s)", order, code)
}

// askReason asks until the answer is a valid reason. Each refused answer
// asks a new question (the next Interrupt call of this node), so the answers
// given so far are replayed in order when the node runs again.
func (n nodes) askReason(ctx context.Context, s State) (State, error) {
	q := ReasonQuestion{Kind: KindNeedReason, OrderID: s.Order, Prompt: fmt.Sprintf("Why do you want to return order %s?", s.Order)}
	if s.Reason != "" {
		q.Problem = ValidReason(s.Reason).Error()
	}
	for {
		ans, err := flow.Interrupt[ReasonAnswer](ctx, q)
		if err != nil {
			return State{}, err
		}
		r := strings.TrimSpace(ans.Reason)
		if err := ValidReason(r); err != nil {
			q.Problem = err.Error()
			continue
		}
		return State{Reason: r}, nil
	}
}

func (n nodes) prepare(ctx context.Context, s State) (State, error) {
	ttl := time.Duration(s.TTLSeconds) * time.Second
	if ttl <= 0 {
		ttl = business.DefaultDraftTTL
	}
	d, _, err := n.Desk.PrepareDraft(ctx, s.Task, s.Order, s.User, strings.TrimSpace(s.Reason), ttl, n.Now())
	if err != nil {
		return State{}, fmt.Errorf("prepare draft: %w", err)
	}
	upd := State{Draft: &DraftRef{ID: d.ID, ExpiresAt: d.ExpiresAt.UTC()}, Stage: StageDraftReady}
	if d.Reason != s.Reason {
		// The draft's reason is the request's reason from here on (State
		// keeps it once); they differ only if s.Reason was not trimmed.
		upd.Reason = d.Reason
	}
	return upd, nil
}

func (n nodes) review(ctx context.Context, s State) (State, error) {
	if s.Draft == nil {
		return State{}, errors.New("review: no draft in state")
	}
	q := approvalAsked{Kind: KindApproval}
	for {
		ans, err := flow.Interrupt[ApprovalAnswer](ctx, q)
		if err != nil {
			return State{}, err
		}
		switch {
		case ans.Action != ActionApprove && ans.Action != ActionCancel:
			q.Problem = fmt.Sprintf("action %q is not approve or cancel", ans.Action)
		case ans.DraftID != s.Draft.ID:
			q.Problem = fmt.Sprintf("the answer names draft %q, the question draft %s", ans.DraftID, s.Draft.ID)
		default:
			return State{Decision: ans.Action}, nil
		}
	}
}

func (n nodes) submit(ctx context.Context, s State) (State, error) {
	app, reused, err := n.Desk.Submit(ctx, s.Draft.ID, s.User, n.Now())
	if errors.Is(err, business.ErrDraftExpired) {
		return State{Stage: StageFailed, Error: &Failure{
			Code:    CodeDraftExpired,
			Message: fmt.Sprintf("draft %s expired at %s before it was approved; nothing was submitted", s.Draft.ID, s.Draft.ExpiresAt.UTC().Format(time.RFC3339)),
		}}, nil
	}
	var ie *business.IneligibleError
	if errors.As(err, &ie) {
		// Checked again at submit time: the facts changed while the draft
		// waited for approval.
		why := " (its return window closed while the draft waited for approval)"
		switch ie.Code {
		case business.ReasonOpenApplication:
			why = " (made by another task since this one started)"
		case business.ReasonNotDelivered, business.ReasonFinalSale:
			why = " (the order changed while the draft waited for approval)"
		}
		return State{Stage: StageFailed, Error: &Failure{
			Code:    ie.Code,
			Message: eligibilityMessage(ie.Code, s.Order) + why + "; nothing was submitted",
		}}, nil
	}
	if err != nil {
		return State{}, err // business errors name the draft already
	}
	n.Fault("submit:after-business-commit")
	return State{Stage: StageSubmitted, Result: &Result{ApplicationID: app.ID, ReviewStatus: app.ReviewStatus, Reused: reused}}, nil
}

// cancel ends the request without an application, unless the business
// file holds one for the task already (a submit whose checkpoint a power
// loss or an older checkpoints.sqlite lost): then the request is submitted,
// whatever the answer, and the application is reported as reused.
func (n nodes) cancel(ctx context.Context, s State) (State, error) {
	if done, err := n.submitted(ctx, s); err != nil || done.Stage != "" {
		return done, err
	}
	return State{Stage: StageCancelled}, nil
}

// submitted looks the task's application up in the business file (by its
// draft, through drafts.task_id and applications.draft_id, both unique
// indexes) and returns the update that ends the request submitted with it;
// a zero State when the task has none (or only another user's, which is
// reported nowhere, as another user's records never are).
func (n nodes) submitted(ctx context.Context, s State) (State, error) {
	a, err := n.Desk.ApplicationByTask(ctx, s.Task)
	if errors.Is(err, business.ErrNotFound) || (err == nil && a.User != s.User) {
		return State{}, nil
	}
	if err != nil {
		return State{}, err
	}
	upd := State{Stage: StageSubmitted, Result: &Result{ApplicationID: a.ID, ReviewStatus: a.ReviewStatus, Reused: true}}
	if s.Draft == nil || s.Draft.ID != a.DraftID {
		d, err := n.Desk.Draft(ctx, a.DraftID)
		if err != nil {
			return State{}, err
		}
		upd.Draft = &DraftRef{ID: d.ID, ExpiresAt: d.ExpiresAt.UTC()}
		if s.Reason == "" {
			upd.Reason = d.Reason
		}
	}
	return upd, nil
}

// ValidReason returns nil when r (already trimmed) may be a return reason:
// not blank, valid UTF-8, at most MaxReasonRunes runes, no control characters.
func ValidReason(r string) error {
	switch {
	case strings.TrimSpace(r) == "":
		return errors.New("the reason must not be blank")
	case !utf8.ValidString(r):
		return errors.New("the reason is not valid UTF-8")
	case utf8.RuneCountInString(r) > MaxReasonRunes:
		return fmt.Errorf("the reason is longer than %d characters", MaxReasonRunes)
	case strings.ContainsFunc(r, unicode.IsControl):
		return errors.New("the reason contains control characters")
	}
	return nil
}

// ValidTaskID returns nil when id may name a task: 1 to 128 bytes of valid
// UTF-8 with no white space, no control or invisible format characters
// (zero-width space, bidi overrides), no '/' or '\', not
// "." or "..", and not starting with '-'. Task ids appear in file-like
// places (logs, shell commands), hence the rule: a printed next command
// with an id that starts with '-' would be read as a flag when pasted.
// Order ids follow the same rule.
func ValidTaskID(id string) error {
	switch {
	case id == "":
		return errors.New("task id must not be empty")
	case strings.HasPrefix(id, "-"):
		return fmt.Errorf("task id %q must not start with '-': a command line would read it as a flag", id)
	case len(id) > MaxTaskIDBytes:
		return fmt.Errorf("task id is %d bytes; at most %d are allowed", len(id), MaxTaskIDBytes)
	case !utf8.ValidString(id):
		return errors.New("task id is not valid UTF-8")
	case id == "." || id == "..":
		return fmt.Errorf("task id %q is not allowed", id)
	case strings.ContainsFunc(id, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '/' || r == '\\'
	}):
		return fmt.Errorf("task id %q must not contain spaces, control or invisible format characters, '/' or '\\'", id)
	}
	return nil
}
