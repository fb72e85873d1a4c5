package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"assistant/business"
	"assistant/flow"
	"assistant/internal/termtext"
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
	// NodeReview2 asks the second approval question of a task that needs
	// two approvals, in the same superstep as NodeReview.
	NodeReview2 = "review_2"
	NodeSubmit  = "submit"
	NodeCancel  = "cancel"
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
	// of the Approvals a task started with --approvals 2 needs; both 0
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
	return fmt.Sprintf("approve submits a return application for order %s; cancel ends the request without one", order)
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

// Deps are what the nodes need from outside the graph.
type Deps struct {
	Desk  *business.Store
	Now   func() time.Time // wall clock; nil means time.Now
	Fault func(point string)
}

// Build returns the return-request graph (docs/design.md "The return-request flow"):
//
//	lookup → ask_reason (only without a valid reason) → prepare → review [+ review_2] → submit | cancel
//	review --edit--> prepare, review --revise--> ask_reason → prepare
//
// With two approvals, prepare fans out to review and review_2, each asking
// one approval question, and the superstep ends once both are answered.
// Each edit or revise makes a new draft version; past
// business.MaxDraftVersions the run ends failed (too_many_revisions).
// Side effects are keyed: prepare reuses the task's draft of a version,
// submit reuses the draft's application, a decision is recorded once per
// answer, so any node may run again after a crash.
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
	g.AddNode(NodeReview, n.review(1))
	g.AddNode(NodeReview2, n.review(2))
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
	g.AddConditionalEdges(NodePrepare, func(s State) []string {
		switch {
		case s.Stage == StageFailed:
			return []string{flow.End}
		case s.Approvals >= 2:
			return []string{NodeReview, NodeReview2}
		}
		return []string{NodeReview}
	})
	g.AddConditionalEdges(NodeReview, afterReview)
	g.AddConditionalEdges(NodeReview2, afterReview)
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
	if s.Draft != nil && s.Comment != "" {
		// Sent back by a request for changes: the question carries it.
		q.Comment = s.Comment
		if d := lastDecision(s, ActionRevise); d != nil {
			q.RequestedBy = d.By
		}
	} else if err := ValidReason(s.Reason); s.Reason != "" && err != nil {
		q.Problem = err.Error()
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
		upd := State{Reason: r}
		d := Decision{ID: ans.DecisionID, By: ans.By, Action: ActionReason, At: ans.At, Reason: r}
		if s.Draft != nil {
			d.DraftID, d.Version = s.Draft.ID, VersionOf(s.Draft)
		}
		if err := n.record(ctx, s, d, &upd); err != nil {
			return State{}, err
		}
		return upd, nil
	}
}

// record adds d, the answer a node took, to the business file's trail
// (keyed by its id, so a node that runs again records it once) and to
// upd. An answer saved by an older build names nobody and is not recorded.
func (n nodes) record(ctx context.Context, s State, d Decision, upd *State) error {
	if d.By == "" || d.ID == "" {
		return nil
	}
	d = normalized(d)
	if err := n.Desk.RecordDecision(ctx, trailEntry(s.Task, d)); err != nil {
		return err
	}
	upd.Decisions = append(upd.Decisions, d)
	return nil
}

// normalized is d as the trail stores it: its time in UTC, to the
// millisecond.
func normalized(d Decision) Decision {
	d.At = d.At.UTC().Truncate(time.Millisecond)
	return d
}

// trailEntry is decision d of task as the business file's trail keeps it.
func trailEntry(task string, d Decision) business.Decision {
	return business.Decision{
		ID: d.ID, TaskID: task, By: d.By, Action: d.Action, DraftID: d.DraftID, Version: d.Version,
		At: d.At, Comment: d.Comment, Reason: d.Reason,
	}
}

// submitDecided submits the state's draft, with the approval that asked
// for it recorded in the trail in the same durable commit
// (business.Store.SubmitDecided): the last approve of the draft in the
// state, given by someone, with an id (an answer saved by an older build
// names nobody). A task that needs two approvals recorded both when they
// were given; its submit records nothing.
func (n nodes) submitDecided(ctx context.Context, s State) (business.Application, bool, error) {
	if s.Approvals < 2 {
		if d := lastDecision(s, ActionApprove); d != nil && d.DraftID == s.Draft.ID && d.By != "" && d.ID != "" {
			return n.Desk.SubmitDecided(ctx, trailEntry(s.Task, *d), s.Draft.ID, s.User, n.Now())
		}
	}
	return n.Desk.Submit(ctx, s.Draft.ID, s.User, n.Now())
}

// lastDecision returns the state's last decision of action, or nil.
func lastDecision(s State, action string) *Decision {
	for i := len(s.Decisions) - 1; i >= 0; i-- {
		if s.Decisions[i].Action == action {
			return &s.Decisions[i]
		}
	}
	return nil
}

// prepare makes the task's draft: version 1 the first time, the next
// version after an edit or a request for changes (the state holds a draft
// then), whose order is checked again, as lookup checked it for the first.
func (n nodes) prepare(ctx context.Context, s State) (State, error) {
	ttl := time.Duration(s.TTLSeconds) * time.Second
	if ttl <= 0 {
		ttl = business.DefaultDraftTTL
	}
	version := VersionOf(s.Draft) + 1
	if version > business.MaxDraftVersions {
		return State{Stage: StageFailed, Error: tooManyRevisions(s)}, nil
	}
	if version > 1 {
		if f, err := n.recheck(ctx, s); err != nil || f != nil {
			if f != nil {
				return n.refused(ctx, s, f) // the task's own application ends it submitted
			}
			return State{}, err
		}
	}
	d, _, err := n.Desk.PrepareDraftVersion(ctx, s.Task, version, s.Order, s.User, strings.TrimSpace(s.Reason), ttl, n.Now())
	if err != nil {
		return State{}, fmt.Errorf("prepare draft: %w", err)
	}
	upd := State{Draft: &DraftRef{ID: d.ID, ExpiresAt: d.ExpiresAt.UTC(), Version: d.Version}, Stage: StageDraftReady}
	if d.Reason != s.Reason {
		// The draft's reason is the request's reason from here on (State
		// keeps it once); they differ only if s.Reason was not trimmed.
		upd.Reason = d.Reason
	}
	return upd, nil
}

// recheck looks the order up again before a new draft version is made:
// a failure when it may no longer be returned, nil when it may.
func (n nodes) recheck(ctx context.Context, s State) (*Failure, error) {
	o, err := n.Desk.Order(ctx, s.Order, s.User)
	if errors.Is(err, business.ErrNotFound) {
		return &Failure{Code: CodeOrderNotFound, Message: fmt.Sprintf("order %s not found", s.Order)}, nil
	}
	if err != nil {
		return nil, err
	}
	code, err := n.Desk.Eligibility(ctx, o, n.Now())
	if err != nil || code == "" {
		return nil, err
	}
	return &Failure{Code: code, Message: eligibilityMessage(code, o.ID) + "; no new draft was made"}, nil
}

// tooManyRevisions is the failure of a request whose next draft would be
// past business.MaxDraftVersions.
func tooManyRevisions(s State) *Failure {
	return &Failure{Code: CodeTooManyRevisions, Message: fmt.Sprintf(
		"task %s has %d draft versions, the most one task may have; the last edit or request for changes was not applied and nothing was submitted (start a new task to try again)",
		s.Task, business.MaxDraftVersions)}
}

// review returns the node that asks approval question slot (1, or 2 of a
// task that needs two approvals) about the state's draft and takes its
// answer: approve, cancel, edit (a new reason) or revise (a comment).
func (n nodes) review(slot int) flow.NodeFunc[State] {
	return func(ctx context.Context, s State) (State, error) {
		if s.Draft == nil {
			return State{}, errors.New("review: no draft in state")
		}
		q := approvalAsked{Kind: KindApproval}
		if s.Approvals >= 2 {
			q.Approver, q.Approvals = slot, s.Approvals
		}
		for {
			ans, err := flow.Interrupt[ApprovalAnswer](ctx, q)
			if err != nil {
				return State{}, err
			}
			switch {
			case !slices.Contains(Actions, ans.Action):
				q.Problem = fmt.Sprintf("action %q is not one of %s", ans.Action, strings.Join(Actions, ", "))
			case ans.DraftID != s.Draft.ID:
				q.Problem = fmt.Sprintf("the answer names draft %q, the question draft %s", ans.DraftID, s.Draft.ID)
			case ans.Action == ActionEdit && ValidReason(strings.TrimSpace(ans.Reason)) != nil:
				q.Problem = "an edit needs a valid reason: " + ValidReason(strings.TrimSpace(ans.Reason)).Error()
			default:
				return n.decided(ctx, s, ans)
			}
		}
	}
}

// decided is the update of an approval answer: the decision, recorded in
// the trail, and for an edit the new reason, for a revise the comment; an
// edit or revise of the last version allowed ends the request failed.
func (n nodes) decided(ctx context.Context, s State, ans ApprovalAnswer) (State, error) {
	upd := State{Decision: ans.Action}
	d := Decision{ID: ans.DecisionID, By: ans.By, Action: ans.Action, DraftID: s.Draft.ID, Version: VersionOf(s.Draft), At: ans.At}
	switch ans.Action {
	case ActionEdit:
		d.Reason = strings.TrimSpace(ans.Reason)
		upd.Reason = d.Reason
	case ActionRevise:
		d.Comment = strings.TrimSpace(ans.Comment)
		upd.Comment = d.Comment
	}
	if ans.Action == ActionApprove && s.Approvals < 2 {
		// The approval of a task that needs one goes on to submit, which
		// records it in the trail in its own durable commit (submitDecided):
		// one durable commit fewer per approve. Until then the checkpoint
		// after this node carries it, and a run that continues after a
		// crash submits, and records it, from there.
		upd.Decisions = append(upd.Decisions, normalized(d))
		return upd, nil
	}
	if err := n.record(ctx, s, d, &upd); err != nil {
		return State{}, err
	}
	if (ans.Action == ActionEdit || ans.Action == ActionRevise) && VersionOf(s.Draft) >= business.MaxDraftVersions {
		upd.Reason, upd.Comment = "", ""
		upd.Stage, upd.Error = StageFailed, tooManyRevisions(s)
	}
	return upd, nil
}

// afterReview routes a finished approval round: by the action taken on
// the current draft (roundAction).
func afterReview(s State) []string {
	if s.Stage == StageFailed {
		return []string{flow.End}
	}
	switch roundAction(s) {
	case ActionApprove:
		return []string{NodeSubmit}
	case ActionEdit:
		return []string{NodePrepare}
	case ActionRevise:
		return []string{NodeAskReason}
	case "":
		// Two approvals by one person (the answer check refuses it): ask
		// both questions again.
		return []string{NodeReview, NodeReview2}
	}
	return []string{NodeCancel}
}

// roundAction is what the answers to the current draft's approval
// questions decide: with one approval, the decision; with two, any
// cancel, edit or revise (each closes every open question of the round),
// else approve once two different people approved, else "".
func roundAction(s State) string {
	if s.Approvals < 2 || s.Draft == nil {
		return s.Decision
	}
	approvers := map[string]bool{}
	other := ""
	for _, d := range s.Decisions {
		if d.DraftID != s.Draft.ID || d.Action == ActionReason {
			continue
		}
		if d.Action == ActionApprove {
			approvers[d.By] = true
		} else {
			other = d.Action
		}
	}
	switch {
	case other != "":
		return other
	case len(approvers) >= s.Approvals:
		return ActionApprove
	}
	return ""
}

func (n nodes) submit(ctx context.Context, s State) (State, error) {
	app, reused, err := n.submitDecided(ctx, s)
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
	return State{Stage: StageSubmitted, Decision: ActionApprove, Result: &Result{ApplicationID: app.ID, ReviewStatus: app.ReviewStatus, Reused: reused}}, nil
}

// cancel ends the request without an application, unless the business
// file holds one for the task already (a submit whose checkpoint a power
// loss or an older checkpoints.sqlite lost): then the request is submitted,
// whatever the answer, and the application is reported as reused.
func (n nodes) cancel(ctx context.Context, s State) (State, error) {
	if done, err := n.submitted(ctx, s); err != nil || done.Stage != "" {
		return done, err
	}
	return State{Stage: StageCancelled, Decision: ActionCancel}, nil
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
// UTF-8 with no white space, no control or invisible characters
// (termtext.Invisible: zero-width space, bidi overrides, Hangul fillers,
// the Braille blank, …: an id that prints as another, or as nothing), no
// '/' or '\', not
// "." or "..", and not starting with '-'. Task ids appear in file-like
// places (logs, shell commands), hence the rule: a printed next command
// with an id that starts with '-' would be read as a flag when pasted.
// Order ids follow the same rule.
func ValidTaskID(id string) error {
	switch {
	case id == "":
		return errors.New("task id must not be empty")
	case strings.HasPrefix(id, "-"):
		return fmt.Errorf("task id %s must not start with '-': a command line would read it as a flag", termtext.Quote(id))
	case len(id) > MaxTaskIDBytes:
		return fmt.Errorf("task id is %d bytes; at most %d are allowed", len(id), MaxTaskIDBytes)
	case !utf8.ValidString(id):
		return errors.New("task id is not valid UTF-8")
	case id == "." || id == "..":
		return fmt.Errorf("task id %s is not allowed", termtext.Quote(id))
	case strings.ContainsFunc(id, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || termtext.Invisible(r) || r == '/' || r == '\\'
	}):
		return fmt.Errorf("task id %s must not contain spaces, control or invisible characters, '/' or '\\'", termtext.Quote(id))
	}
	return nil
}
