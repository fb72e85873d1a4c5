package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"assistant/flow/variants"
)

// variantsOptions are variants' argument: which experiment.
type variantsOptions struct {
	app     *app
	Variant string
}

// newCmdVariants is the variants command; runF runs it with its options
// (variantsRun, or a test's).
func newCmdVariants(a *app, runF func(context.Context, *variantsOptions) error) *cobra.Command {
	opts := &variantsOptions{app: a}
	return &cobra.Command{
		Use:   "variants static|parallel",
		Short: "Run one of the two engine experiments: a static breakpoint, or two parallel questions",
		Long: `variants runs a small graph on the engine and reports how often each
node ran. It uses the real SQLite checkpointer in a temporary directory
(removed afterwards) and a fresh store and engine for every step, as
separate processes would; --data is not touched.

  static     a one-node graph with a breakpoint before node work: the run
             pauses with next [work] and no question, and continuing takes
             no answer.
  parallel   two parallel branches A and B that each ask a question:
             answered one at a time, by id.`,
		Example: `  assistant variants static
  assistant variants parallel --output json`,
		Args:      exactArgs(1, "variants needs static or parallel"),
		ValidArgs: []string{"static", "parallel"},
		RunE: func(c *cobra.Command, args []string) error {
			opts.Variant = args[0]
			return runF(c.Context(), opts)
		},
	}
}

// variantsRun runs the experiment in a temporary directory and prints
// what it found.
func variantsRun(ctx context.Context, opts *variantsOptions) error {
	a := opts.app
	var run func(context.Context, *variants.Lab) (any, error)
	switch opts.Variant {
	case "static":
		run = func(ctx context.Context, l *variants.Lab) (any, error) { return variants.Static(ctx, l) }
	case "parallel":
		run = func(ctx context.Context, l *variants.Lab) (any, error) { return variants.Parallel(ctx, l) }
	default:
		return usageErr("variants takes static or parallel, not %q", opts.Variant)
	}
	dir, err := os.MkdirTemp("", "assistant-variants-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lab := &variants.Lab{Open: labStore(filepath.Join(dir, "checkpoints.sqlite"))}
	if a.output != "json" {
		lab.Log = a.stdout
	}
	res, err := run(ctx, lab)
	if err != nil {
		return fmt.Errorf("variant %s: %w", opts.Variant, err)
	}
	if a.output == "json" {
		// One compact line, with the schema_version of every command's
		// JSON.
		return writeJSONLine(a.stdout, res)
	}
	return nil
}
