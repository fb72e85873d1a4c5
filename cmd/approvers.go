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

const approversLong = `A user decides their own tasks (show, resume, history) and the tasks of
every owner who granted them. approvers grant USER lets USER do so for the
current user's tasks; revoke takes it back (answers given stay in the
decision trail, but an approval not yet submitted, the first of two or
one whose submit has not run, no longer counts at its submit: the task
waits for another approval). --for names the owner and must be the current user: only
an owner grants or revokes approvers of their own tasks (exit 2
otherwise). Granting what is granted, or revoking what is not, changes
nothing (changed: false). Every change is kept in business.sqlite with who
made it and when; list prints the grants you gave or hold and their
changes.

For anyone without a grant another user's task is unknown (exit 4), as a
task id nobody uses.

approvers token USER makes an access token that signs USER in to the
server (assistant serve), printed once; approvers tokens lists them and
approvers token --revoke ID revokes one.`

const approverGrantLong = `grant lets USER show, answer and read the history of your tasks, as
you do. It records the grant, with who made it and when, in
business.sqlite; granting what is granted changes nothing (changed:
false). --for, when given, must be you (exit 2 otherwise, nothing
changed). Exit 3 when another process holds the data dir's write lock
past the busy timeout.`

const approverRevokeLong = `revoke takes back USER's grant to decide your tasks; the answers USER
gave stay in the decision trail. It records the change, with who made it
and when, in business.sqlite; revoking what is not granted changes
nothing (changed: false). --for, when given, must be you (exit 2
otherwise, nothing changed). Exit 3 when another process holds the data
dir's write lock past the busy timeout.`

const approversListLong = `list prints the grants you gave and those you hold, and every change to
them with who made it and when. It changes nothing; a data dir that does
not exist holds no grant and is not made (exit 0).`

const approversExample = `  printf 'order_id,user,item,delivered_at,final_sale\nC1,ci-bot,Kettle,2026-11-20T10:00:00Z,false\n' > shop.csv
  assistant --user ci-bot orders import shop.csv
  assistant --user ci-bot approvers grant alice --for ci-bot
  assistant --user alice list --awaiting-me
  assistant --user ci-bot approvers revoke alice
  assistant --user ci-bot approvers list`

// newCmdApprovers is the approvers group: grant, revoke and list.
func newCmdApprovers(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:     "approvers grant|revoke USER [--for OWNER] | approvers list | approvers token USER | approvers tokens",
		Short:   "Let another user decide your tasks, take it back, list who may; make access tokens for the server",
		Long:    approversLong,
		Example: approversExample,
	}
	c.AddCommand(newCmdApproverChange(a, "grant", approverChangeRun), newCmdApproverChange(a, "revoke", approverChangeRun), newCmdApproversList(a, approversListRun),
		newCmdApproversToken(a, approversTokenRun), newCmdApproversTokens(a, approversTokensRun))
	return c
}

// approverChangeOptions are the argument and the flag of approvers grant
// and approvers revoke (Change).
type approverChangeOptions struct {
	app     *app
	Change  string // "grant" or "revoke"
	Grantee string
	For     string
}

// newCmdApproverChange is approvers grant or approvers revoke (change);
// runF runs it with its options (approverChangeRun, or a test's).
func newCmdApproverChange(a *app, change string, runF func(context.Context, *approverChangeOptions) error) *cobra.Command {
	opts := &approverChangeOptions{app: a, Change: change}
	short, long := "Let USER decide your tasks", approverGrantLong
	if change == "revoke" {
		short, long = "Take back USER's grant to decide your tasks", approverRevokeLong
	}
	c := &cobra.Command{
		Use:   change + " USER [--for OWNER]",
		Short: short,
		Long:  long,
		Args:  exactArgs(1, "approvers "+change+" needs USER"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Grantee = args[0]
			return runF(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.For, "for", "", "whose tasks (default and only allowed value: the current --user)")
	return c
}

// approverChangeRun checks the grant or revoke before anything is opened,
// records it and prints what changed.
func approverChangeRun(ctx context.Context, opts *approverChangeOptions) error {
	a := opts.app
	o, err := returns.CheckGrant(returns.GrantOptions{User: a.user, Grantee: opts.Grantee, For: opts.For})
	if err != nil {
		return err
	}
	// Only start, batch and orders import make a data dir: a grant or
	// revoke on a missing one is exit 4 and creates nothing.
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	do := svc.Grant
	if opts.Change == "revoke" {
		do = svc.Revoke
	}
	res, err := do(ctx, o)
	if err != nil {
		return err
	}
	return a.renderGrant(res)
}

func (a *app) renderGrant(r *returns.GrantResult) error {
	if a.output == "json" {
		return writeJSON(a.stdout, r)
	}
	verb := map[string]string{"grant": "may now decide", "revoke": "may no longer decide"}[r.Change]
	if !r.Changed {
		verb = map[string]string{"grant": "could already decide", "revoke": "held no grant to decide"}[r.Change]
	}
	_, err := fmt.Fprintf(a.stdout, "%s %s the tasks of %s\n", termSafe(r.Grantee), verb, termSafe(r.Owner))
	return err
}

// approversListOptions are approvers list's: it takes no argument and no
// flag of its own.
type approversListOptions struct{ app *app }

// newCmdApproversList is approvers list; runF runs it (approversListRun,
// or a test's).
func newCmdApproversList(a *app, runF func(context.Context, *approversListOptions) error) *cobra.Command {
	opts := &approversListOptions{app: a}
	return &cobra.Command{
		Use:   "list",
		Short: "List the approver grants you gave or hold, and their changes",
		Long:  approversListLong,
		Args:  exactArgs(0, "approvers list takes no arguments"),
		RunE:  func(c *cobra.Command, _ []string) error { return runF(c.Context(), opts) },
	}
}

// approversListRun prints the grants the user gave or holds; a missing
// data dir holds none (and is not made).
func approversListRun(ctx context.Context, opts *approversListOptions) error {
	a := opts.app
	svc, err := a.service(ctx, returns.OpenExisting)
	var ap *returns.Approvers
	switch {
	case errors.Is(err, returns.ErrNotFound):
		ap = returns.NoApprovers(a.user) // no data dir: no grant yet
	case err != nil:
		return err
	default:
		if ap, err = svc.ListApprovers(ctx, a.user); err != nil {
			return err
		}
	}
	if a.output == "json" {
		return writeJSON(a.stdout, ap)
	}
	return writeApproversText(a.stdout, ap)
}

// approversTime is how approvers list --output text prints a time (UTC).
const approversTime = "2006-01-02 15:04:05"

// writeApproversText prints ap for a person: the grants in force, then
// every recorded change of them, oldest first, as the JSON carries them.
func writeApproversText(out io.Writer, ap *returns.Approvers) error {
	tw := termtext.NewTable(out)
	fmt.Fprintln(tw, "OWNER\tAPPROVER\tGRANTED BY\tGRANTED (UTC)")
	for _, g := range ap.Grants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termSafe(g.Owner), termSafe(g.Grantee), termSafe(g.GrantedBy), g.GrantedAt.UTC().Format(approversTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(ap.Changes) == 0 {
		_, err := fmt.Fprintln(out, "\nNo changes recorded.")
		return err
	}
	fmt.Fprintln(out, "\nChanges:")
	tw = termtext.NewTable(out)
	fmt.Fprintln(tw, "AT (UTC)\tCHANGE\tOWNER\tAPPROVER\tBY")
	for _, c := range ap.Changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.At.UTC().Format(approversTime), termSafe(c.Change), termSafe(c.Owner), termSafe(c.Grantee), termSafe(c.By))
	}
	return tw.Flush()
}
