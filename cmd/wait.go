package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

const waitLong = `wait blocks until TASK has an outcome, prints the task as show does, and
exits by that outcome: 0 done (submitted), 5 cancelled, 6 failed (error.code
says why; a draft that expires while it waits is failed with draft_expired),
7 not finished when --timeout passed first, 8 interrupted (stopped, or its
process is gone: run recover). Without --timeout it waits until then, or
until SIGINT (130) or SIGTERM (143).

wait only reads: it answers, recovers and ends nothing. An unknown task is
exit 4 at once; start the task before waiting for it.

On a terminal, wait says on stderr what the task waits for and the commands
that answer it from another terminal, then keeps one status line (time
waited, the draft's remaining validity) until the outcome. When stderr is a
pipe or a file it prints nothing there while it waits.`

// waitOptions are wait's argument and flag.
type waitOptions struct {
	app     *app
	Task    string
	Timeout time.Duration
}

// newCmdWait is the wait command; runF runs it with its options (waitRun,
// or a test's).
func newCmdWait(a *app, runF func(context.Context, *waitOptions) error) *cobra.Command {
	opts := &waitOptions{app: a}
	c := &cobra.Command{
		Use:   "wait TASK [--timeout DURATION]",
		Short: "Wait until a task is decided, ends or its draft expires, and exit by its outcome",
		Long:  waitLong,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant wait return-25 --timeout 5s && echo submitted   # exit 7 after 5s: nobody decided
  assistant resume return-25 --action approve
  assistant wait return-25; echo "exit $?"                  # 0: submitted`,
		Args: exactArgs(1, "wait needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Task = args[0]
			return runF(c.Context(), opts)
		},
	}
	c.Flags().Var(newDurationValue(0, &opts.Timeout), "timeout", "how long to wait at most (30s, 10m, 1d); then exit 7 with the task as it stands. 0 waits until the task has an outcome")
	return c
}

// waitRun waits for the task's outcome, prints the task and exits by it.
func waitRun(ctx context.Context, opts *waitOptions) error {
	a := opts.app
	if err := returns.ValidTaskID(opts.Task); err != nil {
		return usageErr("%v", err)
	}
	if opts.Timeout < 0 {
		return usageErr("--timeout must not be negative, not %s", opts.Timeout)
	}
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	v, err := a.waitOnTerminal(ctx, svc, returns.WaitOptions{Task: opts.Task, User: a.user, Timeout: opts.Timeout})
	if err != nil {
		return err
	}
	if v.Error != nil && v.Error.Hint != "" {
		failure := *v.Error
		failure.Hint = a.pasteable(failure.Hint)
		v.Error = &failure
	}
	err = a.finish(v, true)
	if oe, ok := err.(*outcomeExit); ok && oe.code == ExitNotFinished {
		oe.note = fmt.Sprintf("--timeout %s passed: %s", opts.Timeout, oe.note)
	}
	return err
}
