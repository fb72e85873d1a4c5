package cmd

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

// testApp is an app of user with its output discarded and its data dir
// under a test's temporary directory, which nothing here makes.
func testApp(t *testing.T, user string) *app {
	return &app{user: user, data: filepath.Join(t.TempDir(), "data"), output: "json", stdout: io.Discard, stderr: io.Discard}
}

// execute runs command c alone with args and returns its error.
func execute(c *cobra.Command, args ...string) error {
	c.SetArgs(args)
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	c.SilenceErrors, c.SilenceUsage = true, true
	return c.ExecuteContext(context.Background())
}

// TestCommandsFillOptions: each command's constructor fills its options
// from its arguments and flags and hands them to its run function, which
// a test replaces.
func TestCommandsFillOptions(t *testing.T) {
	t.Run("Start", func(t *testing.T) {
		a := testApp(t, "ann")
		var got *startOptions
		c := newCmdStart(a, func(_ context.Context, o *startOptions) error { got = o; return nil })
		if err := execute(c, "r1", "A3003", "--reason", "too small", "--draft-ttl", "10m", "--approvals", "2", "--exit-status"); err != nil {
			t.Fatal(err)
		}
		want := returns.StartOptions{Task: "r1", User: "ann", Order: "A3003", Reason: "too small", TTL: 10 * time.Minute, Approvals: 2}
		if got == nil || got.StartOptions != want || !got.ExitStatus || got.app != a {
			t.Errorf("options %+v, want %+v with ExitStatus", got, want)
		}
	})

	t.Run("StartDefaults", func(t *testing.T) {
		var got *startOptions
		c := newCmdStart(testApp(t, DefaultUser), func(_ context.Context, o *startOptions) error { got = o; return nil })
		if err := execute(c, "r1", "A3003"); err != nil {
			t.Fatal(err)
		}
		if got.TTL != 300*time.Second || got.Approvals != 1 || got.Reason != "" || got.ExitStatus {
			t.Errorf("defaults %+v, want a 300s draft, one approval, no reason", got)
		}
	})

	t.Run("Resume", func(t *testing.T) {
		var got *resumeOptions
		c := newCmdResume(testApp(t, "bob"), func(_ context.Context, o *resumeOptions) error { got = o; return nil })
		if err := execute(c, "r1", "--action", "edit", "--reason", "", "--version", "2", "--interrupt", "i_1"); err != nil {
			t.Fatal(err)
		}
		want := returns.ResumeOptions{Task: "r1", User: "bob", Action: "edit", HasReason: true, Version: 2, InterruptID: "i_1"}
		if !reflect.DeepEqual(got.ResumeOptions, want) || !got.VersionGiven {
			t.Errorf("options %+v, want %+v with VersionGiven", got, want)
		}
	})

	t.Run("ResumeWithoutAnswer", func(t *testing.T) {
		var got *resumeOptions
		c := newCmdResume(testApp(t, "bob"), func(_ context.Context, o *resumeOptions) error { got = o; return nil })
		if err := execute(c, "r1"); err != nil {
			t.Fatal(err)
		}
		if got.HasReason || got.VersionGiven || got.Action != "" {
			t.Errorf("options %+v, want no answer", got)
		}
	})

	t.Run("ArgumentsCountedFirst", func(t *testing.T) {
		ran := false
		c := newCmdResume(testApp(t, "bob"), func(context.Context, *resumeOptions) error { ran = true; return nil })
		if err := execute(c, "r1", "r2"); !errors.Is(err, returns.ErrInvalid) || ran {
			t.Errorf("two tasks: %v (ran %v), want a usage error before the run", err, ran)
		}
	})

	t.Run("Prune", func(t *testing.T) {
		var got *pruneOptions
		c := newCmdPrune(testApp(t, "ann"), func(_ context.Context, o *pruneOptions) error { got = o; return nil })
		if err := execute(c, "--finished-before", "30d", "--keep", "3", "--dry-run"); err != nil {
			t.Fatal(err)
		}
		want := returns.PruneOptions{FinishedBefore: 30 * 24 * time.Hour, Keep: 3, DryRun: true}
		if got.PruneOptions != want || !got.FinishedBeforeGiven {
			t.Errorf("options %+v, want %+v given", got, want)
		}
	})

	t.Run("List", func(t *testing.T) {
		var got *listOptions
		c := newCmdList(testApp(t, "ann"), func(_ context.Context, o *listOptions) error { got = o; return nil })
		if err := execute(c, "--status", "waiting,expired", "--status", "failed", "--batch", "b1", "--limit", "5"); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Status, []string{"waiting,expired", "failed"}) || got.Batch != "b1" || got.Limit != 5 || got.User != "ann" {
			t.Errorf("options %+v", got)
		}
	})
}

// TestRunFunctionsRefuseBeforeOpening: a run function called with its
// options alone refuses bad input with a usage error, and opens and makes
// nothing.
func TestRunFunctionsRefuseBeforeOpening(t *testing.T) {
	a := testApp(t, "ann")
	for _, tc := range []struct {
		name    string
		run     func() error
		message string // worded for a terminal
	}{
		{"StartApprovals", func() error {
			return startRun(context.Background(), &startOptions{app: a, StartOptions: returns.StartOptions{Task: "r1", Order: "A3003", TTL: time.Minute, Approvals: 3}})
		}, "--approvals must be 1 or 2, not 3"},
		{"ResumeReasonAndAction", func() error {
			return resumeRun(context.Background(), &resumeOptions{app: a, ResumeOptions: returns.ResumeOptions{Task: "r1", Action: "approve", Reason: "x", HasReason: true}})
		}, "give --reason or --action, not both (only --action edit takes --reason, the new draft's reason)"},
		{"PruneWithoutAge", func() error { return pruneRun(context.Background(), &pruneOptions{app: a}) },
			"prune needs --finished-before DURATION (e.g. 720h)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if exitCode(err) != ExitUsage {
				t.Fatalf("%v: exit %d, want %d", err, exitCode(err), ExitUsage)
			}
			if msg, hint := returns.Describe(err, cliWords); msg != tc.message || hint != "" {
				t.Errorf("message %q, hint %q; want %q and none", msg, hint, tc.message)
			}
			if exists(a.data) {
				t.Errorf("the run made %s", a.data)
			}
		})
	}
}
