package cmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"assistant/business"
	"assistant/flow/returns"
)

// importFlags are the flags of `orders import`.
type importFlags struct {
	dryRun   bool
	timezone string
	operator bool
}

func (a *app) newOrders() *cobra.Command {
	c := &cobra.Command{
		Use:   "orders",
		Short: "Import and list the orders returns are made for",
	}
	var fl importFlags
	imp := &cobra.Command{
		Use:   "import FILE.csv",
		Short: "Load or update orders from a shop's export (CSV: order_id,user,item,delivered_at,final_sale, by name)",
		Long: `import reads a shop's orders export: columns found by name (Name, Order ID,
Customer, Fulfilled at, … are understood; other columns are ignored), ',' ';'
or tab, UTF-8 or UTF-16. Every row is checked before the data dir is opened;
a file with any bad row is refused whole (exit 2, the bad lines named).

An import is an upsert: new orders are added; a stored order's item,
delivery and final sale flag are updated (tasks in flight for it are
reported); an equal one is unchanged; a teaching order no task uses is
replaced (one a task uses is refused, exit 3). An order is its owner's
and its id: without --operator an import reads and writes --user's
orders only (rows of other users are refused by line, exit 2; a change
to the shop's order of --user is refused, exit 3). --operator imports the shop's orders, of any
user; the shop's order ids are unique, so one that would go to another
customer refuses the whole file (exit 3). Dates and times without a zone
need --timezone. All of it is one transaction; --dry-run writes nothing
and says what would change. See docs/orders.md.`,
		Example: `  printf 'order_id,user,item,delivered_at,final_sale\nC1,demo-user,Kettle,2026-11-20T10:00:00Z,false\n' > shop.csv
  assistant orders import shop.csv
  assistant orders import --operator --timezone Europe/Berlin --dry-run shopify-export.csv`,
		Args: exactArgs(1, "orders import needs FILE"),
		RunE: func(c *cobra.Command, args []string) error { return a.importOrders(c, args[0], fl) },
	}
	imp.Flags().BoolVar(&fl.dryRun, "dry-run", false, "say what the import would change and write nothing")
	imp.Flags().StringVar(&fl.timezone, "timezone", "", "IANA time zone (Europe/Berlin) of delivery dates and times written without one; without it such a value is refused")
	imp.Flags().BoolVar(&fl.operator, "operator", false, "act as the shop's operator: import the rows of every user, not only --user's (a role, not authentication)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List your orders and whether each can be returned now",
		Args:  exactArgs(0, "orders list takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			// Read-only: a missing data dir is exit 4, never made.
			svc, err := a.service(c.Context(), false)
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
			return renderOrders(a.stdout, orders)
		},
	}
	c.AddCommand(imp, list)
	return c
}

// importOrders runs `orders import FILE`: the file is checked first, then
// the data dir opened (made, unless a dry run) and the orders written.
func (a *app) importOrders(c *cobra.Command, path string, fl importFlags) error {
	opts := business.ParseOptions{User: a.user, Operator: fl.operator}
	if fl.timezone != "" {
		loc, err := time.LoadLocation(fl.timezone)
		if err != nil || fl.timezone == "Local" {
			return usageErr("--timezone %q is not an IANA time zone name (such as Europe/Berlin or UTC)", fl.timezone)
		}
		opts.Location = loc
	}
	in, err := openInput(c.Context(), "orders file", path)
	if err != nil {
		return err
	}
	defer in.Close()
	// A bad file is refused before the data dir is opened or made.
	file, err := returns.ParseOrders(c.Context(), interruptible(c.Context(), in), opts)
	if err != nil {
		return tempFailure(err) // a failing $TMPDIR is exit 1, not bad input
	}
	defer file.Close()
	svc, err := a.service(c.Context(), !fl.dryRun)
	if err != nil {
		return ran(err)
	}
	res, err := svc.ImportOrdersFile(c.Context(), file, business.ImportOptions{DryRun: fl.dryRun})
	if err != nil {
		return ran(err)
	}
	if !fl.dryRun {
		// A signal from here on came after the commit: the report
		// holds, and the signal's note says so (Run).
		a.done = "the import was committed: every order of the report is stored; nothing to run again"
	}
	if a.output == "json" {
		return writeJSON(a.stdout, res)
	}
	return renderImport(a.stdout, path, res, fl.operator)
}

// renderImport prints an import report for a person (docs/orders.md
// "Report"); every text from the file goes through termSafe. operator
// says whose orders replaced teaching orders: the shop's (--operator) or
// the user's own.
func renderImport(w io.Writer, path string, res business.ImportResult, operator bool) error {
	verb := "Imported"
	if res.DryRun {
		verb = "Dry run, nothing written; would import"
	}
	fmt.Fprintf(w, "%s %s: %d rows, %d orders: %d added, %d updated, %d unchanged, %d refused.\n",
		verb, termSafe(path), res.Rows, res.Orders, res.Added, res.Updated, res.Unchanged, res.Refused)
	if res.TeachingReplaced > 0 {
		whose := "your own"
		if operator {
			whose = "the shop's"
		}
		fmt.Fprintf(w, "%d teaching orders replaced by %s.\n", res.TeachingReplaced, whose)
	}
	if res.InFlight > 0 {
		fmt.Fprintf(w, "%d updated orders have tasks in flight; their next submit checks the order again.\n", res.InFlight)
	}
	if len(res.Changes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tORDER\tCHANGE\tTASKS IN FLIGHT\tRETURNABLE NOW")
	for _, ch := range res.Changes {
		what := ch.Action
		if len(ch.Fields) > 0 {
			what += ": " + strings.Join(ch.Fields, ", ")
		}
		tasks, now := "-", "-"
		if len(ch.Tasks) > 0 {
			safe := make([]string, len(ch.Tasks))
			for i, t := range ch.Tasks {
				safe[i] = termSafe(t)
			}
			tasks = strings.Join(safe, ", ")
		}
		if ch.Action == business.ActionUpdated || ch.Action == business.ActionReplacedTeaching {
			now = "yes"
			if ch.NotReturnableNow != "" {
				now = "no: " + ch.NotReturnableNow
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", ch.Line, termSafe(ch.OrderID), what, tasks, now)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.MoreChanges > 0 {
		fmt.Fprintf(w, "… and %d more.\n", res.MoreChanges)
	}
	return nil
}

// renderOrders prints `orders list` for a person; ids and items go
// through termSafe.
func renderOrders(w io.Writer, orders []returns.OrderLine) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORDER\tITEM\tDELIVERED\tFINAL SALE\tRETURNABLE")
	for _, o := range orders {
		ok := "yes"
		if o.Returnable != "" {
			ok = "no: " + o.Returnable
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", termSafe(o.ID), termSafe(o.Item), deliveredText(o.DeliveredAt), o.FinalSale, ok)
	}
	return tw.Flush()
}

// deliveredText renders a delivery date (UTC) for a person, or "not delivered".
func deliveredText(t *time.Time) string {
	if t == nil {
		return "not delivered"
	}
	return t.UTC().Format(time.DateOnly)
}
