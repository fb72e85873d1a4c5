package returns

import (
	"fmt"

	"assistant/runs"
)

// Outcomes of rows refused before they run (runs.BatchRow.Outcome).
const (
	// OutcomeDuplicateOrder: a batch row whose order an earlier row of the
	// file names; no task and no draft is made for it.
	OutcomeDuplicateOrder = "duplicate_order"
	// OutcomeDuplicateTask: a decide row whose task an earlier row of the
	// file decides; it is not applied.
	OutcomeDuplicateTask = "duplicate_task"
)

// markDuplicates marks in rows, and returns them, every row whose key (of what) an
// earlier row has marked handled as outcome, error code conflict, naming
// the earlier row's line; the first row of each key is left to run.
func markDuplicates(rows []runs.BatchRow, key func(runs.BatchRow) string, outcome, what string) []runs.BatchRow {
	// Marked in place: a copy of a file's rows would double the peak
	// memory of parsing a large file.
	first := make(map[string]int, len(rows))
	for i := range rows {
		r := &rows[i]
		k := key(*r)
		if line, ok := first[k]; ok {
			markDuplicate(r, outcome, what, k, line)
		} else {
			first[k] = r.FileLine()
		}
	}
	return rows
}

// markDuplicate marks row r, whose key k (of what) the row on line names
// already, handled as outcome, error code conflict.
func markDuplicate(r *runs.BatchRow, outcome, what, k string, line int) {
	r.Outcome, r.ErrorCode, r.DuplicateOf = outcome, CodeConflict, line
	r.Error = fmt.Sprintf("%s %s is already on line %d; this row was not run", what, k, line)
}
