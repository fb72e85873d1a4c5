package cmd

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

func (a *app) newRecover() *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Resume every running task whose process is gone; end expired drafts",
		Long: `recover finds every task that is running but whose lease holder is gone
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
boot").`,
		Example: `  assistant recover`,
		Args:    exactArgs(0, "recover takes no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			got := []returns.Recovered{}
			var failed error // a *returns.RecoverError: some tasks not recovered
			svc, err := a.service(c.Context(), false)
			switch {
			case errors.Is(err, returns.ErrNotFound):
				// No data dir yet (a boot-time recover): nothing to recover.
			case err != nil:
				return err
			default:
				var re *returns.RecoverError
				if got, failed = svc.Recover(c.Context()); failed != nil && !errors.As(failed, &re) {
					return failed
				}
			}
			if err := a.printRecovered(got); err != nil {
				return err
			}
			if failed != nil {
				a.reported = true // the report on stdout names each failure
				return failed
			}
			return nil
		},
	}
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
		}
		fmt.Fprintln(&b)
	}
	_, err := a.stdout.Write(b.Bytes())
	return err
}
