package returns

import (
	"bufio"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"assistant/business"
	"assistant/runs"
)

// MaxBatchFileBytes is the largest batch file ParseBatch reads; with
// MaxBatchRows it bounds what a batch holds in memory while it validates
// and stores its rows. A file over either limit is refused whole.
const MaxBatchFileBytes = 64 << 20

// ParseBatch reads a batch CSV (header task,order,reason; reason may be
// empty) and validates every row. It returns the rows and the file's
// fingerprint (hex, the first 16 bytes of its SHA-256). The file is read as
// a stream, record by record, and hashed as it is read. A bad file is
// ErrInvalid naming up to ten bad lines by number; a file over
// MaxBatchFileBytes bytes or MaxBatchRows rows is ErrInvalid (and
// business.ErrTooLarge) saying so. Nothing is created from a refused file,
// and no file is ever cut to fit.
func ParseBatch(r io.Reader) ([]runs.BatchRow, string, error) {
	sum := sha256.New()
	cr := csv.NewReader(bufio.NewReaderSize(business.CapReader(io.TeeReader(r, sum), MaxBatchFileBytes), 64<<10))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var (
		bad  []string
		seen = map[string]int{}
		rows []runs.BatchRow
		line int
	)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", batchReadError(err)
		}
		line++
		if line == 1 {
			if err := checkBatchHeader(rec); err != nil {
				return nil, "", err
			}
			continue
		}
		if line-1 > MaxBatchRows {
			return nil, "", fmt.Errorf("%w: batch file has more than %d rows (%w); split it into several batches, nothing was created", ErrInvalid, MaxBatchRows, business.ErrTooLarge)
		}
		row, err := batchRecord(line-1, rec, seen)
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", line, err))
			continue
		}
		seen[row.TaskID] = line
		rows = append(rows, row)
	}
	switch {
	case line == 0:
		return nil, "", checkBatchHeader(nil)
	case line == 1:
		return nil, "", fmt.Errorf("%w: batch file has no rows", ErrInvalid)
	case len(bad) > 0:
		return nil, "", badRows(bad)
	}
	return rows, hex.EncodeToString(sum.Sum(nil)[:16]), nil
}

// batchReadError is the error of a batch file whose next record cannot be
// read: over the size limit, a CSV syntax error (both ErrInvalid), or a
// read failure.
func batchReadError(err error) error {
	var pe *csv.ParseError
	switch {
	case errors.Is(err, business.ErrTooLarge):
		return fmt.Errorf("%w: batch file is %w; split it into several batches, nothing was created", ErrInvalid, err)
	case errors.As(err, &pe):
		return fmt.Errorf("%w: batch file: %v", ErrInvalid, err)
	}
	return fmt.Errorf("read batch file: %w", err)
}

// checkBatchHeader checks the first record of a batch file (nil: the file
// is empty); errors match ErrInvalid.
func checkBatchHeader(rec []string) error {
	if len(rec) != 3 || strings.TrimPrefix(strings.TrimSpace(rec[0]), "\ufeff") != "task" ||
		strings.TrimSpace(rec[1]) != "order" || strings.TrimSpace(rec[2]) != "reason" {
		return fmt.Errorf("%w: batch file: line 1: the header must be task,order,reason", ErrInvalid)
	}
	return nil
}

// batchRecord turns record rec, row rowNo of the file, into a BatchRow, or
// says what is wrong with it; seen maps the task ids of earlier rows to
// their lines.
func batchRecord(rowNo int, rec []string, seen map[string]int) (runs.BatchRow, error) {
	if len(rec) != 3 {
		return runs.BatchRow{}, fmt.Errorf("%d fields, want 3", len(rec))
	}
	row := runs.BatchRow{RowNo: rowNo, TaskID: strings.TrimSpace(rec[0]), OrderID: strings.TrimSpace(rec[1]), Reason: strings.TrimSpace(rec[2])}
	switch {
	case ValidTaskID(row.TaskID) != nil:
		return row, ValidTaskID(row.TaskID)
	case ValidTaskID(row.OrderID) != nil:
		return row, fmt.Errorf("order id: %v", ValidTaskID(row.OrderID))
	case row.Reason != "" && ValidReason(row.Reason) != nil:
		return row, ValidReason(row.Reason)
	case seen[row.TaskID] != 0:
		return row, fmt.Errorf("task %s already on line %d", row.TaskID, seen[row.TaskID])
	}
	return row, nil
}

// badRows is the ErrInvalid of a file with bad lines, naming the first
// maxBadLines of them.
func badRows(bad []string) error {
	more := ""
	if len(bad) > maxBadLines {
		more = fmt.Sprintf(" (and %d more)", len(bad)-maxBadLines)
		bad = bad[:maxBadLines]
	}
	return fmt.Errorf("%w: batch file has bad rows, none was imported: %s%s", ErrInvalid, strings.Join(bad, "; "), more)
}
