// Package cmd is the command line of assistant: cobra commands that parse
// flags, call flow/returns and render the result. Nothing here decides
// anything a test would want to check without a process.
package cmd

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

// Defaults of the global flags (docs/cli.md "Global flags").
const (
	DefaultDataDir = "./data"
	DefaultUser    = "demo-user"
)

// Exit codes (docs/cli.md "Exit codes").
const (
	ExitOK       = 0
	ExitInternal = 1
	ExitUsage    = 2
	ExitConflict = 3
	ExitNotFound = 4
	// Outcome exit codes: the task's outcome (returns.OutcomeOf), always
	// for wait and with --exit-status for start, resume, show and batch.
	// Done is ExitOK.
	ExitCancelled   = 5
	ExitFailed      = 6 // the view's error.code says why
	ExitNotFinished = 7 // a person must answer, a live process runs it, or wait's --timeout passed
	ExitStopped     = 8 // interrupted: stopped, or running with its process gone
	// ExitInterrupted: SIGINT ended the command: before it did its work
	// (while it waited for another process's lock, say), or its own run,
	// which then ended interrupted at its last checkpoint. 128 + SIGINT,
	// as shells report it.
	ExitInterrupted = 130
	// ExitTerminated: SIGTERM ended the command, as SIGINT does; 128 +
	// SIGTERM.
	ExitTerminated = 143
)

// app holds the global flags and the writer pair every command prints to.
type app struct {
	// prog is the program's name as printed next commands start with
	// (ProgramName): "assistant", or "./assistant" for a binary run by
	// its path.
	prog string
	// args are the command line's arguments after the program's name.
	args []string
	data string
	// store is --store URL (or ASSISTANT_STORE): both stores on a
	// PostgreSQL server instead of the data dir; "" for the data dir.
	store string
	// storeFromFlag: store was given as --store (printed next commands
	// name it then, without its password).
	storeFromFlag bool
	// host is how this process's leases name its machine (ASSISTANT_HOST
	// through returns.HostIdentity); "" means returns.ThisHost().
	host string
	user string
	// flagsRefused: cobra refused a flag of this command line, so the
	// values of the global flags are not to be repeated in a printed
	// command (nextCommandPrefix is the program alone).
	flagsRefused bool
	output       string
	stdout       io.Writer
	stderr       io.Writer
	seed         []byte
	// closers close what service opened, when the command has returned.
	closers []func()
	// beforeCreate, when set, runs before service makes the stores (a
	// data dir whose two files are both missing, a database without
	// either schema); its error ends the command with nothing made.
	beforeCreate func() error
	// maxAttempts is --max-attempts (returns.Config.MaxAttempts).
	maxAttempts int
	// clockAhead is the test clock (EnvClock): how far ahead of the wall
	// clock the service reads the time; 0 without one.
	clockAhead time.Duration
	// reported is set by a command whose output already names its error
	// (recover's report): fail then prints only the stderr line.
	reported bool
	// serving is set by serve: a signal is how it ends, and a drain
	// that finished is exit 0, not 128 plus the signal.
	serving bool
	// words is how the service words its hints and inputs; nil means
	// cliWords (serve words them for the API).
	words returns.Wording
	// shown is the view the command printed (finish), to name its task
	// when a signal ended the command.
	shown *returns.View
	// done says what a command that is not a run had finished when a
	// signal came too late to stop it ("the import was committed: …"),
	// for the signal's note.
	done string
	globals
}

// Execute runs the command line with os.Args and exits the process with the
// exit code of docs/cli.md "Exit codes". seed is the teaching orders CSV embedded in the
// binary. It is the only place that calls os.Exit.
//
// SIGINT and SIGTERM cancel the run's context with the signal as its
// cause: the running node is cancelled, its timeline step recorded failed,
// and the task left interrupted at its last checkpoint, as with `assistant
// stop`; then the process exits 130 (SIGINT) or 143 (SIGTERM).
func Execute(seed []byte) {
	ctx, stop := notifyContext(context.Background())
	code := RunAs(ctx, ProgramName(os.Args[0]), os.Args[1:], os.Stdout, os.Stderr, seed)
	stop()
	os.Exit(code)
}

// Run is RunAs of the program found on PATH as "assistant".
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, seed []byte) int {
	return RunAs(ctx, DefaultProgram, args, stdout, stderr, seed)
}

// RunAs runs the command line with args and returns the exit code; stdout
// and stderr receive all output. prog is the program's name that printed
// next commands start with (ProgramName of argv[0]), as it can be pasted
// into a shell. Tests call it without a process.
func RunAs(ctx context.Context, prog string, args []string, stdout, stderr io.Writer, seed []byte) int {
	a := &app{prog: prog, args: args, stdout: stdout, stderr: stderr, seed: seed}
	root := a.newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	c, err := root.ExecuteContextC(ctx)
	err = refusedCommandLine(c, err)
	for _, closeStores := range a.closers {
		closeStores()
	}
	var oe *outcomeExit
	if ctx.Err() != nil && err == nil && a.serving {
		return ExitOK
	}
	if ctx.Err() != nil && (err == nil || errors.As(err, &oe)) {
		// A signal ended the command's own run, which saved what it did
		// and printed the task: the signal's code, whatever the outcome.
		note := a.signalNote(ctx, a.shown)
		if a.done != "" {
			note += " after " + a.done
		}
		a.note(note)
		return signalExit(ctx)
	}
	if err == nil {
		return ExitOK
	}
	if errors.As(err, &oe) {
		if oe.note != "" {
			a.note(oe.note)
		}
		return oe.code
	}
	err = returns.Classify(err)
	code := exitCode(err)
	if code == ExitInterrupted {
		// One clean line: the cancelled context's own text ("context
		// canceled") tells a person nothing the signal's name does not.
		code = signalExit(ctx)
		msg := a.signalNote(ctx, nil) + " before it was done"
		if note := interruptNote(c); note != "" {
			msg += "; " + note
		}
		err = errors.New(msg)
	}
	a.fail(err, code)
	return code
}

const rootLong = `assistant prepares a return request for an order, parks at an approval
question and exits. A later process shows or answers that question and
submits the application at most once, however often it is retried.

State lives in two SQLite files in --data: checkpoints.sqlite (the run) and
business.sqlite (orders, drafts, applications, tasks); or, with --store
postgres://…, in the schemas checkpoints and business of one PostgreSQL
database that many machines share.`

// newRoot is the root command with the global flags and every command.
// NewRootCmd returns the command tree Run executes, printing to stdout and
// stderr, for tools that read the tree rather than run it (cmd/gendocs
// writes docs/cli from it). Run, not Execute on this tree, maps errors to
// exit codes and closes the stores.
func NewRootCmd(stdout, stderr io.Writer, seed []byte) *cobra.Command {
	return (&app{stdout: stdout, stderr: stderr, seed: seed}).newRoot()
}

func (a *app) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "assistant",
		Short: "Prepare return requests that wait for a person's approval and survive anything in between",
		Long:  rootLong,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant show return-25
  assistant resume return-25 --action approve`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().StringVar(&a.data, "data", DefaultDataDir, "data directory holding checkpoints.sqlite and business.sqlite")
	root.PersistentFlags().StringVar(&a.store, "store", "", "PostgreSQL URL (postgres://…) holding both stores instead of --data (env "+EnvStore+")")
	root.PersistentFlags().StringVar(&a.user, "user", DefaultUser, "user the tasks belong to (an identity label, not authentication)")
	root.PersistentFlags().StringVar(&a.output, "output", "", "output format: json, text, or csv for list and show --rows (default: json when stdout is not a terminal)")
	root.PersistentFlags().IntVar(&a.maxAttempts, "max-attempts", returns.DefaultMaxAttempts, "how often a node of a task may fail in a row (crash, error) before its run ends failed (attempts_exhausted)")
	a.addGlobalFlags(root)
	root.PersistentPreRunE = a.withTeachingOrders(root, a.checkGlobals)
	root.SetFlagErrorFunc(a.flagRefusal)
	root.SetHelpCommand(newCmdHelp(root))
	root.AddCommand(newCmdStart(a, startRun), newCmdShow(a, showRun), newCmdResume(a, resumeRun), newCmdList(a, listRun),
		newCmdStop(a, stopRun), newCmdRecover(a, recoverRun), newCmdBatch(a, batchRun), newCmdOrders(a),
		newCmdVariants(a, variantsRun), newCmdHistory(a, historyRun), newCmdPrune(a, pruneRun), newCmdVerify(a, verifyRun),
		newCmdBackup(a, backupRun), newCmdWait(a, waitRun), newCmdApprovers(a), newCmdDecide(a, decideRun),
		newCmdServe(a, serveRun))
	refuseUnknownSubcommands(root) // after AddCommand: it walks the commands
	refuseRepeatedFlags(root)      // after AddCommand: it walks the commands
	a.addCompletions(root)
	return root
}

// checkGlobals checks the global flags (and the environment variables
// that stand in for them) of command c before it runs: an empty or blank
// value first, --json, --output, --store, --user and --max-attempts.
// Errors: ErrInvalid.
func (a *app) checkGlobals(c *cobra.Command, args []string) error {
	// An empty or blank flag value is refused before anything else
	// (docs/cli.md "Conventions"), --data "" included.
	if err := refuseEmptyFlags(c); err != nil {
		return err
	}
	if err := a.applyGlobals(c, args); err != nil {
		return err
	}
	if err := a.applyTestClock(c); err != nil {
		return err
	}
	switch a.output {
	case "":
		a.output = "text"
		if !isTerminal(a.stdout) {
			a.output = "json"
		}
	case "json", "text":
	case outputCSV:
		if err := csvAllowed(c); err != nil {
			return err
		}
	default:
		return usageErr("--output must be json or text, not %q (csv works with list and show --rows)", a.output)
	}
	if err := a.applyStore(c); err != nil {
		return err
	}
	if err := returns.ValidUser(a.user); err != nil {
		from := "--user"
		if !c.Flags().Changed("user") && os.Getenv(EnvUser) != "" {
			from = EnvUser
		}
		return usageErr("%s: %v", from, err)
	}
	if a.maxAttempts < 1 {
		return usageErr("--max-attempts must be at least 1, not %d", a.maxAttempts)
	}
	return nil
}
