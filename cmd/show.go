package cmd

import (
	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

func (a *app) newShow() *cobra.Command {
	var exitStatus, rows bool
	c := &cobra.Command{
		Use:   "show TASK",
		Short: "Show a task's progress and the question it waits on",
		Long: `show prints where a task stands: its status and stage, the pending
question with the draft it carries, and the result or error once it has
ended. It changes nothing.`,
		Example: `  assistant show return-25
  assistant show return-25 --output json`,
		Args: exactArgs(1, "show needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := returns.ValidTaskID(args[0]); err != nil {
				return usageErr("%v", err)
			}
			svc, err := a.service(c.Context(), false)
			if err != nil {
				return err
			}
			if rows {
				return a.showRows(c.Context(), svc, args[0])
			}
			v, err := svc.Show(c.Context(), args[0], a.user)
			if err != nil {
				return err
			}
			return a.finish(v, exitStatus)
		},
	}
	c.Flags().BoolVar(&rows, "rows", false, "for a batch or a decide run: every row with its line, task, outcome and error code (json, text, or csv with --output csv)")
	c.Flags().BoolVar(&exitStatus, "exit-status", false, "exit by the task's outcome: 5 cancelled, 6 failed, 7 not finished (waiting, or running in a live process), 8 interrupted (docs/cli.md \"Exit codes\")")
	return c
}
