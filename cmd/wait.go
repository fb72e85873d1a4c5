package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

func (a *app) newWait() *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "wait TASK [--timeout DURATION]",
		Short: "Wait until a task is decided, ends or its draft expires, and exit by its outcome",
		Long: `wait blocks until TASK has an outcome, prints the task as show does, and
exits by that outcome: 0 done (submitted), 5 cancelled, 6 failed (error.code
says why; a draft that expires while it waits is failed with draft_expired),
7 not finished when --timeout passed first, 8 interrupted (stopped, or its
process is gone: run recover). Without --timeout it waits until then, or
until SIGINT (130) or SIGTERM (143).

wait only reads: it answers, recovers and ends nothing. An unknown task is
exit 4 at once; start the task before waiting for it.`,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant wait return-25 --timeout 1h && echo submitted
  assistant wait return-25; echo "exit $?"`,
		Args: exactArgs(1, "wait needs TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := returns.ValidTaskID(args[0]); err != nil {
				return usageErr("%v", err)
			}
			if timeout < 0 {
				return usageErr("--timeout must not be negative, not %s", timeout)
			}
			svc, err := a.service(c.Context(), false)
			if err != nil {
				return err
			}
			v, err := svc.Wait(c.Context(), returns.WaitOptions{Task: args[0], User: a.user, Timeout: timeout})
			if err != nil {
				return err
			}
			err = a.finish(v, true)
			if oe, ok := err.(*outcomeExit); ok && oe.code == ExitNotFinished {
				oe.note = fmt.Sprintf("--timeout %s passed: %s", timeout, oe.note)
			}
			return err
		},
	}
	c.Flags().Var(newDurationValue(0, &timeout), "timeout", "how long to wait at most (30s, 10m, 1d); then exit 7 with the task as it stands. 0 waits until the task has an outcome")
	return c
}
