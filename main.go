// Command assistant prepares return requests that wait for a person's
// approval and survive anything in between. See README.md.
package main

import (
	_ "embed"

	"assistant/cmd"
)

// teachingOrders are the orders loaded into a new data dir (testdata/orders.csv).
//
//go:embed testdata/orders.csv
var teachingOrders []byte

func main() { cmd.Execute(teachingOrders) }
