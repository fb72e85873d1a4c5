package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"assistant/flow/returns"
)

// This file holds the exits that are not errors: the outcome of a task
// (wait, and --exit-status on start, resume, show and batch) and the signal
// that ended a command (docs/cli.md "Exit codes").

// outcomeExit ends a command that printed its view with the exit code of
// the task's outcome. note, when set, is one line for stderr: what to do
// about a task that is not finished or was interrupted. Run prints no
// error object for it: stdout holds the view.
type outcomeExit struct {
	code int
	note string
}

func (e *outcomeExit) Error() string {
	return fmt.Sprintf("exit %d by the task's outcome", e.code)
}

// outcomeCode is the exit code of outcome o.
func outcomeCode(o returns.Outcome) int {
	switch o {
	case returns.OutcomeDone:
		return ExitOK
	case returns.OutcomeCancelled:
		return ExitCancelled
	case returns.OutcomeFailed:
		return ExitFailed
	case returns.OutcomeNotFinished:
		return ExitNotFinished
	}
	return ExitStopped
}

// finish prints the view v a command ends with and, with exitStatus,
// returns the exit by its outcome (nil for done). Run remembers v, to name
// the task when a signal ended the command.
func (a *app) finish(v *returns.View, exitStatus bool) error {
	a.shown = v
	if err := a.render(v); err != nil {
		return err
	}
	return a.exitByOutcome(v, exitStatus)
}

// exitByOutcome is the exit of a command that printed v: nil without
// exitStatus or when v's outcome is done, else the *outcomeExit of its
// outcome (docs/cli.md "Exit codes").
func (a *app) exitByOutcome(v *returns.View, exitStatus bool) error {
	if !exitStatus {
		return nil
	}
	if code := outcomeCode(returns.OutcomeOf(v)); code != ExitOK {
		return &outcomeExit{code: code, note: a.outcomeNote(v, code)}
	}
	return nil
}

// outcomeNote is the stderr line for a task that has not finished or was
// interrupted: what holds it up and the command that goes on. Other
// outcomes need none: the view says how the task ended.
func (a *app) outcomeNote(v *returns.View, code int) string {
	prog, task := a.nextCommandPrefix(), shellQuote(v.Task)
	switch {
	case code == ExitNotFinished && v.Status == returns.StatusWaiting:
		return fmt.Sprintf("task %s is not finished: it waits for a person's answer (`%s show %s`)", v.Task, prog, task)
	case code == ExitNotFinished:
		return fmt.Sprintf("task %s is not finished: a live process runs it (`%s show %s`)", v.Task, prog, task)
	case code == ExitStopped && v.Status == returns.StatusRunning:
		// Its status is running (docs/json.md "The state as it is now"):
		// nobody stopped it; its process ended before it let go.
		return fmt.Sprintf("task %s is running (holder gone): it was left running by a process that is gone; continue it with `%s recover` (or `%s resume %s`)", v.Task, prog, prog, task)
	case code == ExitStopped:
		return fmt.Sprintf("task %s is interrupted: it was stopped; continue it with `%s resume %s`", v.Task, prog, task)
	}
	return ""
}

// signalCause is the cause of the context Execute cancels when a signal
// arrives, so Run can exit 128 plus its number.
type signalCause struct{ sig syscall.Signal }

func (c signalCause) Error() string { return signalName(c.sig) + " received" }

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// notifyContext is signal.NotifyContext for SIGINT and SIGTERM with the
// signal as the context's cause. stop stops the notification.
func notifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			if sig, ok := s.(syscall.Signal); ok {
				cancel(signalCause{sig})
			} else {
				cancel(nil)
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}

// signalExit is the exit code of a command whose context ctx ended: 128
// plus the signal's number (SIGINT 130, SIGTERM 143), and 130 for a
// context cancelled without a signal (a test's), as for SIGINT.
func signalExit(ctx context.Context) int {
	var c signalCause
	if errors.As(context.Cause(ctx), &c) {
		return 128 + int(c.sig)
	}
	return ExitInterrupted
}

// signalNote is the stderr line of a command a signal ended after it
// printed the view v (nil when it printed none).
func (a *app) signalNote(ctx context.Context, v *returns.View) string {
	what := "a signal"
	var c signalCause
	if errors.As(context.Cause(ctx), &c) {
		what = signalName(c.sig)
	}
	switch {
	case v == nil:
		return fmt.Sprintf("interrupted by %s", what)
	case v.Status == returns.StatusInterrupted:
		return fmt.Sprintf("interrupted by %s: task %s stopped at its last checkpoint and nothing done is lost; continue it with `%s resume %s`", what, v.Task, a.nextCommandPrefix(), shellQuote(v.Task))
	}
	return fmt.Sprintf("interrupted by %s as it ended: task %s is %s", what, v.Task, v.Status)
}
