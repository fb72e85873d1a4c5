package returns

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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
