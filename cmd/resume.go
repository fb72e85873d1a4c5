package cmd

import (
	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

func (a *app) newResume() *cobra.Command {
	var (
		opts       returns.ResumeOptions
		exitStatus bool
	)
	c := &cobra.Command{
		Use:   "resume TASK [--reason R | --action approve|cancel [--draft ID]] [--interrupt ID]",
		Short: "Answer a task's pending question, or continue a run that stopped part-way",
		Long: `resume answers exactly the question the task waits on: --reason when a
reason is asked, --action approve|cancel at the approval question. An answer
of the wrong kind is refused (exit 2) and nothing changes. --draft, when
given, must name the draft waiting for approval.

Without an answer, resume continues a run that was stopped or crashed.
On a task that has ended it prints the task and changes nothing; approving
a submitted task again returns the same application with reused: true.`,
		Example: `  assistant resume return-25 --action approve
  assistant resume return-26 --reason "wrong colour"
  assistant resume return-25 --action cancel --draft d_0190...`,
		Args: exactArgs(1, "resume needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Task, opts.User = args[0], a.user
			opts.HasReason = c.Flags().Changed("reason")
			for _, f := range []string{"draft", "interrupt", "action"} {
				if c.Flags().Changed(f) && c.Flags().Lookup(f).Value.String() == "" {
					return usageErr("--%s must not be empty", f)
				}
			}
			if err := returns.ValidTaskID(opts.Task); err != nil {
				return usageErr("%v", err)
			}
			if opts.HasReason && opts.Action != "" {
				return usageErr("give --reason or --action, not both")
			}
			if opts.Action != "" && opts.Action != returns.ActionApprove && opts.Action != returns.ActionCancel {
				return usageErr("--action must be approve or cancel, not %q", opts.Action)
			}
			svc, err := a.service(c.Context(), false)
			if err != nil {
				return ran(err)
			}
			v, err := svc.Resume(c.Context(), opts)
			if err != nil {
				return ran(err)
			}
			return a.finish(v, exitStatus)
		},
	}
	c.Flags().StringVar(&opts.Reason, "reason", "", "answer to a need_reason question")
	c.Flags().StringVar(&opts.Action, "action", "", "answer to the approval question: approve or cancel")
	c.Flags().StringVar(&opts.DraftID, "draft", "", "the draft id being approved; refused if it is not the pending draft")
	c.Flags().StringVar(&opts.InterruptID, "interrupt", "", "id of the pending interrupt to answer (when several are pending)")
	c.Flags().BoolVar(&exitStatus, "exit-status", false, "exit by the task's outcome: 5 cancelled, 6 failed, 7 not finished, 8 interrupted (docs/cli.md \"Exit codes\")")
	return c
}
