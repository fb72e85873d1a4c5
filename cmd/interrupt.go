package cmd

import "github.com/spf13/cobra"

// What a signal leaves behind when it ends a command before the command
// did its work (docs/cli.md "Conventions", Signals): the second half of
// the stderr line "interrupted by SIGINT before it was done; …", which says
// what is true for the command that was stopped, so a person knows whether
// to run it again. A command whose own run the signal stopped prints the
// task instead (signalNote).
const (
	// interruptRetry: each of the command's writes is one transaction, and
	// the same command again does the rest (an input the store already
	// holds is recognised, never done twice).
	interruptRetry = "each write is all or nothing, so run the command again"
	// interruptPrune: each task's checkpoints are pruned in one
	// transaction.
	interruptPrune = "each task is pruned all or nothing and keeps its newest checkpoints; run the command again to prune the rest"
	// interruptBackup: backup only reads the data dir; its copy may be
	// part-made, and a backup goes into a new or empty directory.
	interruptBackup = "the data dir is unchanged; back up again into a new or empty directory"
	// interruptVariants: variants works in a temporary directory of its own.
	interruptVariants = "variants touches only a temporary directory of its own, so nothing was changed"
	// interruptPrints: the command prints text and touches no store.
	interruptPrints = "it only prints, so nothing was changed"
)

// interruptReads is the note of a command that only reads: nothing changed.
func interruptReads(name string) string {
	return name + " only reads, so nothing was changed"
}

// interruptNotes is what an interrupt leaves, by the path of the command
// the signal stopped (without the root's name: "wait", "orders import").
// Every command that runs has one (TestEveryCommandSaysWhatAnInterruptLeaves).
var interruptNotes = map[string]string{
	"start":            interruptRetry,
	"resume":           interruptRetry,
	"stop":             interruptRetry,
	"recover":          interruptRetry,
	"batch":            interruptRetry,
	"decide":           interruptRetry,
	"orders import":    interruptRetry,
	"approvers grant":  interruptRetry,
	"approvers revoke": interruptRetry,
	"prune":            interruptPrune,
	"backup":           interruptBackup,
	"variants":         interruptVariants,
	"show":             interruptReads("show"),
	"list":             interruptReads("list"),
	"history":          interruptReads("history"),
	"wait":             interruptReads("wait"),
	"verify":           interruptReads("verify"),
	"orders list":      interruptReads("orders list"),
	"orders show":      interruptReads("orders show"),
	"approvers list":   interruptReads("approvers list"),
	"approvers token":  interruptRetry,
	"approvers tokens": interruptReads("approvers tokens"),
	// serve ends by a signal once it serves (exit 0); before that it has
	// opened the stores and recovered what the recovery scan finished.
	"serve": "each recovered task is all or nothing, so serve again to recover the rest",
	// The groups alone print their help; completion prints a script.
	"orders":                interruptPrints,
	"approvers":             interruptPrints,
	"completion":            interruptPrints,
	"completion bash":       interruptPrints,
	"completion zsh":        interruptPrints,
	"completion fish":       interruptPrints,
	"completion powershell": interruptPrints,
}

// interruptNote is what an interrupt leaves for command c (interruptNotes);
// "" for help and for c nil.
func interruptNote(c *cobra.Command) string {
	if c == nil {
		return ""
	}
	return interruptNotes[commandPath(c)]
}
