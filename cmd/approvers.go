package cmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

func (a *app) newApprovers() *cobra.Command {
	c := &cobra.Command{
		Use:   "approvers grant|revoke USER [--for OWNER] | approvers list",
		Short: "Let another user decide your tasks, take it back, or list who may",
		Long: `A user decides their own tasks (show, resume, history) and the tasks of
every owner who granted them. approvers grant USER lets USER do so for the
current user's tasks; revoke takes it back (answers given stay in the
decision trail). --for names the owner and must be the current user: only
an owner grants or revokes approvers of their own tasks (exit 2
otherwise). Granting what is granted, or revoking what is not, changes
nothing (changed: false). Every change is kept in business.sqlite with who
made it and when; list prints the grants you gave or hold and their
changes.

For anyone without a grant another user's task is unknown (exit 4), as a
task id nobody uses.`,
		Example: `  assistant --user ci-bot approvers grant alice --for ci-bot
  assistant --user alice list --awaiting-me
  assistant --user ci-bot approvers revoke alice
  assistant --user ci-bot approvers list`,
	}
	c.AddCommand(a.newApproverChange("grant"), a.newApproverChange("revoke"), a.newApproversList())
	return c
}

// newApproverChange is approvers grant or approvers revoke.
func (a *app) newApproverChange(change string) *cobra.Command {
	var owner string
	short := "Let USER decide your tasks"
	if change == "revoke" {
		short = "Take back USER's grant to decide your tasks"
	}
	c := &cobra.Command{
		Use:   change + " USER [--for OWNER]",
		Short: short,
		Args:  exactArgs(1, "approvers "+change+" needs USER"),
		RunE: func(c *cobra.Command, args []string) error {
			o, err := returns.CheckGrant(returns.GrantOptions{User: a.user, Grantee: args[0], For: owner})
			if err != nil {
				return err
			}
			// Only start, batch and orders import make a data dir: a grant
			// or revoke on a missing one is exit 4 and creates nothing.
			svc, err := a.service(c.Context(), false)
			if err != nil {
				return err
			}
			do := svc.Grant
			if change == "revoke" {
				do = svc.Revoke
			}
			res, err := do(c.Context(), o)
			if err != nil {
				return err
			}
			return a.renderGrant(res)
		},
	}
	c.Flags().StringVar(&owner, "for", "", "whose tasks (default and only allowed value: the current --user)")
	return c
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

func (a *app) newApproversList() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the approver grants you gave or hold, and their changes",
		Args:  exactArgs(0, "approvers list takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			svc, err := a.service(c.Context(), false)
			var ap *returns.Approvers
			switch {
			case errors.Is(err, returns.ErrNotFound):
				ap = returns.NoApprovers(a.user) // no data dir: no grant yet
			case err != nil:
				return err
			default:
				if ap, err = svc.ListApprovers(c.Context(), a.user); err != nil {
					return err
				}
			}
			if a.output == "json" {
				return writeJSON(a.stdout, ap)
			}
			return writeApproversText(a.stdout, ap)
		},
	}
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
