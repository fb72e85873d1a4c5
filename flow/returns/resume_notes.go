package returns

import (
	"fmt"
	"strings"
)

// This file holds the line an answer or a continued run prints after its
// view (View.Note) when the run did not end as the answer asked: ended
// failed, or waiting again for an approval because its submit no longer
// counted one.

// noteAfter is note, the line plan chose for an answer ("approved as
// approver 2 of 2"), with what the run came to when it ended failed (a
// draft that expired before the last approval, say), or when it waits for
// approval again because an approval no longer counts (waitsAgain): the
// answer was taken, and nothing was submitted.
func noteAfter(note string, v *View) string {
	if note == "" {
		return note
	}
	if v.Status == StatusFailed {
		return fmt.Sprintf("%s, but the task ended %s: nothing was submitted", note, endedAs(v))
	}
	if why := waitsAgain(v); why != "" {
		return fmt.Sprintf("%s, but %s", note, why)
	}
	return note
}

// waitsAgain says why v, a task waiting for approval of its draft, waits
// for another approval after a submit: the approvals of that draft its
// trail marks not counted (business.ApprovalsCount), each with why, and
// that nothing was submitted ("the approval of bob no longer counts
// (revoked at …): nothing was submitted, and the task waits for another
// approval"); "" when none is marked or v asks no approval.
func waitsAgain(v *View) string {
	if v == nil || v.Status != StatusWaiting || v.Draft == nil || v.Kind == nil || *v.Kind != KindApproval {
		return ""
	}
	var why []string
	for _, d := range v.Decisions {
		if d.NotCounted != "" && d.Action == ActionApprove && d.DraftID != nil && *d.DraftID == v.Draft.DraftID {
			why = append(why, fmt.Sprintf("the approval of %s no longer counts (%s)", d.By, d.NotCounted))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; ") + ": nothing was submitted, and the task waits for another approval"
}
