package cmd

// Refusals through Run: a missing data dir, bad flag values and a
// cancelled context, each checked for its exit code, its one stderr line,
// the error object on stdout and, above all, for what it left unchanged.

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// A command that reads a data dir that does not exist is exit 4 and does not
// create it; list and recover report nothing and create nothing either
// (docs/cli.md "Commands", "recover").
func TestRunMissingDataDir(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		golden string
		stderr string
	}{
		{name: "show", args: []string{"show", "r1"}, code: ExitNotFound, stderr: "does not exist"},
		{name: "show_text", args: []string{"show", "r1", "--output", "text"}, code: ExitNotFound, stderr: "does not exist"},
		{name: "resume", args: []string{"resume", "r1", "--action", "approve"}, code: ExitNotFound, stderr: "does not exist"},
		{name: "resume_no_answer", args: []string{"resume", "r1"}, code: ExitNotFound, stderr: "does not exist"},
		{name: "history", args: []string{"history", "r1"}, code: ExitNotFound, stderr: "does not exist"},
		{name: "stop", args: []string{"stop", "r1"}, code: ExitNotFound, stderr: "does not exist"},
		{name: "prune", args: []string{"prune", "--finished-before", "1h"}, code: ExitNotFound, stderr: "does not exist"},
		{name: "list", args: []string{"list"}, golden: "list_empty_json"},
		{name: "list_status", args: []string{"list", "--status", "waiting"}, golden: "list_empty_json"},
		{name: "list_bad_status", args: []string{"list", "--status", "bogus"}, code: ExitUsage, stderr: `not "bogus"`},
		{name: "recover", args: []string{"recover"}, golden: "recover_nothing_json"},
		{name: "recover_text", args: []string{"recover", "--output", "text"}, golden: "recover_nothing_text"},
		{name: "variants", args: []string{"variants", "static"}, golden: "variants_static_json"},
		{name: "start_bad_input", args: []string{"start", "a/b", "A3003"}, code: ExitUsage, stderr: `task id "a/b"`},
		{name: "batch_bad_file", args: []string{"batch", "b1", "$ROOT/nosuch.csv"}, code: ExitUsage, stderr: "batch file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			r := c.run(context.Background(), tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q; stdout:\n%s", r.code, tc.code, r.stderr, r.stdout)
			}
			if tc.code == ExitOK {
				if r.stderr != "" {
					t.Errorf("stderr = %q, want nothing", r.stderr)
				}
				checkGolden(t, tc.golden, c.mask(r.stdout))
			} else {
				checkFailure(t, tc.args, r, tc.stderr)
			}
			if _, err := os.Stat(c.data); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("data dir %s after the command: %v; want it not created", c.data, err)
			}
		})
	}
}

// A bad flag value is exit 2 and changes nothing: both SQLite files keep
// their bytes (docs/cli.md "Exit codes").
func TestRunBadFlagValuesChangeNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"draft_ttl_zero", []string{"start", "r9", "A3003", "--draft-ttl", "0s"}, "--draft-ttl must be positive"},
		{"draft_ttl_negative", []string{"start", "r9", "A3003", "--draft-ttl", "-5s"}, "--draft-ttl must be positive"},
		{"draft_ttl_not_a_duration", []string{"start", "r9", "A3003", "--draft-ttl", "soon"}, `invalid argument "soon" for "--draft-ttl"`},
		{"draft_ttl_too_long", []string{"start", "r9", "A3003", "--draft-ttl", "200h"}, "outside 1s..168h"},
		{"start_bad_task_id", []string{"start", "a b", "A3003"}, `task id "a b"`},
		{"start_dot_task_id", []string{"start", "..", "A3003"}, "task id"},
		{"start_bad_order_id", []string{"start", "r9", "A/3003"}, "A/3003"},
		{"start_control_in_reason", []string{"start", "r9", "A3003", "--reason", "a\x01b"}, "reason"},
		{"list_status", []string{"list", "--status", "bogus"}, `--status must be one of`},
		{"resume_action_unknown", []string{"resume", "r1", "--action", "maybe"}, `--action must be one of approve, cancel, edit, revise, not "maybe"`},
		{"resume_reason_and_action", []string{"resume", "r1", "--reason", "x", "--action", "approve"}, "give --reason or --action, not both"},
		{"resume_empty_action", []string{"resume", "r1", "--action", ""}, "--action must not be empty"},
		{"resume_empty_draft", []string{"resume", "r1", "--action", "approve", "--draft", ""}, "--draft must not be empty"},
		{"resume_empty_interrupt", []string{"resume", "r1", "--action", "approve", "--interrupt", ""}, "--interrupt must not be empty"},
		{"resume_reason_no_value", []string{"resume", "r1", "--reason"}, "flag needs an argument"},
		{"resume_wrong_draft", []string{"resume", "r1", "--action", "approve", "--draft", "d_wrong"}, "d_wrong"},
		{"resume_unknown_interrupt", []string{"resume", "r1", "--action", "approve", "--interrupt", "nosuch"}, "nosuch"},
		{"resume_no_answer_while_asked", []string{"resume", "r1"}, "is waiting for an answer (approval)"},
		{"resume_action_while_reason_asked", []string{"resume", "r2", "--action", "approve"}, "waiting for a reason"},
		{"resume_bad_task_id", []string{"resume", "a b", "--action", "approve"}, `task id "a b"`},
		{"history_bad_task_id", []string{"history", "a/b"}, `task id "a/b"`},
		{"stop_bad_task_id", []string{"stop", "a b"}, `task id "a b"`},
		{"stop_wait_not_a_duration", []string{"stop", "r1", "--wait", "soon"}, `invalid argument "soon" for "--wait"`},
		{"batch_chunk_zero", []string{"batch", "b9", "$ROOT/rows.csv", "--chunk", "0"}, "--chunk must be between 1 and 10000, not 0"},
		{"batch_chunk_too_big", []string{"batch", "b9", "$ROOT/rows.csv", "--chunk", "10001"}, "--chunk must be between 1 and 10000, not 10001"},
		{"batch_chunk_not_a_number", []string{"batch", "b9", "$ROOT/rows.csv", "--chunk", "many"}, `invalid argument "many" for "--chunk"`},
		{"batch_bad_id", []string{"batch", "b 9", "$ROOT/rows.csv"}, "batch id"},
		{"batch_bad_rows", []string{"batch", "b9", "$ROOT/bad-rows.csv"}, "batch file has bad rows, nothing was created"},
		{"orders_bad_rows", []string{"orders", "import", "$ROOT/bad-orders.csv"}, "line 2"},
		{"prune_no_finished_before", []string{"prune"}, "prune needs --finished-before"},
		{"prune_finished_before_negative", []string{"prune", "--finished-before", "-1h"}, "--finished-before must be positive"},
		{"prune_keep_zero", []string{"prune", "--finished-before", "1ns", "--keep", "0"}, "--keep must be at least 1, not 0"},
		{"output_yaml", []string{"--output", "yaml", "show", "r1"}, `--output must be json or text, not "yaml"`},
		{"output_yaml_start", []string{"--output", "yaml", "start", "r9", "A3003"}, `--output must be json or text, not "yaml"`},
		{"user_empty", []string{"--user", "", "resume", "r1", "--action", "approve"}, "--user: user name must not be empty"},
		{"user_blank", []string{"--user", " ", "resume", "r1", "--action", "approve"}, `--user: user name " " must not contain spaces`},
		{"user_escape", []string{"--user", "\x1b]0;pwned\a\x1b[31mred", "show", "r1"}, `--user: user name "\x1b]0;pwned\a\x1b[31mred"`},
		{"unknown_flag", []string{"resume", "r1", "--action", "approve", "--force"}, "unknown flag: --force"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			c.write("rows.csv", batchCSV)
			c.write("bad-rows.csv", "task,order,reason\nt1,A3001,x\nt1,A3002,y\n")
			c.write("bad-orders.csv", "order_id,user,item,delivered_at,final_sale\nZ1,demo-user,Kettle,yesterday,false\n")
			c.mustRun(startR1...)
			c.mustRun(startR2...)
			before := c.hashes()
			for _, f := range storeFiles {
				if before[f] == "" {
					t.Fatalf("%s missing before the command", f)
				}
			}
			r := c.run(context.Background(), tc.args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q; stdout:\n%s", r.code, ExitUsage, r.stderr, r.stdout)
			}
			checkFailure(t, tc.args, r, tc.stderr)
			if after := c.hashes(); !equalHashes(before, after) {
				t.Errorf("store files changed:\nbefore %v\nafter  %v", before, after)
			}
			// The tasks read the same as before.
			checkGolden(t, "start_reason_json", c.mask(c.mustRun("show", "r1").stdout))
			checkGolden(t, "start_no_reason_json", c.mask(c.mustRun("show", "r2").stdout))
		})
	}
}

// A context cancelled before the command runs (a SIGINT that came first) is
// exit 130 with the code interrupted; the command did nothing, its line
// says what is true for it (a command that only reads changed nothing; one
// that writes can be run again), and running it again goes on (docs/cli.md
// "Exit codes", "Conventions").
func TestRunCancelledContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name  string
		args  []string
		fresh bool // no data dir before the command
		// again is the golden of the same command run with a live context.
		again string
		// says is what the stderr line says the interrupt left.
		says string
	}{
		{name: "start", args: []string{"start", "r1", "A3003", "--reason", "size"}, fresh: true, again: "start_reason_json", says: "each write is all or nothing, so run the command again"},
		{name: "start_existing", args: []string{"start", "r2", "A3004", "--reason", "broken"}, again: "start_r2_reason_json", says: "each write is all or nothing, so run the command again"},
		{name: "show", args: []string{"show", "r1"}, again: "start_reason_json", says: "only reads, so nothing was changed"},
		{name: "show_text", args: []string{"show", "r1", "--output", "text"}, again: "start_reason_text", says: "only reads, so nothing was changed"},
		{name: "resume", args: []string{"resume", "r1", "--action", "approve"}, again: "resume_approve_json", says: "each write is all or nothing, so run the command again"},
		{name: "list", args: []string{"list", "--status", "done"}, again: "list_empty_json", says: "only reads, so nothing was changed"},
		{name: "recover", args: []string{"recover"}, again: "recover_nothing_json", says: "each write is all or nothing, so run the command again"},
		{name: "history", args: []string{"history", "r1"}, says: "history only reads, so nothing was changed"},
		{name: "stop", args: []string{"stop", "r1"}, says: "each write is all or nothing, so run the command again"},
		{name: "batch", args: []string{"batch", "b1", "$ROOT/rows.csv"}, again: "batch_json", says: "each write is all or nothing, so run the command again"},
		{name: "orders_import", args: []string{"orders", "import", "$ROOT/shop.csv"}, again: "orders_import_json", says: "each write is all or nothing, so run the command again"},
		{name: "orders_list", args: []string{"orders", "list"}, says: "only reads, so nothing was changed"},
		{name: "prune", args: []string{"prune", "--finished-before", "1ns"}, says: "each task is pruned all or nothing"},
		{name: "variants", args: []string{"variants", "static"}, again: "variants_static_json", says: "nothing was changed"},
		{name: "wait", args: []string{"wait", "r1"}, says: "wait only reads, so nothing was changed"},
		{name: "verify", args: []string{"verify"}, says: "verify only reads, so nothing was changed"},
		{name: "orders_show", args: []string{"orders", "show", "A3003"}, says: "orders show only reads, so nothing was changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			c.write("rows.csv", batchCSV)
			c.write("shop.csv", ordersCSV)
			if !tc.fresh {
				c.mustRun(startR1...)
			}
			before := c.hashes()
			r := c.run(cancelled, tc.args...)
			if r.code != ExitInterrupted {
				t.Fatalf("exit %d, want %d; stderr %q; stdout:\n%s", r.code, ExitInterrupted, r.stderr, r.stdout)
			}
			checkFailure(t, tc.args, r, "interrupted by a signal before it was done; ")
			checkFailure(t, tc.args, r, tc.says)
			if strings.Contains(tc.says, "nothing was changed") && strings.Contains(r.stderr, "run the command again") {
				t.Errorf("stderr %q tells a person to run again a command that changed nothing", r.stderr)
			}
			if !tc.fresh {
				if after := c.hashes(); !equalHashes(before, after) {
					t.Errorf("store files changed by an interrupted command:\nbefore %v\nafter  %v", before, after)
				}
			}
			if tc.again == "" {
				return
			}
			r = c.mustRun(tc.args...)
			checkGolden(t, tc.again, c.mask(r.stdout))
		})
	}
}

// fraction is the fractional seconds of an RFC 3339 time in JSON output.
var fraction = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.(\d+)Z"`)

// The shared CLI contract: times are RFC 3339 UTC with at most millisecond
// precision.
func TestRunTimesAtMostMilliseconds(t *testing.T) {
	c := newCLI(t)
	c.mustRun(startR1...)
	for _, args := range [][]string{{"show", "r1"}, {"list"}, {"history", "r1"}, {"orders", "list"}} {
		out := c.mustRun(args...).stdout
		if !json.Valid([]byte(out)) {
			t.Fatalf("%v: not JSON:\n%s", args, out)
		}
		for _, m := range fraction.FindAllStringSubmatch(out, -1) {
			if len(m[1]) > 3 {
				t.Errorf("%v: time %s has more than millisecond precision", args, m[0])
			}
		}
	}
}
