package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"assistant/business"
	"assistant/flow/returns"
	"assistant/internal/termtext"
)

const ordersImportLong = `import reads a shop's orders export: columns found by name (Name, Order ID,
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
need --timezone. An export with other column names, without a column, or
with dates of its own format is read with --column, --default and
--date-format; a refused file names every problem it has, by kind. All
of it is one transaction; --dry-run writes nothing and says what would
change. See docs/orders.md.`

const ordersImportExample = `  printf 'order_id,user,item,delivered_at,final_sale\nC1,demo-user,Kettle,2026-11-20T10:00:00Z,false\n' > shop.csv
  assistant orders import shop.csv
  assistant orders import --operator --timezone Europe/Berlin --dry-run shop.csv
  printf 'order_id,user,item,delivered_at\nC2,demo-user,Mug,2026-11-21T09:00:00Z\n' > export.csv
  assistant orders import --default final_sale=false export.csv          # the export has no final_sale column`

// ordersImportOptions are the argument and the flags of orders import.
type ordersImportOptions struct {
	app      *app
	File     string
	DryRun   bool
	Timezone string
	Operator bool
	// Columns are --column FIELD=HEADER, Defaults --default FIELD=VALUE,
	// DateFormat --date-format (business.NewExportMapping reads them).
	Columns    []string
	Defaults   []string
	DateFormat string
}

// newCmdOrdersImport is the orders import command; runF runs it with its
// options (ordersImportRun, or a test's).
func newCmdOrdersImport(a *app, runF func(context.Context, *ordersImportOptions) error) *cobra.Command {
	opts := &ordersImportOptions{app: a}
	c := &cobra.Command{
		Use:     "import FILE.csv",
		Short:   "Load or update orders from a shop's export (CSV: order_id,user,item,delivered_at,final_sale, by name)",
		Long:    ordersImportLong,
		Example: ordersImportExample,
		Args:    exactArgs(1, "orders import needs FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File = args[0]
			return runF(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what the import would change and write nothing")
	c.Flags().StringVar(&opts.Timezone, "timezone", "", "IANA time zone (Europe/Berlin) of delivery dates and times written without one; without it such a value is refused")
	c.Flags().BoolVar(&opts.Operator, "operator", false, "act as the shop's operator: import the rows of every user, not only --user's (a role, not authentication)")
	c.Flags().StringArrayVar(&opts.Columns, "column", nil, "FIELD=HEADER: the export's column HEADER holds FIELD (order_id, user, item, delivered_at, final_sale); repeatable")
	c.Flags().StringArrayVar(&opts.Defaults, "default", nil, "FIELD=VALUE: every row's value of a FIELD the export has no column for (final_sale=false); repeatable")
	c.Flags().StringVar(&opts.DateFormat, "date-format", "", "the format of delivery dates, such as DD.MM.YYYY or MM/DD/YYYY hh:mm A (letters: docs/orders.md \"Date formats\")")
	return c
}

// ordersImportRun runs orders import: the file is checked first, then the
// data dir opened (made, unless a dry run) and the orders written.
func ordersImportRun(ctx context.Context, o *ordersImportOptions) error {
	a, path := o.app, o.File
	opts := business.ParseOptions{User: a.user, Operator: o.Operator}
	if o.Timezone != "" {
		loc, err := time.LoadLocation(o.Timezone)
		if err != nil || o.Timezone == "Local" {
			return usageErr("--timezone %q is not an IANA time zone name (such as Europe/Berlin or UTC)", o.Timezone)
		}
		opts.Location = loc
	}
	mapping, err := business.NewExportMapping(o.Columns, o.Defaults, o.DateFormat, opts.Location)
	var me *business.MappingError
	switch {
	case errors.As(err, &me):
		return usageErr("--%s %s: %s", me.Option, termtext.Quote(me.Value), me.Reason)
	case err != nil:
		return err
	}
	opts.Mapping = mapping
	in, err := openInput(ctx, "orders file", path)
	if err != nil {
		return err
	}
	defer in.Close()
	if !o.DryRun && !a.onServer() && !exists(a.data) {
		if handled, err := a.importOrdersNewDir(ctx, path, in, opts); handled {
			return err
		}
	}
	// A bad file is refused before the data dir is opened or made.
	file, err := returns.ParseOrders(ctx, interruptible(ctx, in), opts)
	if err != nil {
		return inputError(err) // a failing $TMPDIR is exit 1, not bad input
	}
	defer file.Close()
	mode := returns.CreateIfMissing // a dry run makes nothing
	if o.DryRun {
		mode = returns.OpenExisting
	}
	svc, err := a.service(ctx, mode)
	if err != nil {
		return err
	}
	res, err := svc.ImportOrdersFile(ctx, file, business.ImportOptions{DryRun: o.DryRun})
	if err != nil {
		return err
	}
	if res.DryRun {
		return a.renderImportResult(path, res, o.Operator)
	}
	return a.reportImport(path, res, o.Operator)
}

// reportImport prints the report of an import that has committed. A
// signal from here on came after the commit: the report holds, and the
// signal's note says so (Run).
func (a *app) reportImport(path string, res business.ImportResult, operator bool) error {
	a.done = "the import was committed: every order of the report is stored; nothing to run again"
	return a.renderImportResult(path, res, operator)
}

// renderImportResult prints an import's report as --output asks.
func (a *app) renderImportResult(path string, res business.ImportResult, operator bool) error {
	if a.output == "json" {
		return writeJSON(a.stdout, res)
	}
	return renderImport(a.stdout, path, res, operator)
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
	tw := termtext.NewTable(w)
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
