package e2e

// End-to-end tests of --json FIELDS against the view a command prints.

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONFieldsOfThePrintedView: --json FIELDS is checked against the
// fields of what the command will print: show of a task or of a batch or
// decide run prints the task's view, show --rows the rows report, decide
// the run's view with its rows. A field of the printed view is printed;
// any other is exit 2 naming the fields available, before anything is
// read or written.
func TestJSONFieldsOfThePrintedView(t *testing.T) {
	dir := t.TempDir()
	file := parked(t, dir, 2)
	mustRun(t, dir, "decide", writeFile(t, "d.csv", file), "--id", "d1")
	for _, tc := range []struct {
		name string
		args []string
		want int
		keys string // printed keys, or (exit 2) what stderr says
	}{
		{name: "ShowRowsRows", args: []string{"show", "parked", "--rows", "--json", "rows"}, keys: "schema_version,rows"},
		{name: "ShowRowsOf", args: []string{"show", "parked", "--rows", "--json", "of,task"}, keys: "schema_version,task,of"},
		{name: "ShowDecideRunRows", args: []string{"show", "d1", "--rows", "--json", "rows,status"}, keys: "schema_version,status,rows"},
		{name: "ShowRowsUserRefused", args: []string{"show", "parked", "--rows", "--json", "user,decisions"}, want: 2,
			keys: `--json: unknown field "user"; available: schema_version, task, of, status, rows`},
		{name: "ShowBatchView", args: []string{"show", "parked", "--json", "batch,status"}, keys: "schema_version,status,batch"},
		{name: "ShowBatchRowsRefusedWithoutFlag", args: []string{"show", "parked", "--json", "rows"}, want: 2, keys: `--json: unknown field "rows"; available: schema_version, task, user,`},
		{name: "ShowTask", args: []string{"show", "row-0000", "--json", "user,decisions"}, keys: "schema_version,user,decisions"},
		{name: "DecideRows", args: []string{"decide", writeFile(t, "d2.csv", file), "--id", "d2", "--json", "rows"}, keys: "schema_version,rows"},
		{name: "DecideOfRefused", args: []string{"decide", writeFile(t, "d3.csv", file), "--id", "d3", "--json", "of"}, want: 2,
			keys: `--json: unknown field "of"; available: schema_version, task, user,`},
		{name: "ShowUnknownRefusedBeforeReading", args: []string{"show", "nosuch", "--rows", "--json", "bogus"}, want: 2,
			keys: `--json: unknown field "bogus"; available: schema_version, task, of, status, rows`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks`)
			out, stderr, code := run(t, dir, tc.args...)
			if code != tc.want {
				t.Fatalf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.want, out, stderr)
			}
			if tc.want != 0 {
				if !strings.Contains(stderr, tc.keys) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("%v: stderr %q, want one line with %q", tc.args, stderr, tc.keys)
				}
				if after := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks`); after != before {
					t.Errorf("tasks %s → %s: a refused --json made a task", before, after)
				}
				return
			}
			if got := strings.Join(jsonKeys(t, out), ","); got != tc.keys {
				t.Errorf("%v: keys %s, want %s\n%s", tc.args, got, tc.keys, out)
			}
		})
	}
}

// jsonKeys are the top-level keys of the JSON object out, in order.
func jsonKeys(t *testing.T, out string) []string {
	t.Helper()
	var keys []string
	dec := json.NewDecoder(strings.NewReader(out))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object (%v): %s", err, out)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip any
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
