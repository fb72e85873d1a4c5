package cmd

import (
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

func (a *app) newStart() *cobra.Command {
	var (
		reason     string
		ttl        time.Duration
		approvals  int
		exitStatus bool
	)
	c := &cobra.Command{
		Use:   "start TASK ORDER",
		Short: "Start a return request for an order and run it to its first question",
		Long: `start looks the order up, asks for a reason if none was given, prepares a
draft valid for --draft-ttl, and parks at the approval question. The
process then exits; answer later with resume. With --approvals 2 it asks
two approval questions at once, and submits only once two different
people approved (one cancel ends it).

Starting the same TASK again with the same input prints its progress;
with other input it is refused (exit 3).`,
		Example: `  assistant start return-25 A3003 --reason "尺寸不合适"
  assistant start return-26 A3004            # asks for a reason
  assistant start return-27 A3003 --reason "broken" --draft-ttl 10m
  assistant --user ci-bot start u1 A3003 --reason "broken" --approvals 2`,
		Args: exactArgs(2, "start needs TASK and ORDER"),
		RunE: func(c *cobra.Command, args []string) error {
			opts := returns.StartOptions{Task: args[0], User: a.user, Order: args[1], Reason: reason, TTL: ttl, Approvals: approvals}
			if approvals < 1 || approvals > returns.MaxApprovals {
				return usageErr("--approvals must be 1 or 2, not %d", approvals)
			}
			if ttl <= 0 {
				return usageErr("--draft-ttl must be positive, not %s", ttl)
			}
			// Validate before opening anything: bad input creates no file.
			if err := returns.ValidateStart(opts); err != nil {
				return err
			}
			// Stores this start would make hold the teaching orders
			// alone: an order not among them is exit 4 with nothing
			// made (a mistyped --data makes no data dir).
			a.beforeCreate = func() error { return returns.OrderInNewStores(a.seed, opts) }
			svc, err := a.service(c.Context(), true)
			if err != nil {
				return err
			}
			v, err := svc.Start(c.Context(), opts)
			if err != nil {
				return err
			}
			return a.finish(v, exitStatus)
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why the order is returned (asked for when missing)")
	c.Flags().Var(newDurationValue(300*time.Second, &ttl), "draft-ttl", "how long the prepared draft stays valid (1s to 168h)")
	c.Flags().IntVar(&approvals, "approvals", 1, "how many different people must approve the draft: 1 or 2")
	c.Flags().BoolVar(&exitStatus, "exit-status", false, "exit by the task's outcome: 5 cancelled, 6 failed, 7 not finished, 8 interrupted (docs/cli.md \"Exit codes\")")
	return c
}

// exactArgs is cobra.ExactArgs with a usage error (exit 2) that says what is missing.
func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("%s (got %d arguments)", msg, len(args))
		}
		return nil
	}
}
