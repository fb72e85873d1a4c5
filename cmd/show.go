package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

// showOptions are show's argument and flags.
type showOptions struct {
	app        *app
	Task       string
	Rows       bool
	ExitStatus bool
}

// newCmdShow is the show command; runF runs it with its options (showRun,
// or a test's).
func newCmdShow(a *app, runF func(context.Context, *showOptions) error) *cobra.Command {
	opts := &showOptions{app: a}
	c := &cobra.Command{
		Use:   "show TASK",
		Short: "Show a task's progress and the question it waits on",
		Long: `show prints where a task stands: its status and stage, the pending
question with the draft it carries, and the result or error once it has
ended. It changes nothing.`,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant show return-25
  assistant show return-25 --output json`,
		Args: exactArgs(1, "show needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Task = args[0]
			return runF(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Rows, "rows", false, "for a batch or a decide run: every row with its line, task, outcome and error code (json, text, or csv with --output csv)")
	c.Flags().BoolVar(&opts.ExitStatus, "exit-status", false, "exit by the task's outcome: 5 cancelled, 6 failed, 7 not finished (waiting, or running in a live process), 8 interrupted (docs/cli.md \"Exit codes\")")
	return c
}

// showRun prints the task, or with Rows the rows of a batch or a decide
// run.
func showRun(ctx context.Context, opts *showOptions) error {
	a := opts.app
	svc, err := a.serviceOf(ctx, opts.Task)
	if err != nil {
		return err
	}
	if opts.Rows {
		return a.showRows(ctx, svc, opts.Task)
	}
	v, err := svc.Show(ctx, opts.Task, a.user)
	if err != nil {
		return err
	}
	return a.finish(v, opts.ExitStatus)
}

// serviceOf checks task, a task id a command names (a usage error), then
// opens the stores, making none.
func (a *app) serviceOf(ctx context.Context, task string) (*returns.Service, error) {
	if err := returns.ValidTaskID(task); err != nil {
		return nil, usageErr("%v", err)
	}
	return a.service(ctx, returns.OpenExisting)
}
