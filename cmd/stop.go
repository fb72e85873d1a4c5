package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

// stopOptions are stop's argument and flag.
type stopOptions struct {
	app  *app
	Task string
	Wait time.Duration
}

// newCmdStop is the stop command; runF runs it with its options (stopRun,
// or a test's).
func newCmdStop(a *app, runF func(context.Context, *stopOptions) error) *cobra.Command {
	opts := &stopOptions{app: a}
	c := &cobra.Command{
		Use:   "stop TASK",
		Short: "Stop a running task (operator stop); resume continues it later",
		Long: `stop moves a running task to interrupted and, in the same commit, records
the timeline step it cuts short as failed. The process driving it notices
within a second, cancels the node that runs, and exits with status
interrupted. The last checkpoint stays the resume point: "assistant resume
TASK" continues from there. With --wait 0 stop returns at once: the task
reads interrupted, its process still holding it until it lets go.

A task that is not running (waiting, finished) is a conflict (exit 3): a
task that finished first keeps its finished status. So is a task whose
application was made, or whose cancel was recorded, before the stop: the
stop is too late and changes nothing.`,
		Example: `  printf 'task,order,reason\nb-7-1,A3001,too small\n' > rows.csv
  assistant batch batch-7 rows.csv
  assistant stop batch-7      # a batch that ended is not stopped: exit 3
  assistant resume batch-7`,
		Args: exactArgs(1, "stop needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Task = args[0]
			return runF(c.Context(), opts)
		},
	}
	c.Flags().Var(newDurationValue(5*time.Second, &opts.Wait), "wait", "how long to wait for the driving process to let go")
	return c
}

// stopRun stops the task and prints it.
func stopRun(ctx context.Context, opts *stopOptions) error {
	a := opts.app
	if opts.Wait < 0 {
		return usageErr("--wait must not be negative, not %s", opts.Wait)
	}
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	v, err := svc.Stop(ctx, opts.Task, a.user, opts.Wait)
	if err != nil {
		return err
	}
	return a.render(v)
}
