package cmd

import (
	"fmt"

	"context"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

const startLong = `start looks the order up, asks for a reason if none was given, prepares a
draft valid for --draft-ttl, and parks at the approval question. The
process then exits; answer later with resume. With --approvals 2 it asks
two approval questions at once, and submits only once two different
people other than its requester (two of the owner's approvers) approved
(one cancel ends it; the requester may cancel, edit or revise).

Starting the same TASK again with the same input prints its progress;
with other input it is refused (exit 3).`

const startExample = `  assistant start return-25 A3003 --reason "尺寸不合适"
  assistant start return-26 A3004            # asks for a reason
  assistant start return-27 A3003 --reason "broken" --draft-ttl 10m
  assistant start u1 A3003 --reason "broken" --approvals 2   # two approvers other than you`

// startOptions are start's arguments and flags.
type startOptions struct {
	app *app
	returns.StartOptions
	ExitStatus bool
}

// newCmdStart is the start command; runF runs it with its options
// (startRun, or a test's).
func newCmdStart(a *app, runF func(context.Context, *startOptions) error) *cobra.Command {
	opts := &startOptions{app: a}
	c := &cobra.Command{
		Use:     "start TASK ORDER",
		Short:   "Start a return request for an order and run it to its first question",
		Long:    startLong,
		Example: startExample,
		Args:    exactArgs(2, "start needs TASK and ORDER"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Task, opts.Order, opts.User = args[0], args[1], a.user
			return runF(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Reason, "reason", "", "why the order is returned (asked for when missing)")
	c.Flags().Var(newDurationValue(300*time.Second, &opts.TTL), "draft-ttl", "how long the prepared draft stays valid (1s to 168h)")
	c.Flags().IntVar(&opts.Approvals, "approvals", 1, "how many different people must approve the draft: 1, or 2 other than the requester")
	c.Flags().BoolVar(&opts.ExitStatus, "exit-status", false, exitStatusUsage)
	return c
}

// exitStatusUsage is the help of --exit-status of start and resume.
const exitStatusUsage = "exit by the task's outcome: 5 cancelled, 6 failed, 7 not finished, 8 interrupted (docs/cli.md \"Exit codes\")"

// startRun checks opts before anything is opened (bad input creates no
// file), starts the task and prints it.
func startRun(ctx context.Context, opts *startOptions) error {
	a := opts.app
	if opts.Approvals < 1 || opts.Approvals > returns.MaxApprovals {
		return usageErr("--approvals must be 1 or 2, not %d", opts.Approvals)
	}
	if opts.TTL <= 0 {
		return usageErr("--draft-ttl must be positive, not %s", opts.TTL)
	}
	if err := returns.ValidateStart(opts.StartOptions); err != nil {
		return err
	}
	// Stores this start would make hold the teaching orders alone: an
	// order not among them is exit 4 with nothing made (a mistyped --data
	// makes no data dir).
	a.beforeCreate = func() error { return returns.OrderInNewStores(a.seed, opts.StartOptions) }
	svc, err := a.oneRunService(ctx, returns.CreateIfMissing)
	if err != nil {
		return err
	}
	v, err := svc.Start(ctx, opts.StartOptions)
	if err != nil {
		return err
	}
	return a.finish(v, opts.ExitStatus)
}

// exactArgs is cobra.ExactArgs with a usage error (exit 2) that says what is missing.
func exactArgs(n int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("%s (got %s)", msg, argumentCount(len(args)))
		}
		return nil
	}
}

// argumentCount is n arguments in words: "1 argument", "0 arguments".
func argumentCount(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}
