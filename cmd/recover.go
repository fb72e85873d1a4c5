package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

func (a *app) newRecover() *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Resume every running task whose process is gone",
		Long: `recover finds every task that is running but whose lease holder is gone
(its process died on this host, or its lease lapsed) and resumes each
through the same path as "assistant resume TASK". It prints what it
recovered. Tasks of every user are recovered.`,
		Example: `  assistant recover`,
		Args:    exactArgs(0, "recover takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			got := []returns.Recovered{}
			svc, err := a.service(c.Context(), false)
			switch {
			case errors.Is(err, returns.ErrNotFound):
				// No data dir yet (a boot-time recover): nothing to recover.
			case err != nil:
				return ran(err)
			default:
				if got, err = svc.Recover(c.Context()); err != nil {
					return ran(err)
				}
			}
			if a.output == "json" {
				return writeJSON(a.stdout, map[string]any{"recovered": got})
			}
			if len(got) == 0 {
				fmt.Fprintln(a.stdout, "Nothing to recover: no running task has lost its process.")
			}
			for _, r := range got {
				if r.Error != "" {
					fmt.Fprintf(a.stdout, "%s: not recovered: %s\n", r.Task, r.Error)
					continue
				}
				fmt.Fprintf(a.stdout, "%s: %s (stage %s)\n", r.Task, r.Status, orDash(r.Stage))
			}
			return nil
		},
	}
}
