package returns

import (
	"context"
	"time"

	"assistant/business"
	"assistant/flow"
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

// Deps are what the nodes need from outside the graph.
type Deps struct {
	Desk  *business.Store
	Now   func() time.Time // wall clock; nil means time.Now
	Fault func(point string)
	// Held is the check that task is still driven by this run, judged in
	// the submit's business transaction (business.SubmitCheck): the
	// runner's runs.Store.HeldRunning at the lease the run holds. A run
	// driven under no lease (verify's replay) has none, and ok is false.
	Held func(task string) (check business.SubmitCheck, ok bool)
	// Ended records, before the node's update is saved, that the run of
	// task ends failed with f: the runner's endHeld, which moves the task
	// record to failed while the run still holds it running under its
	// lease. An error (a stop committed first: runs.ErrStopped) fails the
	// node, and nothing of its update is saved. nil records nothing (a run
	// under no lease).
	Ended func(ctx context.Context, task string, f Failure) error
}

// Build returns the return-request graph (docs/design.md "The return-request flow"):
//
//	lookup → ask_reason (only without a valid reason) → prepare → review [+ review_2] → submit | cancel
//	review (edit) → prepare, review (revise) → ask_reason → prepare
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
	if d.Held == nil {
		d.Held = func(string) (business.SubmitCheck, bool) { return nil, false }
	}
	if d.Ended == nil {
		d.Ended = func(context.Context, string, Failure) error { return nil }
	}
	n := nodes{d}
	g := flow.NewGraph(Reduce)
	g.StateFormat(StateFormat, stateUpgrades)
	g.AddNode(NodeLookup, n.ending(n.lookup))
	g.AddNode(NodeAskReason, n.askReason)
	g.AddNode(NodePrepare, n.ending(n.prepare))
	g.AddNode(NodeReview, n.ending(n.review(1)))
	g.AddNode(NodeReview2, n.ending(n.review(2)))
	g.AddNode(NodeSubmit, n.ending(n.submit))
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
	g.AddConditionalEdges(NodeSubmit, afterSubmit)
	g.AddEdge(NodeCancel, flow.End)
	g.AddNode(NodeGiveUp, giveUp)
	g.AddEdge(NodeGiveUp, flow.End)
	return g
}

type nodes struct{ Deps }

// ending wraps a node that may end the run failed (a refused order, an
// expired draft, too many revisions): such an update is recorded in the
// business store first (Deps.Ended), so the task record and the
// checkpoint after the node tell one end, and a stop committed before it
// wins: the node fails, and the run ends interrupted with nothing of the
// failure saved (docs/recovery.md "Operator stop").
func (n nodes) ending(node flow.NodeFunc[State]) flow.NodeFunc[State] {
	return func(ctx context.Context, s State) (State, error) {
		upd, err := node(ctx, s)
		if err != nil || upd.Stage != StageFailed || upd.Error == nil {
			return upd, err
		}
		if err := n.Ended(ctx, s.Task, *upd.Error); err != nil {
			return State{}, err
		}
		return upd, nil
	}
}

// giveUp is NodeGiveUp's work: nothing. The node is only named by a state
// update that ends a run a guard stopped.
func giveUp(context.Context, State) (State, error) { return State{}, nil }

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
// else approve once two different people approved whose approvals still
// count (a submit found none of them Uncounted), else "".
func roundAction(s State) string {
	if s.Approvals < 2 || s.Draft == nil {
		return s.Decision
	}
	approvers := map[string]bool{}
	other := ""
	for _, d := range s.Decisions {
		if d.DraftID != s.Draft.ID || d.Action == ActionReason || uncounted(s, d.ID) != "" {
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

// afterSubmit routes from a submit: to the end once it submitted or
// ended the request; else a submit refused because approvals no longer
// count (State.Uncounted) asks for the approvals missing again: the one
// approval question of a task that needs one; of a task that needs two,
// the second question when one approval still counts, both when none
// does.
func afterSubmit(s State) []string {
	if s.Stage == StageSubmitted || s.Stage == StageFailed || s.Stage == StageCancelled || s.Draft == nil {
		return []string{flow.End}
	}
	if s.Approvals < 2 {
		return []string{NodeReview}
	}
	if len(countedApprovals(s)) >= 1 {
		return []string{NodeReview2}
	}
	return []string{NodeReview, NodeReview2}
}

// countedApprovals are the approvals a submit of the state's draft carries
// out, as the decision trail holds them, for ApprovalsCount to judge: of
// a task that needs one, its last approval of the draft; of a task that
// needs two, the first approval of the draft by each person. An approval
// found Uncounted before, or one that names nobody or has no id (saved by
// an older build), is not among them.
func countedApprovals(s State) []business.Decision {
	if s.Draft == nil {
		return nil
	}
	var out []business.Decision
	take := func(d Decision) {
		out = append(out, business.Decision{ID: d.ID, TaskID: s.Task, By: d.By, Action: d.Action, DraftID: d.DraftID, Version: d.Version, At: d.At})
	}
	if s.Approvals < 2 {
		if d := lastDecision(s, ActionApprove); d != nil && d.DraftID == s.Draft.ID && d.By != "" && d.ID != "" && uncounted(s, d.ID) == "" {
			take(*d)
		}
		return out
	}
	by := map[string]bool{}
	for _, d := range s.Decisions {
		if d.Action != ActionApprove || d.DraftID != s.Draft.ID || d.By == "" || d.ID == "" || by[d.By] || uncounted(s, d.ID) != "" {
			continue
		}
		by[d.By] = true
		take(d)
	}
	return out
}
