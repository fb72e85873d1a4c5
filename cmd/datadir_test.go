package cmd

// Which commands make a data dir: start, batch and orders import, and no
// other (docs/storage.md). The table names every command of the tree, so a
// new command fails this test until its line says what it does on a
// missing data dir.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// missingDirCase is one command line run on a missing data dir.
type missingDirCase struct {
	path    string // the command's path below assistant
	args    []string
	code    int
	creates bool
}

// missingDirCases is, for every command that runs, a command line and what
// it does on a data dir that does not exist: makes it (creates), is exit 4,
// or reports nothing with exit 0 (list and recover, docs/cli.md).
var missingDirCases = []missingDirCase{
	{path: "start", args: []string{"start", "r1", "A3003", "--reason", "size"}, creates: true},
	{path: "batch", args: []string{"batch", "b1", "$ROOT/rows.csv"}, creates: true},
	{path: "orders import", args: []string{"orders", "import", "$ROOT/shop.csv"}, creates: true},
	{path: "orders import", args: []string{"orders", "import", "$ROOT/shop.csv", "--dry-run"}, code: ExitNotFound},
	{path: "orders list", args: []string{"orders", "list"}, code: ExitNotFound},
	{path: "orders show", args: []string{"orders", "show", "A3003"}, code: ExitNotFound},
	{path: "show", args: []string{"show", "r1"}, code: ExitNotFound},
	{path: "resume", args: []string{"resume", "r1", "--action", "approve"}, code: ExitNotFound},
	{path: "wait", args: []string{"wait", "r1", "--timeout", "1ms"}, code: ExitNotFound},
	{path: "history", args: []string{"history", "r1"}, code: ExitNotFound},
	{path: "stop", args: []string{"stop", "r1"}, code: ExitNotFound},
	{path: "prune", args: []string{"prune", "--finished-before", "1h"}, code: ExitNotFound},
	{path: "verify", args: []string{"verify"}, code: ExitNotFound},
	{path: "backup", args: []string{"backup", "$ROOT/copy"}, code: ExitNotFound},
	{path: "decide", args: []string{"decide", "$ROOT/decide.csv"}, code: ExitNotFound},
	{path: "approvers grant", args: []string{"approvers", "grant", "alice"}, code: ExitNotFound},
	{path: "approvers revoke", args: []string{"approvers", "revoke", "alice"}, code: ExitNotFound},
	{path: "approvers list", args: []string{"approvers", "list"}},
	{path: "approvers token", args: []string{"approvers", "token", "alice"}, creates: true},
	{path: "approvers token", args: []string{"approvers", "token", "--revoke", "tok-1"}, code: ExitNotFound},
	{path: "approvers tokens", args: []string{"approvers", "tokens"}},
	// Nobody signs in to a server without a token, which makes the data dir.
	{path: "serve", args: []string{"serve", "--addr", "127.0.0.1:0"}, code: ExitNotFound},
	{path: "list", args: []string{"list"}},
	{path: "recover", args: []string{"recover"}},
	{path: "variants", args: []string{"variants", "static"}},
	// Command groups print their help; their completion scripts read nothing.
	{path: "orders", args: []string{"orders"}},
	{path: "approvers", args: []string{"approvers"}},
	{path: "completion", args: []string{"completion"}},
	{path: "completion bash", args: []string{"completion", "bash"}},
	{path: "completion zsh", args: []string{"completion", "zsh"}},
	{path: "completion fish", args: []string{"completion", "fish"}},
	{path: "completion powershell", args: []string{"completion", "powershell"}},
}

// runnablePaths walks the command tree and returns the path below the root
// of every command that runs something.
func runnablePaths(c *cobra.Command) []string {
	var out []string
	for _, sub := range c.Commands() {
		if sub.Runnable() {
			out = append(out, strings.TrimPrefix(sub.CommandPath(), "assistant "))
		}
		out = append(out, runnablePaths(sub)...)
	}
	return out
}

func TestMissingDataDirEveryCommand(t *testing.T) {
	t.Run("EveryCommandListed", func(t *testing.T) {
		for _, p := range runnablePaths((&app{}).newRoot()) {
			if !slices.ContainsFunc(missingDirCases, func(tc missingDirCase) bool {
				return tc.path == p
			}) {
				t.Errorf("command %q has no line in missingDirCases: say what it does on a missing data dir", p)
			}
		}
	})
	for _, tc := range missingDirCases {
		t.Run(strings.Join(tc.args[:min(len(tc.args), 3)], "_"), func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			c.write("rows.csv", batchCSV)
			c.write("shop.csv", ordersCSV)
			c.write("decide.csv", "task,action\nr1,approve\n")
			r := c.run(context.Background(), tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q; stdout:\n%s", r.code, tc.code, r.stderr, r.stdout)
			}
			if tc.code != ExitOK {
				checkFailure(t, tc.args, r, "does not exist")
			}
			_, err := os.Stat(c.data)
			switch {
			case tc.creates && err != nil:
				t.Errorf("data dir %s after the command: %v; want it made", c.data, err)
			case !tc.creates && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("data dir %s after the command: %v; want it not created", c.data, err)
			}
			if !tc.creates {
				if _, err := os.Stat(filepath.Join(c.root, "copy")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("backup dir after the command: %v; want nothing made", err)
				}
			}
		})
	}
}
