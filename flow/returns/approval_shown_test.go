package returns

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestApprovalAsAnswered checks that the question an answer is built
// against is the question as shown (approvalView) decoded, for payloads
// of either state format, a question of a second approver, and one whose
// expiry JSON cannot encode: each decodes to what approvalView's JSON
// decodes to, and a payload that does not decode fails as that does.
func TestApprovalAsAnswered(t *testing.T) {
	expires := time.Date(2026, 12, 3, 7, 0, 0, 123456789, time.FixedZone("CET", 3600))
	st := State{Order: "A3001", Reason: "too small", Draft: &DraftRef{ID: "d_1", ExpiresAt: expires, Version: 2}}
	full, _ := json.Marshal(ApprovalQuestion{Kind: KindApproval, DraftID: "d_0", OrderID: "A3000", Reason: "old", ExpiresAt: expires, Effect: "e", Version: 1})
	asked, _ := json.Marshal(approvalAsked{Kind: KindApproval})
	second, _ := json.Marshal(approvalAsked{Kind: KindApproval, Approver: 2, Approvals: 2, Problem: "refused once"})
	far := st
	far.Draft = &DraftRef{ID: "d_2", ExpiresAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, c := range []struct {
		name   string
		stored string
		st     State
	}{
		{"format 1, the whole question", string(full), st},
		{"format 2, asked only", string(asked), st},
		{"a second approver", string(second), st},
		{"no draft in the state", string(asked), State{Order: "A3001"}},
		{"an expiry past year 9999", string(asked), far},
	} {
		var want ApprovalQuestion
		wantErr := json.Unmarshal(approvalView(json.RawMessage(c.stored), c.st), &want)
		got, err := approvalAsAnswered(json.RawMessage(c.stored), c.st)
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: approvalAsAnswered = %+v, %v; the shown question decodes to %+v, %v", c.name, got, err, want, wantErr)
		}
	}
	if _, err := approvalAsAnswered(json.RawMessage(`{"kind":`), st); err == nil {
		t.Error("approvalAsAnswered of a payload that does not decode: no error")
	}
}
