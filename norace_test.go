//go:build !race

package main

// raceEnabled: the tests run with the race detector, which makes the
// binary they build (and its memory) larger.
const raceEnabled = false
