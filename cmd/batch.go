package cmd

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"assistant/flow/returns"
)

func (a *app) newBatch() *cobra.Command {
	var (
		chunk      int
		exitStatus bool
	)
	c := &cobra.Command{
		Use:   "batch BATCH FILE.csv",
		Short: "Run many return tasks from a CSV file (task,order,reason)",
		Long: `batch is a task of its own that walks the rows of FILE.csv in order and
runs each row's return task to its first question or its end. Progress is
checkpointed every --chunk rows; after a crash or a stop, rows already done
are looked up and skipped, never run twice. Every row is validated first: a
file with a bad row is refused whole (exit 2) and nothing is created.

show, stop, resume, recover and history work on a batch as on one task.
A progress bar is drawn on stderr when stderr is a terminal.`,
		Example: `  printf 'task,order,reason\nr-1,A3003,too small\nr-2,A3004,\n' > rows.csv
  assistant batch b-1 rows.csv
  assistant show b-1`,
		Args: exactArgs(2, "batch needs BATCH and FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := returns.ValidTaskID(args[0]); err != nil {
				return usageErr("batch id: %v", err)
			}
			if chunk < 1 || chunk > 10_000 {
				return usageErr("--chunk must be between 1 and 10000, not %d", chunk)
			}
			f, err := os.Open(args[1])
			if err != nil {
				return usageErr("batch file: %v", err)
			}
			rows, fp, err := returns.ParseBatch(f)
			f.Close()
			if err != nil {
				return err
			}
			svc, err := a.service(c.Context(), true)
			if err != nil {
				return ran(err)
			}
			finish := func() {}
			if isTerminal(a.stderr) {
				var set func(done int)
				set, finish = progressBar(a.stderr, len(rows))
				svc.OnBatchProgress(func(done, _ int) { set(done) })
			}
			v, err := svc.StartBatch(c.Context(), returns.BatchOptions{Batch: args[0], User: a.user, Rows: rows, Fingerprint: fp, Chunk: chunk})
			finish() // the bar is gone before the report is printed
			if err != nil {
				return ran(err)
			}
			return a.finish(v, exitStatus)
		},
	}
	c.Flags().IntVar(&chunk, "chunk", returns.DefaultBatchChunk, "rows per checkpoint (one commit takes at most 100 rows, or the rows of half a second)")
	c.Flags().BoolVar(&exitStatus, "exit-status", false, "exit by the batch's outcome: 0 ran every row, 6 failed, 8 interrupted (docs/cli.md \"Exit codes\")")
	return c
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

// writeBatch prints a batch's progress for a person.
func writeBatch(b *returns.BatchProgress) string {
	s := fmt.Sprintf("Rows: %d of %d handled\n", b.Position, b.Total)
	for _, stage := range slices.Sorted(maps.Keys(b.Counts)) {
		s += fmt.Sprintf("  %-14s %d\n", stage, b.Counts[stage])
	}
	return s
}
