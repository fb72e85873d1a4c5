package returns

import (
	"context"
	"errors"
	"slices"

	"assistant/business"
	"assistant/flow"
)

// This file holds what a view tells of an approval given but not carried
// out yet: the approve was saved in the task's head, its run was left
// (killed, or stopped) before its submit finished, so no application was
// made and the approval of a task that needs one is not in the trail yet
// (it enters the trail with its submit). The view names the approvals
// the submit is to carry out, and whether each still counts now, as the
// submit would judge it (business.ApprovalsCount).

// awaitingSubmit returns the approvals the head snap of task t (owner
// owner) carries to its submit while that submit has not finished: the
// run's next node is submit, it asks nothing and has no result. Each is
// judged as the submit would judge it now; an approval that would not
// count says why (NotCounted). [] when the head holds none. It writes
// nothing. Errors: storage errors.
func (s *Service) awaitingSubmit(ctx context.Context, task, owner string, snap *flow.Snapshot[State]) ([]DecisionView, error) {
	if snap == nil || snap.Done() || len(snap.Interrupts) > 0 || !slices.Contains(snap.Next, NodeSubmit) {
		return []DecisionView{}, nil
	}
	st := snap.Values
	if st.Draft == nil || st.Result != nil || st.Error != nil {
		return []DecisionView{}, nil
	}
	approvals := countedApprovals(st)
	if len(approvals) == 0 {
		return []DecisionView{}, nil
	}
	because := map[string]string{}
	err := s.desk.Judge(ctx, s.desk.ApprovalsCount(task, owner, max(st.Approvals, 1), st.Draft.ID, VersionOf(st.Draft), approvals))
	var ue *business.UncountedError
	switch {
	case errors.As(err, &ue):
		for _, u := range ue.Uncounted {
			because[u.DecisionID] = u.Because
		}
	case err != nil:
		return nil, err
	}
	out := make([]DecisionView, 0, len(approvals))
	for _, d := range approvals {
		dv := decisionView(d.By, d.Action, d.DraftID, d.Version, d.At, "", "")
		dv.NotCounted = because[d.ID]
		out = append(out, dv)
	}
	return out, nil
}

// madeApplication returns the application of task's request when snap, a
// head part-way to submit (an approval taken, the submit not finished),
// was submitting a draft whose application the business file holds
// already (a submit killed, stopped or paused after its business commit,
// or one in flight): the request is submitted, whatever its run has
// recorded since, and the view says so instead of an approval awaiting
// its submit. nil for any other head. Errors: storage errors.
func (s *Service) madeApplication(ctx context.Context, snap *flow.Snapshot[State]) (*Result, error) {
	if snap == nil || snap.Done() || len(snap.Interrupts) > 0 || !slices.Contains(snap.Next, NodeSubmit) || snap.Values.Result != nil {
		return nil, nil
	}
	upd, err := nodes{Deps{Desk: s.desk}}.submitted(ctx, snap.Values)
	if err != nil || upd.Result == nil {
		return nil, err
	}
	r := *upd.Result
	r.Reused = false // made by this run's own submit, not found from before
	return &r, nil
}
