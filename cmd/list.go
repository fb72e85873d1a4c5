package cmd

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

func (a *app) newList() *cobra.Command {
	var status string
	c := &cobra.Command{
		Use:   "list [--status S]",
		Short: "List your tasks with their run status and stage",
		Example: `  assistant list
  assistant list --status waiting`,
		Args: exactArgs(0, "list takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			var tasks []returns.TaskSummary
			svc, err := a.service(c.Context(), false)
			switch {
			case errors.Is(err, returns.ErrNotFound):
				// No data dir yet: no task, and nothing is created.
				if err := returns.CheckStatus(status); err != nil {
					return err
				}
				tasks = []returns.TaskSummary{}
			case err != nil:
				return ran(err)
			default:
				if tasks, err = svc.List(c.Context(), a.user, status); err != nil {
					return ran(err)
				}
			}
			if a.output == "json" {
				return writeJSON(a.stdout, map[string]any{"tasks": tasks})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TASK\tORDER\tSTATUS\tSTAGE\tUPDATED (UTC)")
			for _, t := range tasks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Task, t.Order, t.Status, orDash(t.Stage), t.UpdatedAt.UTC().Format("2006-01-02 15:04:05"))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&status, "status", "", "only tasks with this run status (running, waiting, interrupted, done, cancelled, failed)")
	return c
}
