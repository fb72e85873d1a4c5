// Command assistant prepares return requests that wait for a person's
// approval and survive anything in between. See README.md.
package main

import (
	_ "embed"
	"runtime"

	"assistant/cmd"
)

// teachingOrders are the orders loaded into a new data dir (testdata/orders.csv).
//
//go:embed testdata/orders.csv
var teachingOrders []byte

func init() {
	// No memory profile is ever taken of a command, and sampling
	// allocations for one keeps about 1.4 MiB of stack buckets alive by the
	// end of a long batch (runtime/metrics /memory/classes/profiling;
	// docs/performance.md keeps a command's peak RSS under 20 MiB).
	runtime.MemProfileRate = 0
}

func main() { cmd.Execute(teachingOrders) }
