package cmd

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

// Values that shell completion offers for flags (docs/cli.md
// "Conventions"), by flag name; --status offers returns.Statuses.
var (
	completeActions = returns.Actions // every action --action accepts
	completeOutputs = []string{"json", "text"}
)

// taskArgCommands take an existing task's id as their first argument; shell
// completion offers the user's task ids there.
var taskArgCommands = []string{"show", "resume", "history", "stop", "wait"}

// addCompletions walks the built command tree and registers cobra's
// dynamic completions: task ids for the commands of taskArgCommands, and the
// values of --action, --output and --status wherever a command has them.
func (a *app) addCompletions(root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("output", fixedValues(completeOutputs))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasParent() && c.Parent() == root && slices.Contains(taskArgCommands, c.Name()) && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = a.completeTaskIDs
		}
		if c.Flags().Lookup("action") != nil {
			_ = c.RegisterFlagCompletionFunc("action", fixedValues(completeActions))
		}
		if c.Flags().Lookup("status") != nil {
			_ = c.RegisterFlagCompletionFunc("status", completeStatuses)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// fixedValues completes a flag from values.
func fixedValues(values []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeStatuses completes --status, which takes a comma-separated list:
// the statuses not given yet, after what is typed up to the last comma.
func completeStatuses(_ *cobra.Command, _ []string, typed string) ([]string, cobra.ShellCompDirective) {
	done, _ := cutLast(typed, ",")
	given := strings.Split(done, ",")
	var out []string
	for _, s := range returns.Statuses {
		if !slices.Contains(given, s) {
			if done != "" {
				s = done + "," + s
			}
			out = append(out, s)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// cutLast splits s at the last sep: "a,b,c" is "a,b" and "c"; without sep
// it is "" and s.
func cutLast(s, sep string) (before, after string) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", s
	}
	return s[:i], s[i+len(sep):]
}

// completeTaskIDs offers the ids of the user's tasks (--user, or
// ASSISTANT_USER) that start with what is typed, each with its status and
// order. It reads the data dir and creates nothing; on any error it offers
// nothing, quietly.
func (a *app) completeTaskIDs(c *cobra.Command, args []string, typed string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	a.applyEnv(c)
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	svc, err := a.service(ctx, returns.OpenExisting)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	tasks, err := svc.List(ctx, a.user, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, t := range tasks {
		if strings.HasPrefix(t.Task, typed) {
			desc := t.Status
			if t.Order != "" {
				desc += " · order " + t.Order
			}
			out = append(out, t.Task+"\t"+desc)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
