package returns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"assistant/business"
)

// This file holds the one rule of what every view of a task tells
// (docs/json.md "The state as it is now"): show, the text card, wait, list,
// list --awaiting-me and history show a task as it is at the moment of the
// view, judged by the checks a submit would make then, not as its last
// command left it.

// asNow is v, the view of a return task made from its head, records and
// trail, as it is at now, the service clock read for this view:
//
//   - a draft still waiting for approval whose expires_at has passed can
//     no longer be submitted by any answer: the view is the task as it
//     ends (failed, stage failed, error draft_expired, no question; the
//     record changes when recover records that end: View.Unrecorded);
//   - an approval question whose order may no longer be returned now
//     (business.Store.Eligibility, as submit checks it) stays asked, but
//     draft.not_returnable names why and the question's effect says that
//     approving submits nothing: only a cancel can end it as asked;
//   - a finished task's draft no longer expires (draft.expired false).
//
// A running task whose holder is gone is told by v.Holder (addHolder).
// v may be nil. Errors: storage errors of the order's look-up.
func (s *Service) asNow(ctx context.Context, v *View, now time.Time) (*View, error) {
	if v == nil || v.Batch != nil {
		return v, nil
	}
	v.markExpired(now)
	if v.DraftExpired() {
		return expiredNow(v, s.words), nil
	}
	if err := s.markReturnable(ctx, v, now); err != nil {
		return nil, err
	}
	return v, nil
}

// expiredNow is v, a task waiting at an approval whose draft has expired
// (View.DraftExpired), as it ends: failed with draft_expired, stage
// failed, no question pending, its error's hint worded by w, and
// Unrecorded set (recover records the end). It is a copy; v and the stored
// task are not changed.
func expiredNow(v *View, w Wording) *View {
	e := *v
	e.Status, e.Stage, e.Kind = StatusFailed, StageFailed, nil
	e.Next, e.Interrupts, e.Stands = []string{}, []InterruptView{}, nil
	expired := fmt.Sprintf("draft %s expired at %s before it was approved; nothing was submitted", v.Draft.DraftID, v.Draft.ExpiresAt.UTC().Format(time.RFC3339))
	e.Error = &Failure{Code: CodeDraftExpired, Message: expired, Hint: w.Hint(Hint{Do: DoRecover, After: "records this end; a new request needs a new task id"})}
	e.Unrecorded = true
	return &e
}

// markReturnable sets v.Draft.NotReturnable, for a task asking for
// approval of its draft, to the reason code its order may not be returned
// at now (business.Store.Eligibility, the rule submit checks again), and
// words the approval questions' effect by it; a returnable order, or a
// task asking nothing, is left as it is. An order that is gone is
// order_not_found.
func (s *Service) markReturnable(ctx context.Context, v *View, now time.Time) error {
	if v.Draft == nil || v.Kind == nil || *v.Kind != KindApproval || v.done() {
		return nil
	}
	code := CodeOrderNotFound
	o, err := s.desk.Order(ctx, v.Order, v.User)
	switch {
	case errors.Is(err, business.ErrNotFound):
	case err != nil:
		return fmt.Errorf("show %s: %w", v.Task, err)
	default:
		if code, err = s.desk.Eligibility(ctx, o, now); err != nil {
			return fmt.Errorf("show %s: %w", v.Task, err)
		}
	}
	if code == "" {
		return nil
	}
	v.Draft.NotReturnable = &code
	for i, in := range v.Interrupts {
		if in.Kind != KindApproval {
			continue
		}
		var q map[string]any
		if json.Unmarshal(in.Value, &q) != nil {
			continue
		}
		q["effect"] = notReturnableEffect(code, v.Order)
		if b, err := json.Marshal(q); err == nil {
			v.Interrupts[i].Value = b
		}
	}
	return nil
}

// notReturnableEffect is the effect of answering an approval question
// whose order may no longer be returned (code, an eligibility reason).
func notReturnableEffect(code, order string) string {
	msg := fmt.Sprintf("order %s cannot be returned", order)
	if code != CodeOrderNotFound {
		msg = eligibilityMessage(code, order)
	}
	return msg + " now: approve submits nothing and ends the request failed (" + code + "); cancel ends the request without an application"
}
