package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

const resumeLong = `resume answers exactly the question the task waits on: --reason when a
reason is asked; at the approval question --action approve, cancel, edit
--reason R (a new draft version with a new reason, prepared again) or
revise --comment C (back to the owner as a reason question carrying the
comment). An answer of the wrong kind is refused (exit 2) and nothing
changes. --draft or --version, when given, must name the current draft
version: an older one is stale (exit 3). Once the draft has more than one
version (an edit or a revise made it), an approve must name the draft or
the version it approves (exit 2 without).

The task's owner answers, and so does an approver the owner granted
(assistant approvers grant); for anyone else the task is unknown (exit 4).
A task started with --approvals 2 asks two approval questions: two
different people approve (the same person twice is exit 3), each answer
goes to the first open question unless --interrupt names one, and one
cancel, edit or revise answers both.

Without an answer, resume continues a run that was stopped or crashed.
On a task that has ended it prints the task and changes nothing; approving
a submitted task again returns the same application with reused: true.`

const resumeExample = `  assistant start return-25 A3003 --reason "size does not fit"
  assistant resume return-25 --action edit --reason "wrong size"       # draft version 2
  assistant approvers grant alice
  assistant --user alice resume return-25 --action approve --version 2
  assistant start return-26 A3004                                      # asks for a reason
  assistant resume return-26 --reason "wrong colour"
  assistant resume return-26 --action revise --comment "say which size" # back to the owner
  assistant resume return-26 --reason "the M is too small"             # at approval again
  assistant resume return-26 --action cancel`

// resumeOptions are resume's argument and flags; HasReason and
// VersionGiven say whether --reason and --version were given.
type resumeOptions struct {
	app *app
	returns.ResumeOptions
	VersionGiven bool
	ExitStatus   bool
}

// newCmdResume is the resume command; runF runs it with its options
// (resumeRun, or a test's).
func newCmdResume(a *app, runF func(context.Context, *resumeOptions) error) *cobra.Command {
	opts := &resumeOptions{app: a}
	c := &cobra.Command{
		Use:     "resume TASK [--reason R | --action approve|cancel|edit|revise [--draft ID | --version N]] [--interrupt ID] [--comment C]",
		Short:   "Answer a task's pending question, or continue a run that stopped part-way",
		Long:    resumeLong,
		Example: resumeExample,
		Args:    exactArgs(1, "resume needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Task, opts.User = args[0], a.user
			opts.HasReason, opts.VersionGiven = c.Flags().Changed("reason"), c.Flags().Changed("version")
			return runF(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Reason, "reason", "", "answer to a need_reason question")
	c.Flags().StringVar(&opts.Action, "action", "", "answer to the approval question: approve, cancel, edit (with --reason) or revise (with --comment)")
	c.Flags().StringVar(&opts.Comment, "comment", "", "with --action revise: what the owner should change")
	c.Flags().StringVar(&opts.DraftID, "draft", "", "the draft id being answered; refused if it is not the current version (stale: exit 3)")
	c.Flags().IntVar(&opts.Version, "version", 0, "the draft version being answered; an older one is stale (exit 3)")
	c.Flags().StringVar(&opts.InterruptID, "interrupt", "", "id of the pending interrupt to answer (when several are pending)")
	c.Flags().BoolVar(&opts.ExitStatus, "exit-status", false, exitStatusUsage)
	return c
}

// resumeRun checks opts before anything is opened, answers the task or
// continues its run, and prints it, after the note of what the answer
// chose, if any.
func resumeRun(ctx context.Context, opts *resumeOptions) error {
	a := opts.app
	// An empty --draft, --interrupt, --action, --comment or --reason was
	// refused before (refuseEmptyFlags).
	if err := returns.ValidTaskID(opts.Task); err != nil {
		return usageErr("%v", err)
	}
	if opts.VersionGiven && opts.Version < 1 {
		return usageErr("--version must be 1 or more, not %d", opts.Version)
	}
	if err := returns.CheckResume(opts.ResumeOptions); err != nil {
		return err
	}
	svc, err := a.oneRunService(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	v, err := svc.Resume(ctx, opts.ResumeOptions)
	if err != nil {
		return err
	}
	if v.Note != "" {
		// An informational line, as every line on stderr: "assistant: "
		// first (docs/cli.md "Errors").
		a.note(fmt.Sprintf("resume %s: %s", v.Task, v.Note))
	}
	return a.finish(v, opts.ExitStatus)
}
