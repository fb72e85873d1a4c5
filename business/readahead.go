package business

import (
	"context"
	"errors"
	"fmt"
)

// A rowBatch of readAhead holds at most aheadRows records, and ends
// after the record that brings its fields to aheadBytes; the reader hands
// each batch over as the consumer takes it, none waiting between them.
// So two batches are alive, the one read and the one checked: a few hundred kilobytes of fields for rows of usual size, or,
// for a file of huge quoted fields (a record may span many lines), two
// records, where reading one record at a time held one (a 60 MB file of
// 1 MB fields: 23–27 MiB of RSS, as before; with four batches queued,
// 72 MiB).
const (
	aheadRows  = 512
	aheadBytes = 64 << 10
)

// rowBatch is consecutive records of a Table, read ahead (readAhead).
type rowBatch struct {
	lines  []int    // each record's first line
	fields []string // each record's fields, len(spec.Columns) a record
	errs   []error  // each record's *RowError cause (its fields empty), or nil
	end    error    // after the records: io.EOF, or the error that ended the table
}

// reset empties b for reuse.
func (b *rowBatch) reset() {
	clear(b.fields) // keep no strings of the file alive
	b.lines, b.fields, b.errs, b.end = b.lines[:0], b.fields[:0], b.errs[:0], nil
}

// aheadReader is readAhead's reader: a goroutine that reads the records
// of a Table into rowBatches while the caller checks the ones before.
type aheadReader struct {
	ctx   context.Context
	out   chan *rowBatch // batches read, in file order; closed after the last
	spare chan *rowBatch // batches given back (free), for reuse
	quit  chan struct{}  // closed by stop: the reader ends at its next batch
}

// readAhead reads the records of t (Table.Next) in a goroutine of its
// own, ahead of the caller, who takes them in file order with next and
// gives each batch back with free: splitting lines into fields and
// checking them as text take one core, checking each record (the orders'
// rules) the other. The caller must call stop when done. t is read by the
// goroutine only.
func readAhead(ctx context.Context, t *Table) *aheadReader {
	a := &aheadReader{ctx: ctx, out: make(chan *rowBatch), spare: make(chan *rowBatch, 2), quit: make(chan struct{})}
	width := len(t.spec.Columns)
	go func() {
		defer close(a.out)
		for {
			var b *rowBatch
			select {
			case b = <-a.spare:
				b.reset()
			default:
				b = &rowBatch{lines: make([]int, 0, aheadRows), fields: make([]string, 0, aheadRows*width), errs: make([]error, 0, aheadRows)}
			}
			size := 0
			for len(b.lines) < aheadRows && size < aheadBytes && b.end == nil {
				line, rec, err := t.Next()
				var re *RowError
				switch {
				case err == nil:
					b.lines, b.errs = append(b.lines, line), append(b.errs, nil)
					b.fields = append(b.fields, rec...)
					for _, f := range rec {
						size += len(f)
					}
				case errors.As(err, &re):
					b.lines, b.errs = append(b.lines, re.Line), append(b.errs, re.Err)
					for range width {
						b.fields = append(b.fields, "")
					}
				default:
					b.end = err
				}
			}
			select {
			case a.out <- b:
			case <-a.quit:
				return
			}
			if b.end != nil {
				return
			}
		}
	}()
	return a
}

// next returns the next batch of records, or nil after the last one;
// the caller reads the batch's records, then its end: io.EOF after the
// last record, or the error that ended the table. Errors: ctx's once it
// ends, checked at every batch (a reader blocked on its input does not
// hold the caller).
func (a *aheadReader) next() (*rowBatch, error) {
	if err := a.ctx.Err(); err != nil {
		return nil, fmt.Errorf("read orders file: %w", err)
	}
	select {
	case b := <-a.out: // nil once the reader has sent the batch with the end
		return b, nil
	case <-a.ctx.Done():
		return nil, fmt.Errorf("read orders file: %w", a.ctx.Err())
	}
}

// free gives a batch that next returned back for reuse; the caller keeps
// nothing of it.
func (a *aheadReader) free(b *rowBatch) {
	select {
	case a.spare <- b:
	default:
	}
}

// stop tells the reader to end, and does not wait for it: it ends at its
// next hand-over, or, blocked reading its input (a pipe whose writer
// stalled, after the caller stopped for a bad file or a limit), when that
// read returns, with the process at the latest. Nothing it reads is used:
// the caller keeps nothing of t, and may close its input.
func (a *aheadReader) stop() {
	close(a.quit)
}
