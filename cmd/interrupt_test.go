package cmd

import (
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// Every command that runs says, when a signal ends it before it did its
// work, what is true for it (docs/cli.md "Conventions", Signals): a note in
// interruptNotes, and none left over for a command that no longer exists.
func TestEveryCommandSaysWhatAnInterruptLeaves(t *testing.T) {
	root := NewRootCmd(io.Discard, io.Discard, nil)
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.HasParent() && c.Name() != "help" {
			key := commandPath(c)
			seen[key] = true
			if interruptNote(c) == "" {
				t.Errorf("command %q has no interrupt note in interruptNotes", key)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for key := range interruptNotes {
		if !seen[key] {
			t.Errorf("interruptNotes names %q, which is no command", key)
		}
	}
}
