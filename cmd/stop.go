package cmd

import (
	"time"

	"github.com/spf13/cobra"
)

func (a *app) newStop() *cobra.Command {
	var wait time.Duration
	c := &cobra.Command{
		Use:   "stop TASK",
		Short: "Stop a running task (operator stop); resume continues it later",
		Long: `stop moves a running task to interrupted. The process driving it notices
within a second, cancels the node that runs, records that timeline step as
failed, and exits with status interrupted. The last checkpoint stays the
resume point: "assistant resume TASK" continues from there.

A task that is not running (waiting, finished) is a conflict (exit 3): a
task that finished first keeps its finished status.`,
		Example: `  assistant stop batch-7
  assistant resume batch-7`,
		Args: exactArgs(1, "stop needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			if wait < 0 {
				return usageErr("--wait must not be negative, not %s", wait)
			}
			svc, err := a.service(c.Context(), false)
			if err != nil {
				return err
			}
			v, err := svc.Stop(c.Context(), args[0], a.user, wait)
			if err != nil {
				return err
			}
			return a.render(v)
		},
	}
	c.Flags().Var(newDurationValue(5*time.Second, &wait), "wait", "how long to wait for the driving process to let go")
	return c
}
