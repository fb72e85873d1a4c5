package cmd

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"assistant/flow/returns"
)

const batchLong = `batch is a task of its own that walks the rows of FILE.csv in order and
runs each row's return task to its first question or its end. Progress is
checkpointed every --chunk rows; after a crash or a stop, rows already done
are looked up and skipped, never run twice. Every row is validated first: a
file with a bad row is refused whole (exit 2) and nothing is created. A row
whose order an earlier row names is not run: it is reported
duplicate_order, naming the earlier line, and no draft is made for it.

--draft-ttl is how long every row's draft stays valid (whole seconds,
1s to 168h, as start's); it is part of the batch's input, so the same
batch id with another --draft-ttl is refused (exit 3). "assistant show
BATCH --rows" reports each row: its line, task, order, outcome and error
code, unknown orders included.

The same command again continues a batch that was stopped (assistant stop,
Ctrl-C, SIGTERM) or whose process died, to its end, and reports a finished
one as it ended; while another live process runs it, it is exit 3 (busy).

A new batch whose orders another batch of yours holds (one that is running,
was left running by a process that died, or was stopped) is not started:
exit 3, naming that batch and some of the orders, nothing written. Each
order would get a second task, whose draft meets the first one's
application. Let that batch finish first, or give --allow-overlap to start
this one anyway.

Exit status: 130/143 when a signal ended it (the batch is saved; the same
command again continues it). With --exit-status, the batch's outcome: 0
only once the batch ran every row, whatever each row came to (counts, and
"show BATCH --rows"); 6 when the batch failed, 8 when it was stopped by
another process (assistant stop). Without it, 0 when the command did its
work: read "status".

show, stop, resume, recover and history work on a batch as on one task.
A progress bar is drawn on stderr when stderr is a terminal.`

const batchExample = `  printf 'task,order,reason\nr-1,A3003,too small\nr-2,A3004,\n' > rows.csv
  assistant batch b-1 rows.csv --draft-ttl 24h
  assistant show b-1
  assistant show b-1 --rows --output csv`

// batchOptions are batch's arguments and flags.
type batchOptions struct {
	app        *app
	Batch      string
	File       string
	Chunk      int
	TTL        time.Duration
	ExitStatus bool
	// AllowOverlap starts a new batch over orders another batch holds.
	AllowOverlap bool
}

// newCmdBatch is the batch command; runF runs it with its options
// (batchRun, or a test's).
func newCmdBatch(a *app, runF func(context.Context, *batchOptions) error) *cobra.Command {
	opts := &batchOptions{app: a}
	c := &cobra.Command{
		Use:     "batch BATCH FILE.csv",
		Short:   "Run many return tasks from a CSV file (task,order,reason)",
		Long:    batchLong,
		Example: batchExample,
		Args:    exactArgs(2, "batch needs BATCH and FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Batch, opts.File = args[0], args[1]
			return runF(c.Context(), opts)
		},
	}
	c.Flags().IntVar(&opts.Chunk, "chunk", returns.DefaultBatchChunk, "rows per checkpoint (one commit takes at most 100 rows, or the rows of half a second)")
	c.Flags().Var(newDurationValue(300*time.Second, &opts.TTL), "draft-ttl", "how long every row's draft stays valid (whole seconds, 1s to 168h); part of the batch's input")
	c.Flags().BoolVar(&opts.AllowOverlap, "allow-overlap", false, "start a new batch even when a running or stopped batch holds some of its orders")
	c.Flags().BoolVar(&opts.ExitStatus, "exit-status", false, "exit by the batch's outcome: 0 ran every row, 6 failed, 8 interrupted (docs/cli.md \"Exit codes\")")
	return c
}

// batchRun checks the options and every row of the file before anything
// is made, runs the batch (with a progress bar on a terminal) and prints
// it.
func batchRun(ctx context.Context, opts *batchOptions) error {
	a := opts.app
	if err := returns.ValidTaskID(opts.Batch); err != nil {
		return usageErr("batch id: %v", err)
	}
	if opts.Chunk < 1 || opts.Chunk > 10_000 {
		return usageErr("--chunk must be between 1 and 10000, not %d", opts.Chunk)
	}
	if opts.TTL <= 0 {
		return usageErr("--draft-ttl must be positive, not %s", opts.TTL)
	}
	if err := returns.ValidDraftTTL(opts.TTL); err != nil {
		return err
	}
	f, err := openInput(ctx, "batch file", opts.File)
	if err != nil {
		return err
	}
	rows, fp, err := returns.ParseBatch(interruptible(ctx, f))
	f.Close()
	if err != nil {
		return inputError(err)
	}
	svc, err := a.service(ctx, returns.CreateIfMissing)
	if err != nil {
		return err
	}
	finish := a.progress(svc, len(rows))
	v, err := svc.StartBatch(ctx, returns.BatchOptions{Batch: opts.Batch, User: a.user, Rows: rows, Fingerprint: fp, Chunk: opts.Chunk, TTL: opts.TTL, AllowOverlap: opts.AllowOverlap})
	finish() // the bar is gone before the report is printed
	if err != nil {
		return err
	}
	// With --exit-status a batch exits by its outcome: 0 only once it ran
	// every row, so `batch --exit-status … && deploy` never deploys a
	// batch cut short (docs/cli.md "Exit codes"). A signal is 130/143
	// either way (Run).
	return a.finish(v, opts.ExitStatus)
}

// progress draws the progress bar of total rows on stderr, when it is a
// terminal, moved by svc's batch progress; the returned func removes it
// (a no-op without a bar).
func (a *app) progress(svc *returns.Service, total int) (finish func()) {
	if !isTerminal(a.stderr) {
		return func() {}
	}
	set, finish := progressBar(a.stderr, total)
	svc.OnBatchProgress(func(done, _ int) { set(done) })
	return finish
}

// progressBar draws a bar of total rows on w (a terminal): set moves it to
// done rows, finish removes it and returns once it is gone. A batch that
// stops or fails short of its last row leaves the bar incomplete; finish
// drops it all the same.
func progressBar(w io.Writer, total int) (set func(done int), finish func()) {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))
	bar := p.AddBar(int64(total), mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name("rows "), decor.CountersNoUnit("%d/%d")),
		mpb.AppendDecorators(decor.Name(" "), decor.Percentage()))
	return func(done int) { bar.SetCurrent(int64(done)) }, func() { bar.Abort(true); p.Wait() }
}

// writeBatch prints a batch's or a decide run's progress for a person.
func writeBatch(b *returns.BatchProgress) string {
	what := "Rows"
	if b.Of == returns.RowsOfDecisions {
		what = "Decisions"
	}
	s := fmt.Sprintf("%s: %d of %d handled\n", what, b.Position, b.Total)
	for _, stage := range slices.Sorted(maps.Keys(b.Counts)) {
		s += fmt.Sprintf("  %-14s %d\n", stage, b.Counts[stage])
	}
	return s
}
