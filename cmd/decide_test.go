package cmd

import (
	"bytes"
	"testing"

	"assistant/flow/returns"
)

// TestWriteDecideJSONStreams checks that decide's streamed report is
// byte for byte what writeJSON prints for the whole DecideView, with and
// without a --json selection, for no rows and for several.
func TestWriteDecideJSONStreams(t *testing.T) {
	dup := 2
	rows := []returns.RowReport{
		{Line: 2, Task: "r-1", Action: "approve", Outcome: "submitted"},
		{Line: 3, Task: "r-2", Action: "cancel", Draft: "d-2", Outcome: "conflict", ErrorCode: "conflict", Error: "task r-2 ended as <done> & \"gone\""},
		{Line: 4, Task: "r-1", Action: "approve", Outcome: "duplicate_task", ErrorCode: "duplicate_task", DuplicateOf: &dup},
	}
	v := &returns.View{Task: "decide-0011223344556677", Status: "done", Stage: "done",
		Batch: &returns.BatchProgress{Of: returns.RowsOfDecisions, Total: 3, Position: 3, Counts: map[string]int{"submitted": 1, "conflict": 1, "duplicate_task": 1}}}
	sels := map[string]*jsonSelection{
		"none":             nil,
		"top-level fields": {fields: []string{"task", "rows"}},
		"without rows":     {fields: []string{"task", "status"}},
		"fields of rows":   {fields: []string{"line", "outcome"}, list: "rows", checked: true},
	}
	for name, sel := range sels {
		for _, n := range []int{0, 1, len(rows)} {
			var want, got bytes.Buffer
			wrap := func(b *bytes.Buffer) *app {
				a := &app{output: "json", stdout: b}
				if sel != nil {
					a.stdout = &selectingWriter{Writer: b, sel: sel}
				}
				return a
			}
			all := append([]returns.RowReport{}, rows[:n]...)
			if err := writeJSON(wrap(&want).stdout, returns.DecideView{View: v, Rows: all}); err != nil {
				t.Fatal(err)
			}
			each := func(fn func(returns.RowReport) error) error {
				for _, r := range rows[:n] {
					if err := fn(r); err != nil {
						return err
					}
				}
				return nil
			}
			if err := wrap(&got).writeDecideJSON(v, each); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s, %d rows: streamed\n%s\nwant\n%s", name, n, got.String(), want.String())
			}
		}
	}
}
