package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"assistant/business"
	"assistant/flow/returns"
)

// This file is how cmd tells errors apart: the one mapping of an error's
// kind to its exit code (exitCode), the usage errors of cobra's own
// refusals, and the wording of the application layer's inputs and hints
// for a terminal (cliWords).

// exitCode is the exit code of err, a command's error passed through
// returns.Classify (docs/cli.md "Exit codes"), by the first kind it
// matches: interrupted 130, inconsistent 1, invalid input 2 (a usage
// error), busy or conflict 3, not found 4. An error of no kind is a
// failure of the command's work: 1.
func exitCode(err error) int {
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	switch returns.KindOf(err) {
	case returns.ErrInterrupted:
		return ExitInterrupted
	case returns.ErrInconsistent:
		// The data dir's files contradict each other: a storage failure.
		return ExitInternal
	case returns.ErrInvalid:
		return ExitUsage
	case returns.ErrBusy, returns.ErrConflict:
		// ErrBusy: a file locked by another process for longer than the
		// busy timeout: the task's data is busy, as with a lease.
		return ExitConflict
	case returns.ErrNotFound:
		return ExitNotFound
	}
	return ExitInternal
}

// errorCodeOf is the "code" of the JSON error object for err, which exits
// with code: "inconsistent" for returns.ErrInconsistent, "busy" for
// returns.ErrBusy (a data file locked past the busy timeout, a lock on the
// server waited on past the lock timeout, a server without a free
// connection slot for the connect timeout: trying again later may
// succeed), else errorCode.
func errorCodeOf(err error, code int) string {
	switch {
	case errors.Is(err, returns.ErrInconsistent):
		return returns.CodeInconsistent
	case errors.Is(err, returns.ErrBusy):
		return CodeBusy
	}
	return errorCode(code)
}

// CodeBusy is the JSON error code of a busy store (exit 3; docs/cli.md
// "Errors").
const CodeBusy = returns.CodeBusy

func errorCode(code int) string {
	switch code {
	case ExitUsage:
		return "invalid_input"
	case ExitConflict:
		return "conflict"
	case ExitNotFound:
		return "not_found"
	case ExitInterrupted, ExitTerminated:
		return "interrupted"
	}
	return "internal"
}

// usageErr is a usage error (returns.ErrInvalid, exit 2) saying
// fmt.Sprintf(format, args...).
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", returns.ErrInvalid, fmt.Sprintf(format, args...))
}

// usageError is err, its message unchanged, as a usage error
// (returns.ErrInvalid): a command line cobra refused, or an input file
// that could not be read.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }

func (e *usageError) Unwrap() error { return e.err }

// Is makes errors.Is match returns.ErrInvalid.
func (e *usageError) Is(target error) bool { return target == returns.ErrInvalid }

// flagRefusal is cobra's refusal err of a flag of command c as a usage
// error: cobra's message, which quotes the values typed, with every
// PostgreSQL URL in it without its password (redactURLs) and a secret
// flag given twice (secretFlags) not quoted at all; and the hint to read
// c's flags, whose command is the program alone (app.flagsRefused): the
// global flags parsed so far may hold the refused value.
func (a *app) flagRefusal(c *cobra.Command, err error) error {
	a.flagsRefused = true
	msg := redactURLs(err.Error())
	if name := secretRefused(c); name != "" {
		// pflag's message quotes the value; a mistyped URL would keep
		// its password past redactURLs.
		msg = fmt.Sprintf("--%s given twice with different values: give it once (neither is shown: it may hold a password)", name)
	}
	if globalPosition(a.args, c, err) {
		// cobra takes an unknown flag before the command's name as one
		// with a value, and so may find another command: the flag stood
		// where the global flags go.
		return &returns.Error{Kind: returns.ErrInvalid, Message: msg,
			Hint: returns.Hint{Before: fmt.Sprintf("run `%s --help` for the global flags, which go before the command", c.Root().CommandPath())}}
	}
	return &returns.Error{Kind: returns.ErrInvalid, Message: msg,
		Hint: returns.Hint{Before: fmt.Sprintf("run `%s --help` for its flags", c.CommandPath())}}
}

// globalPosition reports whether err, a refusal of an unknown long flag
// of command c, names a flag that args give before c's name: in the
// place of the global flags.
func globalPosition(args []string, c *cobra.Command, err error) bool {
	flag, ok := strings.CutPrefix(err.Error(), "unknown flag: ")
	if !ok || !c.HasParent() {
		return false
	}
	for _, arg := range args {
		switch {
		case arg == c.Name():
			return false
		case arg == flag || strings.HasPrefix(arg, flag+"="):
			return true
		}
	}
	return false
}

// newCmdHelp is the help command: cobra's, except that a topic that names
// no command is a usage error (exit 2, one line on stderr) instead of the
// root's help on stdout.
func newCmdHelp(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help provides help for any command in the application.\nSimply type " + root.Name() + " help [path to command] for full details.",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				return &returns.Error{Kind: returns.ErrInvalid, Message: fmt.Sprintf("no help topic %q", strings.Join(args, " ")),
					Hint: returns.Hint{Before: fmt.Sprintf("run `%s --help` for the commands", root.CommandPath())}}
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// usageArgs is check, cobra's check of a command's arguments, with its
// error a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// refusedCommandLine is err, the error ExecuteC returned with command c,
// as a usage error when cobra refused the command line before it chose a
// command to run (an unknown one: c was never called), with nothing of
// this program run. Flag errors and the argument checks of the commands
// are usage errors where they arise (newRoot, usageArgs).
func refusedCommandLine(c *cobra.Command, err error) error {
	if err != nil && c != nil && c.CalledAs() == "" {
		return &usageError{err}
	}
	return err
}

// inputError is err, met opening or reading an input file a person named
// (a batch, decide or orders file, or stdin), as a usage error: the input
// is bad (exit 2), unless err has a kind already (a signal's included),
// or is no fault of the input and stays a failure (exit 1): the temporary
// directory the input is kept in failed (*business.TempError: full,
// read-only, missing), or the system could not read the file
// (*fs.PathError).
func inputError(err error) error {
	var te *business.TempError
	if err == nil || errors.As(err, &te) || errors.As(err, new(*fs.PathError)) || returns.KindOf(returns.Classify(err)) != nil {
		return err
	}
	return &usageError{err}
}

// cliWords words the application layer's inputs and hints for a
// terminal: an input as its flag (--action), a hint's operation as the
// command to paste, in backquotes (`assistant show return-25`). The
// command starts with "assistant" alone; pasteable gives it the global
// flags of the command that prints it.
var cliWords = cliWording{prog: "assistant"}

// cliWording is cliWords with prog, the program and the global flags a
// command starts with ("assistant --data d --user ann").
type cliWording struct{ prog string }

func (cliWording) Input(i returns.Input) string { return "--" + string(i) }

func (w cliWording) Hint(h returns.Hint) string {
	return returns.JoinWords(h, w.operation(h), w)
}

// operation is h's operation on the command line: the command to paste in
// backquotes (commandLine) or, for the same command again, its flags
// alone.
func (w cliWording) operation(h returns.Hint) string {
	if h.Do == "" {
		return strings.Join(w.flags(h), " ")
	}
	if h.Do == returns.DoAnswer {
		task := shellQuote(h.Task)
		if h.Ask == returns.KindNeedReason {
			return fmt.Sprintf("`%s resume %s --reason <reason>`", w.prog, task)
		}
		return fmt.Sprintf("`%s resume %s --action approve` (or cancel, edit --reason <reason>, revise --comment <comment>)", w.prog, task)
	}
	return "`" + w.commandLine(h) + "`"
}

// flags are h.With as flags with their values.
func (w cliWording) flags(h returns.Hint) []string {
	var flags []string
	for _, in := range h.With {
		flags = append(flags, w.Input(in.Input))
		if in.Value != "" {
			flags = append(flags, shellQuote(in.Value))
		}
	}
	return flags
}

// commandLine is the command that does h.Do (not DoAnswer): prog, the
// command, its task and arguments, each quoted for a shell, and its
// flags.
func (w cliWording) commandLine(h returns.Hint) string {
	words := []string{w.prog, string(h.Do)}
	if h.Task != "" {
		words = append(words, shellQuote(h.Task))
	}
	for _, arg := range h.Args {
		words = append(words, shellQuote(arg))
	}
	return strings.Join(append(words, w.flags(h)...), " ")
}

// storeURL matches a PostgreSQL URL quoted in a message, up to the quote,
// space or bracket that ends it.
var storeURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`postgres(?:ql)?://[^\s"'()]*`)
})

// redactURLs is msg with every PostgreSQL URL in it as redactURL gives
// it: without its password, in the user part or the query.
func redactURLs(msg string) string {
	return storeURL().ReplaceAllStringFunc(msg, redactURL)
}
