package cmd

import (
	"encoding/csv"
	"strings"
	"testing"
)

func TestSpreadsheetSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"t1", "t1"},
		{"=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"},
		{"+1", "'+1"},
		{"-1", "'-1"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"\rx", "'\rx"},
		{"a=b", "a=b"},
		{"'=x", "'=x"},
	} {
		if got := spreadsheetSafe(tc.in); got != tc.want {
			t.Errorf("spreadsheetSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// show --rows --output csv writes no field a spreadsheet runs as a
// formula, while list --output csv gives decide
// the task ids exactly: the list | decide pipeline still decides a task
// whose id starts with '='.
func TestCSVFormulaFields(t *testing.T) {
	c := newCLI(t)
	c.write("rows.csv", "task,order,reason\n=1+1,A3001,size\n+x,A3002,size\n@y,=NOPE,size\n")
	c.mustRun("batch", "b1", "$ROOT/rows.csv")
	out := c.mustRun("show", "b1", "--rows", "--output", "csv").stdout
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("rows CSV: %v\n%s", err, out)
	}
	want := map[string]bool{"'=1+1": true, "'+x": true, "'@y": true, "'=NOPE": true}
	for _, rec := range recs {
		for _, f := range rec {
			if f != "" && strings.ContainsRune("=+-@\t\r", rune(f[0])) {
				t.Errorf("field %q would run as a formula:\n%s", f, out)
			}
			delete(want, f)
		}
	}
	if len(want) > 0 {
		t.Errorf("fields %v missing from the rows CSV:\n%s", want, out)
	}

	list := c.mustRun("list", "--status", "waiting", "--output", "csv").stdout
	if !strings.Contains(list, "\n=1+1,,d_") {
		t.Fatalf("list CSV does not carry the task id =1+1 as it is:\n%s", list)
	}
	c.write("decide.csv", strings.ReplaceAll(list, ",,", ",approve,"))
	c.mustRun("decide", "$ROOT/decide.csv")
	if v := c.mustRun("show", "=1+1").stdout; !strings.Contains(v, `"status": "done"`) {
		t.Errorf("=1+1 after list | decide:\n%s", v)
	}
}
