package cmd

// Empty flag values (docs/cli.md "Conventions"): every string flag of every
// command, given with an empty or blank value, is exit 2 with one line
// naming it, before anything is made; and the docs name every such flag.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// stringFlags is the name of every string flag command c takes, its own
// and the global ones.
func stringFlags(c *cobra.Command) []string {
	var names []string
	seen := map[string]bool{}
	add := func(f *pflag.Flag) {
		switch f.Value.Type() {
		case "string", "stringArray", "stringSlice":
			if !seen[f.Name] {
				seen[f.Name] = true
				names = append(names, f.Name)
			}
		}
	}
	c.LocalFlags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	return names
}

func TestEmptyFlagValuesRefused(t *testing.T) {
	root := (&app{}).newRoot()
	doc, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, bullet, _ := strings.Cut(string(doc), "**Empty flag values**")
	bullet, _, _ = strings.Cut(bullet, "\n- **")
	for _, tc := range missingDirCases {
		c, _, err := root.Find(strings.Fields(tc.path))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		for _, name := range stringFlags(c) {
			if !strings.Contains(bullet, "--"+name) {
				t.Errorf("docs/cli.md \"Empty flag values\" does not name --%s (of %s)", name, tc.path)
			}
			for _, value := range []string{"", " \t"} {
				if value != "" && blankFlagMeanings[name] {
					continue // a blank reason is no reason: asked for
				}
				t.Run(strings.ReplaceAll(tc.path, " ", "_")+"_"+name+map[bool]string{true: "_empty", false: "_blank"}[value == ""], func(t *testing.T) {
					t.Parallel()
					cl := newCLI(t)
					cl.write("rows.csv", batchCSV)
					cl.write("shop.csv", ordersCSV)
					cl.write("decide.csv", "task,action\nr1,approve\n")
					args := append(append([]string{}, tc.args...), "--"+name, value)
					r := cl.run(context.Background(), args...)
					if r.code != ExitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "--"+name) ||
						!strings.HasPrefix(r.stderr, "assistant: ") {
						t.Fatalf("%q: exit %d, stderr %q; want 2 and one line naming --%s", args, r.code, r.stderr, name)
					}
					if _, err := os.Stat(cl.data); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%q made the data dir (%v)", args, err)
					}
				})
			}
		}
	}
}

func TestEmptyFlagValueRefusedBeforeAnyWrite(t *testing.T) {
	// On a data dir that exists: resume --reason "" at a reason question
	// wrote a checkpoint and exited 0 before.
	c := newCLI(t)
	c.mustRun("start", "r2", "A3004")
	before := c.hashes()
	r := c.run(context.Background(), "resume", "r2", "--reason", "")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--reason must not be empty") {
		t.Fatalf("resume --reason \"\": exit %d, stderr %q; want 2", r.code, r.stderr)
	}
	for name, sum := range c.hashes() {
		if before[name] != sum {
			t.Errorf("resume --reason \"\" changed %s", name)
		}
	}
}

func TestOutputFlagHelpNamesEveryFormat(t *testing.T) {
	f := (&app{}).newRoot().PersistentFlags().Lookup("output")
	for _, format := range []string{"json", "text", "csv"} {
		if !strings.Contains(f.Usage, format) {
			t.Errorf("--output's help %q does not name %s (docs/cli.md \"Global flags\")", f.Usage, format)
		}
	}
}
