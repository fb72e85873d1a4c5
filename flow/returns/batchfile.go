package returns

import (
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"assistant/runs"
)

// ParseBatch reads a batch CSV (header task,order,reason; reason may be
// empty) and validates every row. It returns the rows and the file's
// fingerprint (hex, the first 16 bytes of its SHA-256). A bad file is
// ErrInvalid naming up to ten bad lines by number; nothing is created from
// it.
func ParseBatch(r io.Reader) ([]runs.BatchRow, string, error) {
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, "", fmt.Errorf("read batch file: %w", err)
	}
	sum := sha256.Sum256(data)
	cr := csv.NewReader(strings.NewReader(string(data)))
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, "", fmt.Errorf("%w: batch file: %v", ErrInvalid, err)
	}
	if err := checkBatchShape(recs); err != nil {
		return nil, "", err
	}
	var bad []string
	seen := map[string]int{}
	rows := make([]runs.BatchRow, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		line := i + 2
		row, err := batchRecord(i+1, rec, seen)
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", line, err))
			continue
		}
		seen[row.TaskID] = line
		rows = append(rows, row)
	}
	if len(bad) > 0 {
		return nil, "", badRows(bad)
	}
	return rows, hex.EncodeToString(sum[:16]), nil
}

// checkBatchShape checks the header and the number of rows of a batch
// file's records; errors match ErrInvalid.
func checkBatchShape(recs [][]string) error {
	if len(recs) == 0 || len(recs[0]) != 3 || strings.TrimPrefix(strings.TrimSpace(recs[0][0]), "\ufeff") != "task" ||
		strings.TrimSpace(recs[0][1]) != "order" || strings.TrimSpace(recs[0][2]) != "reason" {
		return fmt.Errorf("%w: batch file: line 1: the header must be task,order,reason", ErrInvalid)
	}
	if len(recs) == 1 {
		return fmt.Errorf("%w: batch file has no rows", ErrInvalid)
	}
	if len(recs)-1 > MaxBatchRows {
		return fmt.Errorf("%w: batch file has %d rows; at most %d are allowed", ErrInvalid, len(recs)-1, MaxBatchRows)
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
