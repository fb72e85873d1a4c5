package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

const approversTokenLong = `approvers token USER makes an access token for USER, the person a
request to the server (assistant serve) signs in as with the header
Authorization: Bearer TOKEN. The token is printed this once; the data
dir keeps only its SHA-256, with who made it (--user) and when. It
expires after --expires (default 90d; 0 never expires).

approvers token --revoke ID revokes a token: no request signs in with it
again. approvers tokens lists every token by id, without the tokens.`

const approversTokenExample = `  assistant --user ops approvers token alice --expires 30d
  assistant approvers tokens
  assistant approvers token --revoke ID      # exit 4 here: ID stands for an id that approvers tokens lists`

// approversTokenOptions are approvers token's argument and flags.
type approversTokenOptions struct {
	app     *app
	User    string
	Expires time.Duration
	Revoke  string
}

// newCmdApproversToken is approvers token USER | approvers token
// --revoke ID; runF runs it (approversTokenRun, or a test's).
func newCmdApproversToken(a *app, runF func(context.Context, *approversTokenOptions) error) *cobra.Command {
	opts := &approversTokenOptions{app: a}
	c := &cobra.Command{
		Use:     "token USER [--expires 90d] | token --revoke ID",
		Short:   "Make an access token that signs USER in to the server, or revoke one",
		Long:    approversTokenLong,
		Example: approversTokenExample,
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case opts.Revoke != "" && len(args) > 0:
				return usageErr("approvers token takes USER or --revoke ID, not both")
			case opts.Revoke != "" && c.Flags().Changed("expires"):
				return usageErr("--expires is for a new token, not with --revoke")
			case opts.Revoke == "" && len(args) != 1:
				return usageErr("approvers token needs USER, or --revoke ID (got %s)", argumentCount(len(args)))
			}
			if len(args) == 1 {
				opts.User = args[0]
			}
			return runF(c.Context(), opts)
		},
	}
	c.Flags().Var(newDurationValue(returns.DefaultTokenLife, &opts.Expires), "expires", "how long the token signs in (e.g. 90d, 12h; 0 never expires)")
	c.Flags().StringVar(&opts.Revoke, "revoke", "", "revoke the token with this id (from approvers tokens)")
	return c
}

// approversTokenRun makes or revokes a token and prints it.
func approversTokenRun(ctx context.Context, opts *approversTokenOptions) error {
	a := opts.app
	if opts.Revoke == "" {
		if err := returns.ValidUser(opts.User); err != nil {
			return usageErr("user: %v", err)
		}
		if opts.Expires < 0 {
			return usageErr("--expires must not be negative, not %s", opts.Expires)
		}
	}
	// A token is for a server on this data dir: one is made where start
	// would make the stores, so a fresh directory can be served at once.
	mode := returns.CreateIfMissing
	if opts.Revoke != "" {
		mode = returns.OpenExisting
	}
	svc, err := a.service(ctx, mode)
	if err != nil {
		return err
	}
	if opts.Revoke != "" {
		r, err := svc.RevokeToken(ctx, opts.Revoke)
		if err != nil {
			return err
		}
		if a.output == "json" {
			return writeJSON(a.stdout, r)
		}
		what := "revoked"
		if !r.Changed {
			what = "was revoked already"
		}
		_, err = fmt.Fprintf(a.stdout, "access token %s of %s %s at %s\n", termSafe(r.ID), termSafe(r.User), what, r.RevokedAt.UTC().Format(approversTime))
		return err
	}
	t, err := svc.MakeToken(ctx, returns.TokenOptions{User: opts.User, By: a.user, Life: opts.Expires})
	if err != nil {
		return err
	}
	if a.output == "json" {
		return writeJSON(a.stdout, t)
	}
	expires := "never expires"
	if !t.ExpiresAt.IsZero() {
		expires = "expires " + t.ExpiresAt.UTC().Format(approversTime) + " UTC"
	}
	_, err = fmt.Fprintf(a.stdout, "access token %s for %s (%s); it is shown only now:\n%s\n", t.ID, termSafe(t.User), expires, t.Token)
	return err
}

// approversTokensOptions are approvers tokens': no argument, no flag.
type approversTokensOptions struct{ app *app }

// newCmdApproversTokens is approvers tokens; runF runs it
// (approversTokensRun, or a test's).
func newCmdApproversTokens(a *app, runF func(context.Context, *approversTokensOptions) error) *cobra.Command {
	opts := &approversTokensOptions{app: a}
	return &cobra.Command{
		Use:   "tokens",
		Short: "List the access tokens by id, without the tokens",
		Args:  exactArgs(0, "approvers tokens takes no arguments"),
		RunE:  func(c *cobra.Command, _ []string) error { return runF(c.Context(), opts) },
	}
}

// approversTokensRun prints every token made; a missing data dir holds
// none (and is not made).
func approversTokensRun(ctx context.Context, opts *approversTokensOptions) error {
	a := opts.app
	svc, err := a.service(ctx, returns.OpenExisting)
	list := &returns.TokenList{}
	switch {
	case errors.Is(err, returns.ErrNotFound):
	case err != nil:
		return err
	default:
		if list, err = svc.Tokens(ctx); err != nil {
			return err
		}
	}
	if a.output == "json" {
		return writeJSON(a.stdout, list)
	}
	return writeTokensText(a.stdout, list)
}

// writeTokensText prints the tokens as a table, one a line.
func writeTokensText(out io.Writer, l *returns.TokenList) error {
	if len(l.Tokens) == 0 {
		_, err := fmt.Fprintln(out, "No access tokens.")
		return err
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(approversTime)
	}
	tw := termtext.NewTable(out)
	fmt.Fprintln(tw, "ID\tUSER\tCREATED BY\tCREATED (UTC)\tLAST USED\tEXPIRES\tREVOKED")
	for _, t := range l.Tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(t.ID), termSafe(t.User), termSafe(t.CreatedBy), at(t.CreatedAt), at(t.LastUsedAt), at(t.ExpiresAt), at(t.RevokedAt))
	}
	return tw.Flush()
}
