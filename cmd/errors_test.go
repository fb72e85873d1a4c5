package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"assistant/flow/returns"
)

// TestExitCode: one mapping chooses the exit code by the error's kind, in
// the order of docs/cli.md "Exit codes"; an error of no kind is a failure
// of the command's work (exit 1), a usage error alone is exit 2.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"Plain", errors.New("disk full"), ExitInternal},
		{"File", fmt.Errorf("write: %w", &fs.PathError{Op: "write", Path: "/dev/full", Err: errors.New("no space")}), ExitInternal},
		{"Usage", usageErr("--limit must be 0 or more, not %d", -1), ExitUsage},
		{"CobraRefusal", &usageError{errors.New(`unknown command "x" for "assistant"`)}, ExitUsage},
		{"Conflict", fmt.Errorf("stop r1: %w", returns.ErrConflict), ExitConflict},
		{"Busy", fmt.Errorf("start r1: %w", returns.ErrBusy), ExitConflict},
		{"NotFound", fmt.Errorf("task r1: %w", returns.ErrNotFound), ExitNotFound},
		{"NotFoundBeforeConflict", fmt.Errorf("%w: %w", returns.ErrConflict, returns.ErrNotFound), ExitNotFound},
		{"Inconsistent", fmt.Errorf("task r1 is %w", returns.ErrInconsistent), ExitInternal},
		{"InconsistentBeforeInvalid", fmt.Errorf("%w: %w", returns.ErrInvalid, returns.ErrInconsistent), ExitInternal},
		{"Interrupted", returns.Classify(fmt.Errorf("resume r1: %w", context.Canceled)), ExitInterrupted},
		{"Cancelled", context.Canceled, ExitInterrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.err); got != tc.want {
				t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

// TestErrorCodeOfBusyStore: the JSON error code of a busy store (a data
// file or a server lock past the busy timeout, a server without a free
// connection slot) is "busy", exit 3; a conflict that is not busy stays
// "conflict" (docs/cli.md "Errors").
func TestErrorCodeOfBusyStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"Busy", fmt.Errorf("start r1: %w", returns.ErrBusy), CodeBusy},
		{"ServerBusy", &returns.Error{Kind: returns.ErrBusy, Message: "no connection slot free"}, CodeBusy},
		{"Conflict", fmt.Errorf("stop r1: %w", returns.ErrConflict), "conflict"},
		{"Inconsistent", fmt.Errorf("task r1 is %w", returns.ErrInconsistent), returns.CodeInconsistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorCodeOf(tc.err, exitCode(tc.err)); got != tc.want {
				t.Errorf("errorCodeOf(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

// TestCLIWords: the command line words the application layer's inputs as
// flags and its hints as commands to paste, arguments quoted for a shell.
func TestCLIWords(t *testing.T) {
	for _, tc := range []struct {
		name string
		hint returns.Hint
		want string
	}{
		{"Show", returns.Hint{Before: "see it with", Do: returns.DoShow, Task: "r 1"}, "see it with `assistant show 'r 1'`"},
		{"InParentheses", returns.Hint{Before: "wait for that process to end (", Do: returns.DoWait, Task: "b1", After: "), then run the same command again"},
			"wait for that process to end (`assistant wait b1`), then run the same command again"},
		{"AnswerReason", returns.Hint{Before: "run", Do: returns.DoAnswer, Task: "r1", Ask: returns.KindNeedReason}, "run `assistant resume r1 --reason <reason>`"},
		{"AnswerApproval", returns.Hint{Before: "run", Do: returns.DoAnswer, Task: "r1", Ask: returns.KindApproval},
			"run `assistant resume r1 --action approve` (or cancel, edit --reason <reason>, revise --comment <comment>)"},
		{"Inputs", returns.Hint{Before: "only it carries the task on:", Do: returns.DoResume, Task: "t", With: []returns.InputValue{{Input: returns.InputAction, Value: "edit"}, {Input: returns.InputReason, Value: "too small"}}},
			"only it carries the task on: `assistant resume t --action edit --reason 'too small'`"},
		{"SameCommandAgain", returns.Hint{Before: "run it with", With: []returns.InputValue{{Input: returns.InputUser, Value: "ann"}}}, "run it with --user ann"},
		{"InputAlone", returns.Hint{Before: "give it without", With: []returns.InputValue{{Input: returns.InputInterrupt}}}, "give it without --interrupt"},
		{"Then", returns.Hint{Before: "run", Do: returns.DoVerify, After: "to list every such task, then restore both files from one backup, which",
			Then: &returns.Hint{Do: returns.DoBackup, Args: []string{"DIR"}, After: "makes"}},
			"run `assistant verify` to list every such task, then restore both files from one backup, which `assistant backup DIR` makes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cliWords.Hint(tc.hint); got != tc.want {
				t.Errorf("cliWords.Hint = %q\nwant %q", got, tc.want)
			}
		})
	}
	if got := cliWords.Input(returns.InputDraftTTL); got != "--draft-ttl" {
		t.Errorf("cliWords.Input = %q, want --draft-ttl", got)
	}
}

// TestUnknownFlagHintNamesWhereItStood (docs/cli.md "Exit codes"): an
// unknown flag is exit 2 with a hint to the help of the command it
// followed; one given before the command's name stood where the global
// flags go, so the hint names the program's help, not the command cobra
// found by taking the next word as the flag's value.
func TestUnknownFlagHintNamesWhereItStood(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"--bogus", "orders", "list"}, "run `assistant --help` for the global flags"},
		{[]string{"--bogus=1", "list"}, "run `assistant --help` for the global flags"},
		{[]string{"--user", "list", "list", "--bogus"}, "run `assistant list --help` for its flags"},
		{[]string{"orders", "list", "--bogus"}, "run `assistant orders list --help` for its flags"},
		{[]string{"list", "--bogus"}, "run `assistant list --help` for its flags"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			args := append([]string{"--data", t.TempDir(), "--output", "text"}, tc.args...)
			code := RunAs(context.Background(), "assistant", args, &stdout, &stderr, nil)
			if code != ExitUsage || !strings.Contains(stderr.String(), tc.hint) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), ExitUsage, tc.hint)
			}
		})
	}
}
