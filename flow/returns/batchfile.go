package returns

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"assistant/business"
	"assistant/internal/termtext"
	"assistant/runs"
)

// MaxBatchFileBytes is the largest batch file ParseBatch reads; with
// MaxBatchRows it bounds what a batch holds in memory while it validates
// and stores its rows. A file over either limit is refused whole.
const MaxBatchFileBytes = 64 << 20

// batchSpec is a batch file's columns: found by name as in an orders file
// (business.OpenTable: case and spacing normalised, ',' ';' or tab, UTF-8
// or UTF-16, other columns ignored), with a few aliases.
var batchSpec = business.TableSpec{What: "batch file", Refused: "nothing was created", Columns: []business.Column{
	{Name: "task", Aliases: []string{"task id"}, Required: true},
	{Name: "order", Aliases: []string{"order id"}, Required: true},
	{Name: "reason", Aliases: []string{"return reason"}, Required: true},
}}

// ParseBatch reads a batch CSV (columns task, order and reason, found by
// name; reason may be empty) and validates every row. It returns the rows
// and the file's fingerprint (hex, the first 16 bytes of the SHA-256 of
// its bytes). The file is read as a stream, record by record, and hashed
// as it is read. A bad file is ErrInvalid naming up to ten bad lines by
// number (a bad header saying what it found); a file over
// MaxBatchFileBytes bytes or MaxBatchRows rows is ErrInvalid (and
// business.ErrTooLarge) saying so. Nothing is created from a refused file,
// and no file is ever cut to fit.
func ParseBatch(r io.Reader) ([]runs.BatchRow, string, error) {
	seen := map[string]int{}
	return readRows(r, batchSpec, "split it into several batches", func(n, line int, rec []string) (runs.BatchRow, error) {
		row, err := batchRecord(n, rec, seen)
		if err != nil {
			return row, err
		}
		seen[row.TaskID] = line
		row.Line = line
		return row, nil
	})
}

// readRows reads a file of rows laid out by spec (a batch or a decide
// file): record turns each record, with its row number (from 1) and its
// line, into a row or says what is wrong with it. It returns the rows and
// the fingerprint of the whole file (the first 16 bytes of its SHA-256, in
// hex). Errors, ErrInvalid unless reading failed, nothing made of the file:
// a bad header, over MaxBatchFileBytes, more than MaxBatchRows rows (split
// says how to split it), no rows, or bad lines (the first maxBadLines
// named).
func readRows(r io.Reader, spec business.TableSpec, split string, record func(n, line int, rec []string) (runs.BatchRow, error)) ([]runs.BatchRow, string, error) {
	var rows []runs.BatchRow
	_, fp, err := scanRows(r, spec, split, record, func(row runs.BatchRow) error {
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return rows, fp, nil
}

// scanRows is readRows without keeping the rows: keep is called with each
// good row as it is read (while bad rows may still follow: a caller that
// stores them undoes that on an error), and it returns the number of rows
// and the file's fingerprint. Errors: readRows', keep's.
func scanRows(r io.Reader, spec business.TableSpec, split string, record func(n, line int, rec []string) (runs.BatchRow, error), keep func(runs.BatchRow) error) (int, string, error) {
	sum := sha256.New()
	t, err := business.OpenTable(io.TeeReader(r, sum), spec, MaxBatchFileBytes)
	if err != nil {
		return 0, "", batchReadError(err)
	}
	if spec.What == decideSpec.What {
		if err := onlyKnownColumns(spec, t.Header); err != nil {
			return 0, "", err
		}
	}
	var (
		bad []string
		n   int
	)
	for {
		line, rec, err := t.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var re *business.RowError
		if errors.As(err, &re) {
			n++
			bad = append(bad, re.Error())
			continue
		}
		if err != nil {
			return 0, "", batchReadError(err)
		}
		n++
		if n > MaxBatchRows {
			return 0, "", fmt.Errorf("%w: %s has more than %d rows (%w); %s, %s", ErrInvalid, spec.What, MaxBatchRows, business.ErrTooLarge, split, spec.Refused)
		}
		row, err := record(n, line, rec)
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", line, err))
			continue
		}
		if len(bad) == 0 {
			if err := keep(row); err != nil {
				return 0, "", err
			}
		}
	}
	switch {
	case n == 0:
		return 0, "", fmt.Errorf("%w: %s has no rows", ErrInvalid, spec.What)
	case len(bad) > 0:
		return 0, "", badRows(spec, bad)
	}
	// The fingerprint is of the whole file: read what the table left.
	if _, err := io.Copy(io.Discard, io.TeeReader(r, sum)); err != nil {
		return 0, "", fmt.Errorf("read %s: %w", spec.What, err)
	}
	return n, hex.EncodeToString(sum.Sum(nil)[:16]), nil
}

// batchReadError is the error of a batch file that cannot be read on: a
// bad header, over the size limit or a line too long (all ErrInvalid), or
// a read failure.
func batchReadError(err error) error {
	var (
		he *business.HeaderError
		ie *business.ImportError
	)
	switch {
	case errors.As(err, &he), errors.As(err, &ie), errors.Is(err, business.ErrTooLarge):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return err
}

// batchRecord turns record rec, row rowNo of the file, into a BatchRow, or
// says what is wrong with it; seen maps the task ids of earlier rows to
// their lines.
func batchRecord(rowNo int, rec []string, seen map[string]int) (runs.BatchRow, error) {
	row := runs.BatchRow{RowNo: rowNo, TaskID: rec[0], OrderID: rec[1], Reason: rec[2]}
	switch {
	case ValidTaskID(row.TaskID) != nil:
		return row, ValidTaskID(row.TaskID)
	case ValidTaskID(row.OrderID) != nil:
		return row, ValidOrderID(row.OrderID)
	case row.Reason != "" && ValidReason(row.Reason) != nil:
		return row, ValidReason(row.Reason)
	case seen[row.TaskID] != 0:
		return row, fmt.Errorf("task %s already on line %d", row.TaskID, seen[row.TaskID])
	}
	return row, nil
}

// badRows is the ErrInvalid of a file laid out by spec with bad lines,
// naming the first maxBadLines of them.
func badRows(spec business.TableSpec, bad []string) error {
	more := ""
	if len(bad) > maxBadLines {
		more = fmt.Sprintf(" (and %d more)", len(bad)-maxBadLines)
		bad = bad[:maxBadLines]
	}
	return fmt.Errorf("%w: %s has bad rows, %s: %s%s", ErrInvalid, spec.What, spec.Refused, strings.Join(bad, "; "), more)
}

// onlyKnownColumns refuses (ErrInvalid) a header with a column that spec
// does not read, naming it: a decide file's rows are decisions, and a
// column decide would ignore (a version, say) must not change silently
// what a row decides. Empty header names (a trailing delimiter) pass.
func onlyKnownColumns(spec business.TableSpec, header []string) error {
	known := map[string]bool{}
	var names []string
	for _, c := range spec.Columns {
		names = append(names, c.Name)
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			known[business.NormalizeHeader(n)] = true
		}
	}
	for _, h := range header {
		if n := business.NormalizeHeader(h); n != "" && !known[n] {
			return errorf(Hint{Before: "the draft column names the draft version a decision is for, by its draft id, as", Do: DoList, With: []InputValue{{InputOutput, "csv"}}, After: "prints it"},
				"%w: %s has a column it does not read, %s: its columns are %s; %s", ErrInvalid, spec.What, termtext.Quote(h), strings.Join(names, ", "), spec.Refused)
		}
	}
	return nil
}
