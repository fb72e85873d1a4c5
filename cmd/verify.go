package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"assistant/checkpoints"
	"assistant/flow/returns"
	"assistant/internal/termtext"
)

const verifyLong = `verify reads the data dir and writes nothing; other processes may use it
meanwhile. It checks:

  - each file: PRAGMA integrity_check (every page, every index against its
    table), its owner and schema version, and that a -wal beside it was
    written for it;
  - the pairing: both files carry one data dir identity;
  - every task: its run's draft and application exist in business.sqlite,
    of the task and its user; its record agrees with its run (user, order,
    a recorded submission whose application exists, a run for every record
    and a record for every run); and no application lacks its draft.

Each finding names its task (or file) and how to fix it. An error means the
two files contradict each other or a file is damaged: the task or file is
refused until it is restored. A warning is a state the flow handles by
itself: the next resume or recover of the task sets it right, or (an end
that business.sqlite records and the checkpoints lack) every command
already reads the task as business.sqlite says it ended, and the warning
stays as a note of the lost checkpoints. Exit 0 when there is no error, 1
otherwise.`

// verifyOptions are verify's: it takes no argument and no flag of its
// own.
type verifyOptions struct{ app *app }

// newCmdVerify is the verify command; runF runs it (verifyRun, or a
// test's).
func newCmdVerify(a *app, runF func(context.Context, *verifyOptions) error) *cobra.Command {
	opts := &verifyOptions{app: a}
	return &cobra.Command{
		Use:   "verify",
		Short: "Check a data dir without writing: both files, their pairing and every cross-file invariant",
		Long:  verifyLong,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant verify
  assistant verify --output json | jq '.findings[] | select(.severity == "error")'`,
		Args: exactArgs(0, "verify takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error { return runF(c.Context(), opts) },
	}
}

// verifyRun checks the stores and prints the report; a report with an
// error is ErrInconsistent, after the report that names each.
func verifyRun(ctx context.Context, opts *verifyOptions) error {
	a := opts.app
	rep, err := a.verify(ctx)
	if err != nil {
		return err
	}
	if err := a.renderVerify(rep); err != nil {
		return err
	}
	if !rep.Clean {
		a.reported = true // the report on stdout names every error
		return fmt.Errorf("%s: %d error(s), each listed with its fix (%w)", rep.DataDir, rep.Errors(), returns.ErrInconsistent)
	}
	return nil
}

// verify checks the data dir, or the stores on --store's server
// (returns.Verify).
func (a *app) verify(ctx context.Context) (*returns.VerifyReport, error) {
	if a.onServer() {
		return a.verifyServer(ctx)
	}
	return verifyDir(ctx, a.data, a.host, a.fixWording)
}

// fixWording words verify's fixes for a task of user ("" for none):
// their commands start with this command's --data or --store, and --user
// unless both user and the user of this command are the default
// (returns.VerifyOptions.Wording).
func (a *app) fixWording(user string) returns.Wording {
	return cliWording{prog: a.fixCommand(user)}
}

// fixCommand is the prefix of a command verify's fixes quote for a task of
// user (fixWording).
func (a *app) fixCommand(user string) string {
	prefix := a.nextCommandPrefix()
	if a.user != DefaultUser {
		prefix = strings.TrimSuffix(prefix, " --user "+shellQuote(a.user))
	}
	if user != "" && (user != DefaultUser || a.user != DefaultUser) {
		prefix += " --user " + shellQuote(user)
	}
	return prefix
}

// verifyDir checks the data dir dir read-only (returns.Verify); host names
// this machine in leases (returns.Config.Host); words words the fixes
// (returns.VerifyOptions.Wording).
func verifyDir(ctx context.Context, dir, host string, words func(user string) returns.Wording) (*returns.VerifyReport, error) {
	if err := returns.PrepareDataDir(dir, returns.OpenExisting); err != nil {
		return nil, err
	}
	check, cps, closeCps, err := checkpointsForReading(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer closeCps()
	return returns.Verify(ctx, returns.VerifyOptions{DataDir: dir, CheckpointsFile: check, Checkpoints: cps, Host: host, Wording: words,
		CountThreads: checkpoints.CountThreadsReadOnly})
}

// renderVerify prints a verify report as JSON, or as text for a person.
func (a *app) renderVerify(rep *returns.VerifyReport) error {
	if a.output == "json" {
		return writeJSON(a.stdout, rep)
	}
	return writeVerify(a.stdout, rep)
}

// writeVerify prints rep for a person: the files, then each finding with
// its fix.
func writeVerify(w io.Writer, rep *returns.VerifyReport) error {
	var b strings.Builder
	server := len(rep.Files) > 0 && rep.Files[0].Integrity == returns.IntegrityServer
	if server {
		fmt.Fprintf(&b, "Store %s: %d task(s) checked.\n", termSafe(rep.DataDir), rep.Tasks)
	} else {
		fmt.Fprintf(&b, "Data dir %s: %d task(s) checked.\n", termSafe(rep.DataDir), rep.Tasks)
	}
	for _, f := range rep.Files {
		id := "none"
		if f.DataDirID != nil {
			id = *f.DataDirID
		}
		switch {
		case server:
			fmt.Fprintf(&b, "  schema %-12s version %d (pages: the server's own checks)\n", f.File, f.SchemaVersion)
		case !f.Exists:
			fmt.Fprintf(&b, "  %-19s missing or empty\n", f.File)
		default:
			fmt.Fprintf(&b, "  %-19s schema %d, data dir %s, integrity %s\n", f.File, f.SchemaVersion, id, f.Integrity)
		}
	}
	switch {
	case len(rep.Findings) > 0:
	case server:
		b.WriteString("Clean: the two schemas agree.\n")
	default:
		b.WriteString("Clean: the two files agree and both are sound.\n")
	}
	for _, f := range rep.Findings {
		what := f.File
		if f.Task != "" {
			what = "task " + termSafe(f.Task)
		}
		// A fix may hold a command whose arguments ShellQuote wrote as $'…'.
		fmt.Fprintf(&b, "%-7s %s: %s\n        fix: %s\n", f.Severity, what, termtext.EscapeControls(f.Problem), termtext.EscapeControls(f.Fix))
	}
	if n := rep.Errors(); n > 0 {
		fmt.Fprintf(&b, "%d error(s): the data dir is not consistent.\n", n)
	} else if len(rep.Findings) > 0 {
		b.WriteString("No error: the flow handles the warnings above by itself (each fix says how).\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
