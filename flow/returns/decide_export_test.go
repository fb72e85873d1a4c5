package returns

import "assistant/runs"

// EachDecision reads f's file again as StartDecide does (DecideFile.each).
func EachDecision(f *DecideFile, add func(runs.BatchRow) error) error { return f.each(add) }
