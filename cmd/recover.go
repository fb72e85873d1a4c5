package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

const recoverLong = `recover finds every task that is running but whose lease holder is gone
(its process died on this host, or its lease lapsed) and resumes each
through the same path as "assistant resume TASK". It prints what it
recovered, with what each recovery cost (steps kept, redone, wall time).

Then it ends every task still waiting for approval of a draft that has
expired (list shows them as expired): each ends failed with the error code
draft_expired, in a checkpoint of its own; nothing is submitted, an answer
afterwards is refused (exit 3), and prune may remove its old checkpoints.
Its JSON line says "ended": "draft_expired".

Tasks of every user are recovered. When a task cannot be recovered (busy,
a locked file, a storage error) the others still are, each failure is named
on stderr, and recover exits 3 (busy or locked) or 1 (anything else).

Run it at boot, before the tool is used (docs/recovery.md "Recover at
boot").`

// recoverOptions are recover's: it takes no argument and no flag of its
// own.
type recoverOptions struct{ app *app }

// newCmdRecover is the recover command; runF runs it (recoverRun, or a
// test's).
func newCmdRecover(a *app, runF func(context.Context, *recoverOptions) error) *cobra.Command {
	opts := &recoverOptions{app: a}
	return &cobra.Command{
		Use:     "recover",
		Short:   "Resume every running task whose process is gone; end expired drafts",
		Long:    recoverLong,
		Example: `  assistant recover`,
		Args:    exactArgs(0, "recover takes no arguments"),
		RunE:    func(c *cobra.Command, _ []string) error { return runF(c.Context(), opts) },
	}
}

// recoverRun recovers and prints the report; a task it could not recover
// is its error (a *returns.RecoverError), after the report that names it.
func recoverRun(ctx context.Context, opts *recoverOptions) error {
	a := opts.app
	got := []returns.Recovered{}
	var failed error // a *returns.RecoverError: some tasks not recovered
	svc, err := a.service(ctx, returns.OpenExisting)
	switch {
	case errors.Is(err, returns.ErrNotFound):
		// No data dir yet (a boot-time recover): nothing to recover.
	case err != nil:
		return err
	default:
		var re *returns.RecoverError
		if got, failed = svc.Recover(ctx); failed != nil && !errors.As(failed, &re) {
			return failed
		}
	}
	if err := a.printRecovered(got); err != nil {
		return err
	}
	for _, r := range got {
		if r.Note != "" {
			// As resume says it of the approve it carried out.
			a.note(fmt.Sprintf("recover %s: %s", r.Task, r.Note))
		}
	}
	if failed != nil {
		a.reported = true // the report on stdout names each failure
	}
	return failed
}

// printRecovered prints recover's report as JSON or one line per task.
// The text is written in one piece, and a failed write is the error (a
// full disk: exit 1), as every command's output is.
func (a *app) printRecovered(got []returns.Recovered) error {
	if a.output == "json" {
		return writeJSON(a.stdout, map[string]any{"recovered": got})
	}
	var b bytes.Buffer
	if len(got) == 0 {
		fmt.Fprintln(&b, "Nothing to recover: no running task has lost its process, and no waiting draft has expired.")
	}
	for _, r := range got {
		if r.Error != "" {
			fmt.Fprintf(&b, "%s: not recovered: %s\n", termSafe(r.Task), termtext.EscapeControls(r.Error))
			continue
		}
		if r.Ended != "" {
			fmt.Fprintf(&b, "%s: %s (%s): its draft expired before anyone approved it; nothing was submitted\n", termSafe(r.Task), r.Status, r.Ended)
			continue
		}
		fmt.Fprintf(&b, "%s: %s (stage %s)", termSafe(r.Task), r.Status, orDash(r.Stage))
		if rc := r.Recovery; rc != nil {
			fmt.Fprintf(&b, " · %d ms, %d steps kept, %d redone, %d interrupted", rc.RecoveryMS, rc.StepsKept, rc.StepsRedone, rc.StepsInterrupted)
			if rc.RowsKept != nil && rc.RowsRedone != nil {
				fmt.Fprintf(&b, "; %d rows kept, %d redone", *rc.RowsKept, *rc.RowsRedone)
			}
		}
		if r.Note != "" {
			fmt.Fprintf(&b, "; %s", termtext.EscapeControls(r.Note))
		}
		fmt.Fprintln(&b)
	}
	_, err := a.stdout.Write(b.Bytes())
	return err
}
