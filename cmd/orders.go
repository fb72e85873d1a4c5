package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

// newCmdOrders is the orders group: import, list and show.
func newCmdOrders(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "orders",
		Short: "Import and list the orders returns are made for",
	}
	c.AddCommand(newCmdOrdersImport(a, ordersImportRun), newCmdOrdersList(a, ordersListRun), newCmdOrdersShow(a, ordersShowRun))
	return c
}

// ordersListOptions are orders list's: it takes no argument and no flag
// of its own.
type ordersListOptions struct{ app *app }

// newCmdOrdersList is the orders list command; runF runs it (ordersListRun,
// or a test's).
func newCmdOrdersList(a *app, runF func(context.Context, *ordersListOptions) error) *cobra.Command {
	opts := &ordersListOptions{app: a}
	return &cobra.Command{
		Use:   "list",
		Short: "List your orders and whether each can be returned now",
		Long: `list prints your orders by order id, each with whether a return can be
started now and, if not, why (not_returnable_because: the code start would
fail with). It changes nothing; a data dir that does not exist is exit 4
and is not made.`,
		Args: exactArgs(0, "orders list takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error { return runF(c.Context(), opts) },
	}
}

// ordersListRun prints the user's orders; a missing data dir is exit 4,
// never made.
func ordersListRun(ctx context.Context, opts *ordersListOptions) error {
	a := opts.app
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	return a.listOrders(func(fn func(returns.OrderLine) error) error {
		return svc.EachOrder(ctx, a.user, fn)
	})
}
