package returns_test

import (
	"strings"
	"testing"

	"assistant/flow/returns"
)

// TestDecideRows checks what decide rows come to in process: a row that
// names the user's own batch is invalid_input with resume's message (not
// not_found), and a decide file given again after its run finished is
// told apart (RanBefore) with its refused rows counted.
func TestDecideRows(t *testing.T) {
	for name, setup := range map[string]func(testing.TB) (*returns.Service, *bundle){
		"SQLiteInChunks": setupSQLite,
		"MemoryRowByRow": setup,
	} {
		t.Run(name, func(t *testing.T) {
			svc, b := setup(t)
			startBatch(t, svc, b) // batch "bt"; b1 waits for approval
			file := "task,action\nbt,approve\nb1,approve\nnobody,cancel\n"
			rows, fp, err := returns.ParseDecisions(strings.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			if line, err := svc.RanBefore(b.ctx, "", user, fp); err != nil || line != "" {
				t.Fatalf("RanBefore of a new run = %q, %v; want nothing", line, err)
			}
			v, err := svc.StartDecide(b.ctx, returns.DecideOptions{User: user, Rows: rows, Fingerprint: fp})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := svc.ShowRows(b.ctx, v.Task, user)
			if err != nil {
				t.Fatal(err)
			}
			// A row's error is its message and its hint, worded by the
			// Service's Wording (PlainWords here), joined by Line.
			resumeBt := returns.PlainWords.Hint(returns.Hint{Before: "run", Do: returns.DoResume, Task: "bt", After: "to continue it"})
			want := []struct{ outcome, msg string }{
				{returns.CodeInvalidInput, returns.Line("bt is a batch; it asks no question", resumeBt)},
				{returns.StageSubmitted, ""},
				{returns.CodeNotFound, "not found"},
			}
			for i, w := range want {
				r := rep.Rows[i]
				if r.Outcome != w.outcome || !strings.Contains(r.Error, w.msg) {
					t.Errorf("row %d (%s): outcome %q error %q; want %q with %q", i+1, r.Task, r.Outcome, r.Error, w.outcome, w.msg)
				}
			}
			line, err := svc.RanBefore(b.ctx, "", user, fp)
			again := returns.PlainWords.Hint(returns.Hint{Before: "pass", With: []returns.InputValue{{Input: returns.InputID, Value: "NEW"}}, After: "to run the file again"})
			if err != nil || !strings.HasPrefix(line, "decide run "+v.Task+" already ran on ") ||
				!strings.HasSuffix(line, returns.Line(": 2 rows refused", again)) {
				t.Fatalf("RanBefore of the finished run = %q, %v", line, err)
			}
			if line, _ := svc.RanBefore(b.ctx, "", otherUser, fp); line != "" {
				t.Fatalf("RanBefore of another user's file = %q, want nothing", line)
			}
		})
	}
}
