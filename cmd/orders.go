package cmd

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

func (a *app) newOrders() *cobra.Command {
	c := &cobra.Command{
		Use:   "orders",
		Short: "Import and list the orders returns are made for",
	}
	imp := &cobra.Command{
		Use:   "import FILE.csv",
		Short: "Load orders exported from a shop (order_id,user,item,delivered_at,final_sale)",
		Long: `import validates every row first; a file with any bad row is refused whole
(exit 2, the bad lines named by number) and nothing is imported. Rows equal
to an order already stored are counted unchanged, so importing the same
file twice is harmless. delivered_at is empty (not delivered), an RFC 3339
time or a date YYYY-MM-DD (UTC).`,
		Example: `  printf 'order_id,user,item,delivered_at,final_sale\nC1,demo-user,Kettle,2026-11-20,false\n' > shop.csv
  assistant orders import shop.csv`,
		Args: exactArgs(1, "orders import needs FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return usageErr("orders file: %v", err)
			}
			// A bad file is refused before the data dir is opened or made.
			file, err := returns.ParseOrders(f)
			f.Close()
			if err != nil {
				return err
			}
			svc, err := a.service(c.Context(), true)
			if err != nil {
				return ran(err)
			}
			res, err := svc.ImportOrdersFile(c.Context(), file)
			if err != nil {
				return ran(err)
			}
			if a.output == "json" {
				return writeJSON(a.stdout, res)
			}
			_, err = fmt.Fprintf(a.stdout, "Imported %d orders (%d unchanged).\n", res.Imported, res.Unchanged)
			return err
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List your orders and whether each can be returned now",
		Args:  exactArgs(0, "orders list takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			svc, err := a.service(c.Context(), true)
			if err != nil {
				return ran(err)
			}
			orders, err := svc.ListOrders(c.Context(), a.user)
			if err != nil {
				return ran(err)
			}
			if a.output == "json" {
				return writeJSON(a.stdout, map[string]any{"orders": orders})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ORDER\tITEM\tDELIVERED\tFINAL SALE\tRETURNABLE")
			for _, o := range orders {
				ok := "yes"
				if o.Returnable != "" {
					ok = "no: " + o.Returnable
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", o.ID, o.Item, deliveredText(o.DeliveredAt), o.FinalSale, ok)
			}
			return tw.Flush()
		},
	}
	c.AddCommand(imp, list)
	return c
}

// deliveredText renders a delivery date (UTC) for a person, or "not delivered".
func deliveredText(t *time.Time) string {
	if t == nil {
		return "not delivered"
	}
	return t.UTC().Format(time.DateOnly)
}
