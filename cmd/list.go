package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

const listLong = `list prints your tasks, oldest first, each with the status and stage show
prints for it now. A task waiting for approval of a draft that has expired
shows as failed (stage failed), as show and wait say: no answer can submit
it; "assistant recover" records that end (draft_expired). A running task
whose process is gone shows "holder_alive": false (text: "running (holder
gone)"); "assistant recover" continues it.

--status keeps the tasks of the statuses named: repeat it or separate them
with commas (running, waiting, expired, interrupted, done, cancelled,
failed; expired selects the failed tasks whose draft expired while they
waited, before recover recorded it). --batch keeps the tasks of the
rows of one of your batches. --limit keeps the first N.

--awaiting-me lists instead the tasks you may decide now: your own and
those of every owner who granted you (assistant approvers grant), waiting
for an answer, not expired, and not already answered by you (the first of
two approvals); another owner's task shows its owner.

list changes nothing. Exit 2 for an unknown --status, nothing read; an
empty list is exit 0.`

const listExample = `  assistant list
  assistant list --status waiting
  assistant list --status waiting,expired --status failed
  printf 'task,order,reason\nn-1,A3001,too small\n' > rows.csv
  assistant batch nightly-0301 rows.csv >/dev/null
  assistant list --batch nightly-0301 --status failed --limit 20
  assistant --user alice list --awaiting-me`

// listOptions are list's flags: Status as given (--status, repeated or
// comma-separated), the rest as returns.ListOptions takes them.
type listOptions struct {
	app    *app
	Status []string
	returns.ListOptions
}

// newCmdList is the list command; runF runs it with its options (listRun,
// or a test's).
func newCmdList(a *app, runF func(context.Context, *listOptions) error) *cobra.Command {
	opts := &listOptions{app: a}
	c := &cobra.Command{
		Use:     "list [--status S,...] [--awaiting-me] [--batch ID] [--limit N]",
		Short:   "List your tasks with their run status and stage",
		Long:    listLong,
		Example: listExample,
		Args:    exactArgs(0, "list takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			opts.User = a.user
			return runF(c.Context(), opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Status, "status", nil, "only tasks with these statuses, repeated or comma-separated (running, waiting, expired, interrupted, done, cancelled, failed)")
	c.Flags().StringVar(&opts.Batch, "batch", "", "only the tasks of the rows of this batch")
	c.Flags().IntVar(&opts.Limit, "limit", 0, "at most this many tasks, oldest first (0: all)")
	c.Flags().BoolVar(&opts.AwaitingMe, "awaiting-me", false, "the waiting tasks you may decide now: yours and those of owners who granted you")
	return c
}

// listRun lists the user's tasks; a data dir that does not exist holds
// none (and is not made), unless a batch is named.
func listRun(ctx context.Context, opts *listOptions) error {
	a := opts.app
	o := opts.ListOptions
	var err error
	if o.Statuses, err = returns.ParseStatuses(opts.Status); err != nil {
		return err
	}
	if err := returns.CheckListOptions(o); err != nil {
		return err
	}
	tasks := []returns.TaskSummary{}
	svc, err := a.service(ctx, returns.OpenExisting)
	switch {
	case errors.Is(err, returns.ErrNotFound) && o.Batch == "":
		// No data dir yet: no task, and nothing is created.
	case errors.Is(err, returns.ErrNotFound):
		return fmt.Errorf("batch %s: %w for user %s", o.Batch, returns.ErrNotFound, a.user)
	case err != nil:
		return err
	default:
		if tasks, err = svc.ListTasks(ctx, o); err != nil {
			return err
		}
	}
	switch a.output {
	case outputCSV:
		return a.writeListCSV(ctx, svc, tasks)
	case "json":
		return writeJSON(a.stdout, map[string]any{"tasks": tasks})
	}
	return writeTasks(a.stdout, tasks, o.AwaitingMe)
}

// writeTasks prints tasks as a table for a person, with each task's owner
// for awaitingMe.
func writeTasks(w io.Writer, tasks []returns.TaskSummary, awaitingMe bool) error {
	tw := termtext.NewTable(w)
	for i, t := range tasks {
		// The status is show's; a holder that is gone is said beside it,
		// as the card says it.
		if t.Status == returns.StatusRunning && t.HolderAlive != nil && !*t.HolderAlive {
			tasks[i].Status += " (holder gone)"
		}
	}
	if awaitingMe {
		fmt.Fprintln(tw, "TASK\tOWNER\tORDER\tSTATUS\tSTAGE\tUPDATED (UTC)")
		for _, t := range tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(t.Task), orDash(termSafe(t.Owner)), termSafe(t.Order), termSafe(t.Status), orDash(termSafe(t.Stage)), t.UpdatedAt.UTC().Format("2006-01-02 15:04:05"))
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "TASK\tORDER\tSTATUS\tSTAGE\tUPDATED (UTC)")
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termSafe(t.Task), termSafe(t.Order), termSafe(t.Status), orDash(termSafe(t.Stage)), t.UpdatedAt.UTC().Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}
