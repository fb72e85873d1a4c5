package returns

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
)

// recordAnswers adds to the business file's decision trail, durably, each
// answer cmd gives that the node asked takes (trailOf), before the
// command saves cmd at the head: an answer saved at a head is in the trail
// already, whatever kills the command after, so show, history, list and
// the card count it as the run does. The node records it again under the
// same decision id, which the trail keeps once. The approval of a task
// that needs one is left to submit, which records it in the commit that
// makes the application (docs/performance.md). Errors: storage errors.
func (r *runner) recordAnswers(ctx context.Context, task string, st State, cmd flow.Command) error {
	seen := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(cmd.ResumeMap)) {
		d, ok := trailOf(st, cmd.ResumeMap[id])
		if !ok || seen[d.ID] {
			continue
		}
		seen[d.ID] = true
		if err := r.desk.RecordDecision(ctx, trailEntry(task, normalized(d))); err != nil {
			return fmt.Errorf("resume %s: %w", task, err)
		}
	}
	return nil
}

// trailOf is the decision the node asked with v (a ReasonAnswer or
// ApprovalAnswer), in state st, records when it takes it, as askReason
// and decided build it; false when the node would not record it: an
// answer it refuses (a blank reason, an edit without a valid reason, a
// draft not the state's), one that names nobody, or the approval of a
// task that needs one (submit records it).
func trailOf(st State, v any) (Decision, bool) {
	switch a := v.(type) {
	case ReasonAnswer:
		r := strings.TrimSpace(a.Reason)
		if a.By == "" || a.DecisionID == "" || ValidReason(r) != nil {
			return Decision{}, false
		}
		d := Decision{ID: a.DecisionID, By: a.By, Action: ActionReason, At: a.At, Reason: r}
		if st.Draft != nil {
			d.DraftID, d.Version = st.Draft.ID, VersionOf(st.Draft)
		}
		return d, true
	case ApprovalAnswer:
		if a.By == "" || a.DecisionID == "" || st.Draft == nil || a.DraftID != st.Draft.ID || !slices.Contains(Actions, a.Action) ||
			(a.Action == ActionApprove && st.Approvals < 2) ||
			(a.Action == ActionEdit && ValidReason(strings.TrimSpace(a.Reason)) != nil) {
			return Decision{}, false
		}
		d := Decision{ID: a.DecisionID, By: a.By, Action: a.Action, DraftID: st.Draft.ID, Version: VersionOf(st.Draft), At: a.At}
		switch a.Action {
		case ActionEdit:
			d.Reason = strings.TrimSpace(a.Reason)
		case ActionRevise:
			d.Comment = strings.TrimSpace(a.Comment)
		}
		return d, true
	}
	return Decision{}, false
}

// trailHeld checks that every answer the head snap of task holds is in the
// business file's decision trail, as the same answer (its person, action
// and draft): those applied to its state, those saved at it for a
// continued run to replay, and the approvals of a round whose task ran
// with them (roundAnswers). The trail is written before the head (the
// nodes, recordAnswers, submit), so a head holding an answer the trail
// lacks was paired with an older business file: its answers would count
// once in the run and not at all in the trail, and the run would ask the
// same person again. Such a head is *InconsistentError, never trusted.
// Not judged: an answer that names nobody (saved by an older build), and
// the approval of a task that needs one until its submit, which records
// it in the commit that makes the application (submitDecided). An
// approval the head holds no longer counted (State.Uncounted) must be
// marked so in the trail, which the submit wrote first. Reads the trail
// once, and not at all when the head holds no answer, and the head
// checkpoint of a task that needs two approvals. Errors:
// *InconsistentError, storage errors.
func (r *runner) trailHeld(ctx context.Context, task string, snap *flow.Snapshot[State]) error {
	held := headAnswers(snap)
	if snap.Values.Approvals >= 2 {
		// The approval a review task has run with is no longer in the
		// snapshot: its update waits at the head for the other approval.
		ras, err := r.roundAnswers(ctx, snap)
		if err != nil {
			return fmt.Errorf("reconcile %s: %w", task, err)
		}
		for _, ra := range ras {
			if d, ok := trailOf(snap.Values, ra.answer); ok && ra.done {
				held = append(held, normalized(d))
			}
		}
	}
	if len(held) == 0 && len(snap.Values.Uncounted) == 0 {
		return nil
	}
	ds, err := r.desk.Decisions(ctx, task)
	if err != nil {
		return fmt.Errorf("reconcile %s: %w", task, err)
	}
	trail := make(map[string]business.Decision, len(ds))
	for _, d := range ds {
		trail[d.ID] = d
	}
	for _, d := range held {
		t, ok := trail[d.ID]
		if ok && t.By == d.By && t.Action == d.Action && t.DraftID == d.DraftID {
			continue
		}
		claim := fmt.Sprintf("it holds the answer %s by %s at %s (decision %s)", d.Action, d.By, d.At.UTC().Format(time.RFC3339), d.ID)
		lacks := "has no such answer in its decision trail"
		if ok {
			lacks = fmt.Sprintf("records decision %s as %s by %s", d.ID, t.Action, t.By)
		}
		return &InconsistentError{Server: r.onServer(), Task: task, Checkpoints: claim, Business: lacks}
	}
	for _, u := range snap.Values.Uncounted {
		// The submit marks the trail before the checkpoint that holds
		// the approval uncounted: a trail without the mark is older.
		if t, ok := trail[u.ID]; !ok || t.NotCounted == "" {
			claim := fmt.Sprintf("the approval of %s (decision %s) no longer counts (%s)", u.By, u.ID, u.Because)
			lacks := "has no such answer in its decision trail"
			if ok {
				lacks = fmt.Sprintf("counts decision %s: its trail holds no mark on it", u.ID)
			}
			return &InconsistentError{Server: r.onServer(), Task: task, Checkpoints: claim, Business: lacks}
		}
	}
	return nil
}

// headAnswers returns the answers the head snap holds that the decision
// trail must hold too (trailHeld): the decisions of its state, then the
// answers saved at it that the node asked records when it takes them
// (trailOf), in the order saved.
func headAnswers(snap *flow.Snapshot[State]) []Decision {
	st := snap.Values
	var out []Decision
	for _, d := range st.Decisions {
		if d.ID == "" || d.By == "" || (d.Action == ActionApprove && st.Approvals < 2 && st.Result == nil) {
			continue
		}
		out = append(out, d)
	}
	for _, ts := range snap.Tasks {
		for _, raw := range ts.Answers {
			var v any
			switch ts.Node {
			case NodeReview, NodeReview2:
				var a ApprovalAnswer
				if json.Unmarshal(raw, &a) != nil {
					continue
				}
				v = a
			case NodeAskReason:
				var a ReasonAnswer
				if json.Unmarshal(raw, &a) != nil {
					continue
				}
				v = a
			default:
				continue
			}
			if d, ok := trailOf(st, v); ok {
				out = append(out, normalized(d))
			}
		}
	}
	return out
}
