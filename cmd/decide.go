package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"assistant/business"
	"assistant/flow/returns"
)

// maxRefusedShown is how many refused rows decide's text output lists;
// `show ID --rows` has them all.
const maxRefusedShown = 20

const decideLong = `decide reads rows of task, action (approve or cancel) and, optionally,
draft, from FILE.csv or from stdin (-), and gives each task its decision as
the current user, as "assistant resume TASK --action A --draft D" would:
the same checks, the same outcome. Many rows go into one commit, as a
batch's do, and every decision is durable before the command reports it.

A row the answer path refuses is reported with the code the command would
exit with, and the other rows go on: invalid_input (a --draft that is not
the task's pending draft, a task that waits for a reason), conflict (a task
that ended otherwise, or a live process runs it), not_found (an unknown
task, or another user's: they read alike). A task named on an earlier row
is reported duplicate_task and not decided again. A file with a bad row (an
empty or unknown action, a bad task id) is refused whole (exit 2), and
nothing is decided.

A decide run is a batch task of its own, named decide-… after the user
and the file's bytes (or --id): show, show --rows, stop, resume, recover
and wait work on it; running the same file again continues a run that was
killed or stopped (assistant stop, Ctrl-C, SIGTERM) to its end, and prints
the report of one that finished, with one line on stderr saying when it
ran and how many rows were refused: refused rows are never retried by
running the same file again; pass --id NEW to run it as a new run. While
another live process runs it, it is exit 3 (busy). A progress bar is drawn on stderr when stderr is a terminal.

Exit status: 130/143 when a signal ended it (the run is saved; the same
command again continues it). With --exit-status, the run's outcome: 0 only
once every row was handled, whatever each row came to (see counts and
rows); 6 when the run failed, 8 when it was stopped by another process.
Without it, 0 when the command did its work: read "status".`

const decideExample = `  assistant start r-1 A3003 --reason "too small"
  assistant start r-2 A3004 --reason "wrong colour"
  printf 'task,action,draft\nr-1,approve,\nr-2,cancel,\n' > decisions.csv
  assistant decide decisions.csv
  assistant start r-3 A3008 --reason "broken"
  assistant list --status waiting --output csv | sed 's/,,/,approve,/' | assistant decide -`

// decideOptions are decide's argument (a file, or - for Stdin) and flags.
type decideOptions struct {
	app        *app
	File       string
	Stdin      io.Reader
	ID         string
	Chunk      int
	ExitStatus bool
}

// newCmdDecide is the decide command; runF runs it with its options
// (decideRun, or a test's).
func newCmdDecide(a *app, runF func(context.Context, *decideOptions) error) *cobra.Command {
	opts := &decideOptions{app: a}
	c := &cobra.Command{
		Use:     "decide FILE.csv|-",
		Short:   "Give many waiting tasks their decisions from a CSV file (task,action[,draft])",
		Long:    decideLong,
		Example: decideExample,
		Args:    exactArgs(1, "decide needs FILE (or - for stdin)"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.File, opts.Stdin = args[0], c.InOrStdin()
			return runF(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.ID, "id", "", "name the decide run (default: decide- and a hash of the user and the file)")
	c.Flags().IntVar(&opts.Chunk, "chunk", returns.DefaultBatchChunk, "rows per checkpoint (one commit takes at most 100 rows, or the rows of half a second)")
	c.Flags().BoolVar(&opts.ExitStatus, "exit-status", false, "exit by the run's outcome: 0 handled every row, 6 failed, 8 interrupted (docs/cli.md \"Exit codes\")")
	return c
}

// decideRun checks the options and every row of the file (read from
// stdin for "-"), runs the decide run (with a progress bar on a
// terminal) and prints it with its rows; a run that finished before is
// only printed again, and a line on stderr says so.
func decideRun(ctx context.Context, opts *decideOptions) error {
	a := opts.app
	if opts.ID != "" {
		if err := returns.ValidTaskID(opts.ID); err != nil {
			return usageErr("--id: %v", err)
		}
	}
	if opts.Chunk < 1 || opts.Chunk > 10_000 {
		return usageErr("--chunk must be between 1 and 10000, not %d", opts.Chunk)
	}
	file, closeFile, err := openDecisions(ctx, opts.Stdin, opts.File)
	if err != nil {
		return err
	}
	defer closeFile()
	// decide answers tasks; it never makes a data dir (a typo in --data
	// is exit 4, not a fresh dir of nothing found).
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return err
	}
	// A run that finished before only prints its report again: say so,
	// once, after the report (refused rows are not retried).
	again, err := svc.RanBefore(ctx, opts.ID, a.user, file.Fingerprint)
	if err != nil {
		return err
	}
	finish := a.progress(svc, file.Rows)
	v, err := svc.StartDecide(ctx, returns.DecideOptions{ID: opts.ID, User: a.user, File: file, Chunk: opts.Chunk})
	finish() // the bar is gone before the report is printed
	if err != nil {
		return err
	}
	// With --exit-status a decide run exits by its outcome, as a batch
	// does: 0 only once every row was handled.
	err = a.finishDecide(v, a.decideRows(ctx, svc, v.Task), opts.ExitStatus)
	if again != "" {
		a.note(again)
	}
	return err
}

// decideRows is the report of decide run task's rows, read even when a
// signal ended the run (the run saved them, and the command prints where
// it stopped), streamed a page at a time, never held whole. A row's error
// quotes its commands pasteable, as resume prints them.
func (a *app) decideRows(ctx context.Context, svc *returns.Service, task string) rowSource {
	return func(fn func(returns.RowReport) error) error {
		_, err := svc.EachRow(context.WithoutCancel(ctx), task, a.user, func(r returns.RowReport) error {
			r.Error = a.pasteable(r.Error)
			return fn(r)
		})
		return err
	}
}

// openDecisions checks the decide file named by arg, or stdin for "-"
// (returns.ReadDecideFile), and returns it with the function that closes
// it; ctx's end (a signal) ends a read of a pipe that stalls
// (interruptible). The file is read again when the run stores its rows, so stdin, and
// any file that is not a regular one (a pipe, a FIFO, /dev/stdin, a
// process substitution: nothing to seek back through), is copied to a
// temporary file first (spool) and read from there, as "-" is. A
// temporary directory that fails is exit 1, not bad input (inputError).
func openDecisions(ctx context.Context, stdin io.Reader, arg string) (*returns.DecideFile, func(), error) {
	var (
		f       *os.File
		cleanup func()
		err     error
	)
	if arg == "-" {
		f, cleanup, err = spool(interruptible(ctx, stdin), "stdin")
	} else if f, err = openInput(ctx, "decide file", arg); err != nil {
		// err is ErrInvalid in one line, or ctx's (a signal)
	} else if st, serr := f.Stat(); serr == nil && !st.Mode().IsRegular() {
		in := f
		f, cleanup, err = spool(interruptible(ctx, in), "decide file")
		in.Close()
	} else {
		cleanup = func() { f.Close() }
	}
	if err != nil {
		return nil, nil, inputError(err)
	}
	file, err := returns.ReadDecideFile(f)
	if err != nil {
		cleanup()
		return nil, nil, inputError(err)
	}
	return file, cleanup, nil
}

// spool copies r (what names it: "stdin", "decide file"), up to one byte
// over returns.MaxBatchFileBytes (which the check refuses), to a new file
// in $TMPDIR and returns it at its start, with the function that closes
// it. The file is unlinked as soon as it is made (business.CreateTemp), so
// nothing of it is left behind whatever ends the process, a signal or a
// kill -9 included. Errors: *business.TempError when the temporary file
// cannot be made, written or read back; a failure to read r.
func spool(r io.Reader, what string) (*os.File, func(), error) {
	f, closeFile, err := business.CreateTemp("assistant-decide-*.csv")
	if err != nil {
		return nil, nil, fmt.Errorf("keep %s in a temporary file: %w", what, err)
	}
	cleanup := func() { closeFile() }
	if _, err := io.Copy(tempWriter{f}, io.LimitReader(r, returns.MaxBatchFileBytes+1)); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("read %s: %w", what, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("read %s: %w", what, &business.TempError{Dir: os.TempDir(), Err: err})
	}
	return f, cleanup, nil
}

// tempWriter writes to a temporary file; its write errors are
// *business.TempError, so that they read apart from the input's.
type tempWriter struct{ f *os.File }

func (w tempWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = &business.TempError{Dir: os.TempDir(), Err: err}
	}
	return n, err
}

// rowSource calls fn with each row of a run's report, in file order
// (returns.Service.EachRow); its error is fn's or the reading's.
type rowSource func(fn func(returns.RowReport) error) error

// finishDecide prints a decide run's view with its rows (JSON), or its
// card and the refused rows (text), and with exitStatus exits by the
// run's outcome as finish does. The rows come from each, streamed.
func (a *app) finishDecide(v *returns.View, each rowSource, exitStatus bool) error {
	if a.output == "json" {
		a.shown = v
		if err := a.writeDecideJSON(v, each); err != nil {
			return err
		}
		return a.exitByOutcome(v, exitStatus)
	}
	err := a.finish(v, exitStatus)
	var oe *outcomeExit
	if err != nil && !errors.As(err, &oe) {
		return err
	}
	refused, rerr := refusedRows(each, a.nextCommandPrefix(), v.Task)
	if rerr != nil {
		return rerr
	}
	if _, werr := io.WriteString(a.stdout, refused); werr != nil {
		return werr
	}
	return err
}

// emptyRows is how writeJSON ends a DecideView whose rows are empty:
// the rows key is the view's last.
const emptyRows = "  \"rows\": []\n}\n"

// writeDecideJSON prints what writeJSON prints for returns.DecideView{v,
// every row}, byte for byte (the --json selection included), with the
// rows streamed from each: the view is rendered with no rows, and the
// rows, each rendered as writeJSON renders a list's element, are written
// where its empty list was. Memory stays one page of rows whatever the
// run's size.
func (a *app) writeDecideJSON(v *returns.View, each rowSource) error {
	var head bytes.Buffer
	var sel *jsonSelection
	w := io.Writer(&head)
	if s, ok := a.stdout.(*selectingWriter); ok {
		sel = s.sel
		w = &selectingWriter{Writer: &head, sel: sel}
	}
	if err := writeJSON(w, returns.DecideView{View: v, Rows: []returns.RowReport{}}); err != nil {
		return err
	}
	out := bufio.NewWriter(plainWriter(a.stdout))
	if !bytes.HasSuffix(head.Bytes(), []byte(emptyRows)) {
		// No rows key (a --json selection without it): nothing to stream.
		if _, err := out.Write(head.Bytes()); err != nil {
			return err
		}
		return out.Flush()
	}
	if _, err := out.Write(head.Bytes()[:head.Len()-len(emptyRows)]); err != nil {
		return err
	}
	n := 0
	var compact, indented bytes.Buffer
	err := each(func(r returns.RowReport) error {
		tree, err := toTree(reflect.ValueOf(r))
		if err != nil {
			return err
		}
		if sel != nil && sel.list == "rows" {
			// The selection of each element's fields, as writeJSON applies it.
			tree = sel.apply(&object{keys: []string{"rows"}, vals: []any{[]any{tree}}}).vals[0].([]any)[0]
		}
		compact.Reset()
		indented.Reset()
		if err := writeTree(&compact, tree); err != nil {
			return err
		}
		if err := json.Indent(&indented, compact.Bytes(), "    ", "  "); err != nil {
			return err
		}
		sep := ",\n    "
		if n == 0 {
			sep = "  \"rows\": [\n    "
		}
		n++
		out.WriteString(sep)
		_, err = out.Write(indented.Bytes())
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		out.WriteString(emptyRows)
	} else {
		out.WriteString("\n  ]\n}\n")
	}
	return out.Flush()
}

// refusedRows lists, for a person, the rows that were refused or whose
// task failed (up to maxRefusedShown), and where to see them all; the rows
// come from each, and only those listed are kept.
func refusedRows(each rowSource, prog, task string) (string, error) {
	var b strings.Builder
	n := 0
	err := each(func(r returns.RowReport) error {
		if r.ErrorCode == "" {
			return nil
		}
		if n < maxRefusedShown {
			fmt.Fprintf(&b, "  line %d  %s  %s: %s\n", r.Line, termSafe(r.Task), r.ErrorCode, termSafe(r.Error))
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		return "", err
	}
	head := fmt.Sprintf("%d row(s) not applied as asked:\n", n)
	if n > maxRefusedShown {
		b.WriteString(fmt.Sprintf("  … and %d more\n", n-maxRefusedShown))
	}
	return head + b.String() + fmt.Sprintf("All rows: %s show %s --rows\n", prog, shellQuote(task)), nil
}
