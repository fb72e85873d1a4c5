package cmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

// ordersShowOptions are orders show's argument.
type ordersShowOptions struct {
	app   *app
	Order string
}

// newCmdOrdersShow is the orders show command; runF runs it
// (ordersShowRun, or a test's).
func newCmdOrdersShow(a *app, runF func(context.Context, *ordersShowOptions) error) *cobra.Command {
	opts := &ordersShowOptions{app: a}
	return &cobra.Command{
		Use:   "show ORDER",
		Short: "Show an order, its tasks and the applications made for it",
		Long: `show prints one of your orders: whether a return can be started now (and
why not), your tasks of it with the status show gives each, and every
application made for it, with its draft and review status. An application
is made at most once per draft, so a task approved twice shows one. It
changes nothing; an order of another user reads as unknown (exit 4).`,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant resume return-25 --action approve
  assistant orders show A3003
  assistant orders show A3003 --json applications`,
		Args: exactArgs(1, "orders show needs ORDER"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Order = args[0]
			return runF(c.Context(), opts)
		},
	}
}

// ordersShowRun prints the order; a missing data dir is exit 4, never
// made.
func ordersShowRun(ctx context.Context, opts *ordersShowOptions) error {
	a := opts.app
	if err := returns.ValidOrderID(opts.Order); err != nil {
		return usageErr("%v", err)
	}
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	d, err := svc.ShowOrder(ctx, opts.Order, a.user)
	if err != nil {
		return err
	}
	if a.output == "json" {
		return writeJSON(a.stdout, d)
	}
	return renderOrderDetail(a.stdout, d)
}

// renderOrderDetail prints an order for a person (docs/orders.md "One
// order"): its facts, then its tasks and its applications as tables;
// every text from the stores goes through termSafe.
func renderOrderDetail(w io.Writer, d *returns.OrderDetail) error {
	now := "yes"
	if !d.Returnable {
		now = "no: " + d.NotReturnable
	}
	fmt.Fprintf(w, "Order:      %s\nItem:       %s\nDelivered:  %s\nFinal sale: %v\nReturnable: %s\n",
		termSafe(d.ID), termSafe(d.Item), deliveredAt(d.DeliveredAt), d.FinalSale, now)
	fmt.Fprintln(w)
	if len(d.Tasks) == 0 {
		fmt.Fprintln(w, "Tasks: none")
	} else {
		tw := termtext.NewTable(w)
		fmt.Fprintln(tw, "TASK\tSTATUS\tSTAGE")
		for _, t := range d.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", termSafe(t.Task), t.Status, t.Stage)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	if len(d.Applications) == 0 {
		_, err := fmt.Fprintln(w, "Applications: none")
		return err
	}
	tw := termtext.NewTable(w)
	fmt.Fprintln(tw, "APPLICATION\tTASK\tDRAFT\tVERSION\tCREATED\tREVIEW")
	for _, ap := range d.Applications {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", termSafe(ap.ID), termSafe(ap.TaskID), termSafe(ap.DraftID),
			ap.DraftVersion, ap.CreatedAt.UTC().Format(time.DateTime), ap.ReviewStatus)
	}
	return tw.Flush()
}
