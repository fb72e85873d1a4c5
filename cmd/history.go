package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

// maxDiffValue is how many characters of a changed value a history diff line
// shows before it cuts the value short.
const maxDiffValue = 100

// historyOptions are history's argument.
type historyOptions struct {
	app  *app
	Task string
}

// newCmdHistory is the history command; runF runs it with its options
// (historyRun, or a test's).
func newCmdHistory(a *app, runF func(context.Context, *historyOptions) error) *cobra.Command {
	opts := &historyOptions{app: a}
	return &cobra.Command{
		Use:   "history TASK",
		Short: "List a task's checkpoints and timeline steps, with what each step changed",
		Long: `history lists the task's checkpoints newest first (id, step, source, next
nodes, time) and, in text output, under each one the state fields it changed
(field: old → new). Then the timeline: one line per node run (seq, node,
attempt, status, start, end, error). It changes nothing.

A checkpoint whose state this build cannot decode is listed with the reason;
it is kept as it is.

Exit 2 for a task id that breaks the task id rule, 4 for a task that does
not exist or that you may not decide (another user's reads as unknown).`,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant history return-25
  assistant history return-25 --output json`,
		Args: exactArgs(1, "history needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Task = args[0]
			return runF(c.Context(), opts)
		},
	}
}

// historyRun prints the task's history.
func historyRun(ctx context.Context, opts *historyOptions) error {
	a := opts.app
	svc, err := a.serviceOf(ctx, opts.Task)
	if err != nil {
		return err
	}
	h, err := svc.History(ctx, opts.Task, a.user)
	if err != nil {
		return err
	}
	if a.output == "json" {
		return writeJSON(a.stdout, h)
	}
	return writeHistory(a.stdout, h)
}

// historyTime is how history prints a time: UTC, to the millisecond.
const historyTime = "2006-01-02 15:04:05.000"

// writeHistory prints a history for a person.
func writeHistory(w io.Writer, h *returns.History) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s (%s) · %s, newest first\n\n", termSafe(h.Task), termSafe(h.Kind), count(len(h.Checkpoints), "checkpoint"))
	// The rows are aligned first, then each is followed by its diff lines:
	// lines without cells would break the table's columns.
	var rows strings.Builder
	tw := termtext.NewTable(&rows)
	fmt.Fprintln(tw, "SEQ\tCHECKPOINT\tSTEP\tSOURCE\tNEXT\tTIME (UTC)")
	for _, cp := range h.Checkpoints {
		next := strings.Join(cp.Next, ",")
		if next == "" {
			next = "(end)"
		}
		if cp.Breakpoint != "" {
			next += " [" + cp.Breakpoint + "]"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\n", cp.Seq, termSafe(cp.ID), cp.Step, termSafe(cp.Source), termSafe(next), cp.CreatedAt.UTC().Format(historyTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(rows.String(), "\n")
	b.WriteString(lines[0])
	for i, cp := range h.Checkpoints {
		b.WriteString(lines[i+1])
		if cp.DecodeError != "" {
			fmt.Fprintf(&b, "     ! %s (kept as stored)\n", termSafe(cp.DecodeError))
		}
		for _, ch := range cp.Changes {
			if ch.Field == "decisions" {
				writeDecisionsAdded(&b, ch)
				continue
			}
			fmt.Fprintf(&b, "     %s: %s → %s\n", termSafe(ch.Field), diffValue(ch.Old), diffValue(ch.New))
		}
	}
	fmt.Fprintf(&b, "\nDecisions · %s\n", count(len(h.Decisions), "decision"))
	if len(h.Decisions) > 0 {
		b.WriteString("\n")
		tw = termtext.NewTable(&b)
		fmt.Fprintln(tw, "TIME (UTC)\tBY\tACTION\tVERSION\tDRAFT")
		for _, d := range h.Decisions {
			version, draft := "-", "-"
			if d.Version != nil {
				version = fmt.Sprint(*d.Version)
			}
			if d.DraftID != nil {
				draft = termSafe(*d.DraftID)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.At.UTC().Format(historyTime), termSafe(d.By), termSafe(d.Action), version, draft)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "\nTimeline · %s\n", count(len(h.Steps), "step"))
	if hv := h.Holder; hv != nil && !hv.Alive {
		fmt.Fprintf(&b, "Its process (pid %d on %s) is gone: a step it ran was cut short (recover or resume the task to continue it).\n", hv.PID, termSafe(hv.Host))
	}
	b.WriteString("\n")
	tw = termtext.NewTable(&b)
	fmt.Fprintln(tw, "SEQ\tNODE\tATTEMPT\tSTATUS\tSTARTED (UTC)\tENDED (UTC)\tERROR")
	for _, st := range h.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\n", st.Seq, termSafe(st.Node), st.Attempt, termSafe(st.Status),
			st.StartedAt.UTC().Format(historyTime), timeOrDash(st.EndedAt), orDash(termSafe(st.Error)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDecisionsAdded writes the answers a checkpoint added to the state's
// decision trail, one a line ("decisions: + approve by alice (version 2)"),
// instead of the whole list.
func writeDecisionsAdded(b *strings.Builder, ch returns.FieldChange) {
	var old, cur []returns.Decision
	_ = json.Unmarshal(ch.Old, &old)
	if json.Unmarshal(ch.New, &cur) != nil || len(cur) < len(old) {
		fmt.Fprintf(b, "     %s: %s → %s\n", termSafe(ch.Field), diffValue(ch.Old), diffValue(ch.New))
		return
	}
	for _, d := range cur[len(old):] {
		bound := ""
		if d.Version > 0 {
			bound = fmt.Sprintf(" (version %d)", d.Version)
		}
		fmt.Fprintf(b, "     decisions: + %s by %s%s\n", termSafe(d.Action), termSafe(d.By), bound)
	}
}

// diffValue renders one side of a field change: compact JSON, "(none)" when
// absent, cut short when long. JSON escapes the controls of a string; the
// bidi and invisible characters it keeps are escaped as JSON would write
// them (\u202e), the JSON's own backslashes left as they are.
func diffValue(v json.RawMessage) string {
	if v == nil {
		return "(none)"
	}
	s := string(v)
	var x any
	if json.Unmarshal(v, &x) == nil {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if enc.Encode(x) == nil {
			s = strings.TrimSpace(b.String())
		}
	}
	if r := []rune(s); len(r) > maxDiffValue {
		s = string(r[:maxDiffValue]) + "…"
	}
	return termtext.EscapeControls(s)
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(historyTime)
}

// count renders n things: "1 step", "5 steps".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
