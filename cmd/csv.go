package cmd

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

// outputCSV is the --output value that prints CSV: list's tasks as a
// decide file, and show --rows's rows (docs/cli.md "CSV output").
const outputCSV = "csv"

// csvAllowed returns ErrInvalid unless command c prints CSV: list, and
// show with --rows.
func csvAllowed(c *cobra.Command) error {
	switch c.Name() {
	case "list":
		if c.Parent() == c.Root() {
			return nil
		}
	case "show":
		if rows, err := c.Flags().GetBool("rows"); err == nil && rows {
			return nil
		}
	}
	return usageErr("--output csv works only with list and show --rows, not with %q; use json or text", c.CommandPath())
}

// decideHeader is the header of a decide file as list --output csv
// prints it.
var decideHeader = []string{"task", "action", "draft"}

// writeListCSV prints, as a decide file, the listed tasks that wait for
// approval: task, an empty action for a person or a script to fill in, and
// the draft the question carries. svc is nil when there is no data dir
// (then there is no task either).
func (a *app) writeListCSV(ctx context.Context, svc *returns.Service, tasks []returns.TaskSummary) error {
	rows := []returns.DecisionRow{}
	if svc != nil {
		var err error
		if rows, err = svc.DecisionRows(ctx, a.user, tasks); err != nil {
			return err
		}
	}
	w := csv.NewWriter(a.stdout)
	_ = w.Write(decideHeader)
	for _, r := range rows {
		_ = w.Write([]string{r.Task, r.Action, r.Draft})
	}
	w.Flush()
	return w.Error()
}

// showRows prints the report of batch task's rows: JSON, CSV or a table.
func (a *app) showRows(ctx context.Context, svc *returns.Service, task string) error {
	rep, err := svc.ShowRows(ctx, task, a.user)
	if err != nil {
		return err
	}
	for i := range rep.Rows {
		rep.Rows[i].Error = a.pasteable(rep.Rows[i].Error)
	}
	switch a.output {
	case "json":
		return writeJSON(a.stdout, rep)
	case outputCSV:
		return writeRowsCSV(a.stdout, rep)
	}
	return writeRowsText(a.stdout, rep)
}

// rowColumns are the columns of a rows report, by what the rows are.
func rowColumns(of string) []string {
	if of == returns.RowsOfDecisions {
		return []string{"line", "task", "action", "draft", "outcome", "error_code", "error", "duplicate_of"}
	}
	return []string{"line", "task", "order", "outcome", "error_code", "error", "duplicate_of"}
}

// rowFields is row r's fields in rowColumns(of)'s order ("" for none).
func rowFields(of string, r returns.RowReport) []string {
	dup := ""
	if r.DuplicateOf != nil {
		dup = strconv.Itoa(*r.DuplicateOf)
	}
	line := strconv.Itoa(r.Line)
	if of == returns.RowsOfDecisions {
		return []string{line, r.Task, r.Action, r.Draft, r.Outcome, r.ErrorCode, r.Error, dup}
	}
	return []string{line, r.Task, r.Order, r.Outcome, r.ErrorCode, r.Error, dup}
}

// writeRowsCSV prints a rows report as CSV with a header line. The report
// is for people and spreadsheets, never read back by a command: every
// field a spreadsheet would run as a formula is written inert
// (spreadsheetSafe).
func writeRowsCSV(out io.Writer, rep *returns.RowsView) error {
	w := csv.NewWriter(out)
	_ = w.Write(rowColumns(rep.Of))
	for _, r := range rep.Rows {
		fields := rowFields(rep.Of, r)
		for i, f := range fields {
			fields[i] = spreadsheetSafe(f)
		}
		_ = w.Write(fields)
	}
	w.Flush()
	return w.Error()
}

// spreadsheetSafe returns field with a "'" in front when a spreadsheet
// would read it as a formula: it starts with '=', '+', '-', '@', a tab or
// a carriage return (OWASP "CSV Injection"). Spreadsheets show such a
// field as its text without the quote. list --output csv does not use it:
// its file is read back by decide, which must get the task ids exactly.
func spreadsheetSafe(field string) string {
	if field != "" && strings.ContainsRune("=+-@\t\r", rune(field[0])) {
		return "'" + field
	}
	return field
}

// writeRowsText prints a rows report as a table for a person.
func writeRowsText(out io.Writer, rep *returns.RowsView) error {
	fmt.Fprintf(out, "%s %s · %s · %d rows\n", map[bool]string{true: "Decide run", false: "Batch"}[rep.Of == returns.RowsOfDecisions], termSafe(rep.Task), rep.Status, len(rep.Rows))
	tw := termtext.NewTable(out)
	cols := rowColumns(rep.Of)
	for i, c := range cols {
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
		fmt.Fprint(tw, c)
	}
	fmt.Fprintln(tw)
	for _, r := range rep.Rows {
		for i, f := range rowFields(rep.Of, r) {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, orDash(termSafe(f)))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
