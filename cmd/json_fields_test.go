package cmd

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestJSONFieldsAreThePrintedOnes: for each command and flag variant that
// prints one object, --json accepts every top-level field the command
// prints without it and prints exactly those (jsonShapes is the shape of
// what is printed, flags included: show --rows prints a rows report), and
// refuses a field that it does not print (exit 2, the available ones
// named, nothing changed).
func TestJSONFieldsAreThePrintedOnes(t *testing.T) {
	c := newCLI(t)
	rows := c.write("rows.csv", "task,order,reason\nb-r1,A3001,size\nb-r2,A3007,size\n")
	c.mustRun(startR1...)
	c.mustRun(startR2...)
	c.mustRun("batch", "b1", rows)
	decisions := c.write("decide.csv", "task,action\nb-r1,approve\nr1,cancel\n")
	c.mustRun("decide", decisions, "--id", "d1")
	for _, tc := range []struct {
		name    string
		args    []string
		foreign string // a field of another view of the same command
	}{
		{name: "ShowTask", args: []string{"show", "r1"}, foreign: "of"},
		{name: "ShowBatch", args: []string{"show", "b1"}, foreign: "rows"},
		{name: "ShowBatchRows", args: []string{"show", "b1", "--rows"}, foreign: "user"},
		{name: "ShowDecideRun", args: []string{"show", "d1"}, foreign: "rows"},
		{name: "ShowDecideRunRows", args: []string{"show", "d1", "--rows"}, foreign: "decisions"},
		{name: "Decide", args: []string{"decide", decisions, "--id", "d1"}, foreign: "of"},
		{name: "Batch", args: []string{"batch", "b1", rows}, foreign: "rows"},
		{name: "History", args: []string{"history", "r1"}, foreign: "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// c fails the parent test: here each run is checked by t.
			all := c.run(context.Background(), tc.args...)
			if all.code != ExitOK {
				t.Fatalf("%v: exit %d, %s", tc.args, all.code, all.stderr)
			}
			keys := keysOf(t, all.stdout)
			sel := c.run(context.Background(), slices.Concat(tc.args, []string{"--json", strings.Join(keys, ",")})...)
			if sel.code != ExitOK {
				t.Fatalf("%v --json %s (every field it prints): exit %d, %s", tc.args, strings.Join(keys, ","), sel.code, sel.stderr)
			}
			if got := keysOf(t, sel.stdout); !slices.Equal(got, keys) {
				t.Errorf("%v --json (all): keys %v, want %v", tc.args, got, keys)
			}
			if slices.Contains(keys, tc.foreign) {
				t.Fatalf("%v prints %q; the case needs a field it does not print", tc.args, tc.foreign)
			}
			before := c.hashes()
			r := c.run(context.Background(), slices.Concat(tc.args, []string{"--json", tc.foreign})...)
			want := `--json: unknown field "` + tc.foreign + `"; available: ` + strings.Join(keys, ", ")
			if r.code != ExitUsage || !strings.Contains(r.stderr, want) {
				t.Errorf("%v --json %s: exit %d, stderr %q; want %d and %q", tc.args, tc.foreign, r.code, r.stderr, ExitUsage, want)
			}
			if after := c.hashes(); !maps.Equal(before, after) {
				t.Errorf("a refused --json changed the data dir")
			}
		})
	}
}
