package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

const pruneLong = `prune removes the older checkpoints of every finished task (status done,
cancelled or failed, of any user) whose record was last updated more than
DURATION ago. Each task keeps its newest N checkpoints (default 1: the head,
which show and resume read). A waiting, running or interrupted task is never
touched; a task whose draft expired is pruned once "assistant recover" has
ended it failed. It reports the rows removed and the bytes of their stored
JSON; the file keeps its size (SQLite reuses the freed pages).

--dry-run prints what would be removed and changes no file.

Exit 2 without --finished-before, or with a --keep below 1, nothing
changed; exit 3 when another process holds checkpoints.sqlite's write
lock past the busy timeout, nothing removed.`

// pruneOptions are prune's flags; FinishedBeforeGiven says whether
// --finished-before was given.
type pruneOptions struct {
	app *app
	returns.PruneOptions
	FinishedBeforeGiven bool
}

// newCmdPrune is the prune command; runF runs it with its options
// (pruneRun, or a test's).
func newCmdPrune(a *app, runF func(context.Context, *pruneOptions) error) *cobra.Command {
	opts := &pruneOptions{app: a}
	c := &cobra.Command{
		Use:   "prune --finished-before DURATION [--keep N] [--dry-run]",
		Short: "Remove old checkpoints of finished tasks, keeping each task's newest",
		Long:  pruneLong,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant resume return-25 --action approve
  assistant prune --finished-before 720h
  assistant prune --finished-before 30d --dry-run
  assistant prune --finished-before 24h --keep 3`,
		Args: exactArgs(0, "prune takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.FinishedBeforeGiven = c.Flags().Changed("finished-before")
			return runF(c.Context(), opts)
		},
	}
	c.Flags().Var(newDurationValue(0, &opts.FinishedBefore), "finished-before", "only tasks finished at least this long ago (e.g. 720h)")
	c.Flags().IntVar(&opts.Keep, "keep", returns.DefaultPruneKeep, "checkpoints each task keeps, the head included")
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would be removed and change no file")
	return c
}

// pruneRun prunes and prints the report.
func pruneRun(ctx context.Context, opts *pruneOptions) error {
	a := opts.app
	switch {
	case !opts.FinishedBeforeGiven:
		return usageErr("prune needs --finished-before DURATION (e.g. 720h)")
	case opts.FinishedBefore <= 0:
		return usageErr("--finished-before must be positive, not %s", opts.FinishedBefore)
	case opts.Keep < 1:
		return usageErr("--keep must be at least 1, not %d", opts.Keep)
	}
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	r, err := svc.Prune(ctx, opts.PruneOptions)
	if err != nil {
		return err
	}
	return a.renderPrune(r)
}

// renderPrune prints a prune report as JSON, or as text for a person.
func (a *app) renderPrune(r *returns.PruneReport) error {
	if a.output == "json" {
		return writeJSON(a.stdout, r)
	}
	for _, t := range r.Tasks {
		fmt.Fprintf(a.stdout, "%s (%s): %d rows, %d bytes\n", termSafe(t.Task), t.Status, t.Rows, t.Bytes)
	}
	var err error
	if r.DryRun {
		_, err = fmt.Fprintf(a.stdout, "Dry run, nothing removed: pruning would remove from %d finished tasks %d rows, %d bytes\n", len(r.Tasks), r.Rows, r.Bytes)
	} else {
		_, err = fmt.Fprintf(a.stdout, "Pruned %d finished tasks: %d rows, %d bytes freed\n", len(r.Tasks), r.Rows, r.Bytes)
	}
	return err
}
