package cmd

// Outcome exit codes and signal exits through Run (docs/cli.md "Exit
// codes"): wait always, start, resume, show and batch with
// --exit-status, and 130/143 by the signal that cancelled the command.

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"

	"assistant/flow/returns"
)

func TestRunExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  [][]string
		args   []string
		code   int
		status string // the printed view's
		stderr string // in the one stderr line; "" for none
	}{
		// Without --exit-status a command that did its work exits 0.
		{name: "start_waiting_plain", args: startR1, code: ExitOK, status: "waiting"},
		{name: "start_final_sale_plain", args: []string{"start", "r1", "A3007", "--reason", "size"}, code: ExitOK, status: "failed"},
		{name: "resume_cancel_plain", setup: [][]string{startR1}, args: []string{"resume", "r1", "--action", "cancel"}, code: ExitOK, status: "cancelled"},
		{name: "show_waiting_plain", setup: [][]string{startR1}, args: []string{"show", "r1"}, code: ExitOK, status: "waiting"},
		{name: "batch_plain", setup: nil, args: []string{"batch", "b1", "$ROOT/rows.csv"}, code: ExitOK, status: "done"},

		{name: "start_waiting", args: append(startR1, "--exit-status"), code: ExitNotFinished, status: "waiting", stderr: "task r1 is not finished: it waits for a person's answer"},
		{name: "start_need_reason", args: []string{"start", "r2", "A3004", "--exit-status"}, code: ExitNotFinished, status: "waiting", stderr: "waits for a person's answer"},
		{name: "start_final_sale", args: []string{"start", "r1", "A3007", "--reason", "size", "--exit-status"}, code: ExitFailed, status: "failed"},
		{name: "resume_approve", setup: [][]string{startR1}, args: []string{"resume", "r1", "--action", "approve", "--exit-status"}, code: ExitOK, status: "done"},
		{name: "resume_cancel", setup: [][]string{startR1}, args: []string{"resume", "r1", "--action", "cancel", "--exit-status"}, code: ExitCancelled, status: "cancelled"},
		{name: "show_waiting", setup: [][]string{startR1}, args: []string{"show", "r1", "--exit-status"}, code: ExitNotFinished, status: "waiting", stderr: "not finished"},
		{name: "show_done", setup: [][]string{startR1, {"resume", "r1", "--action", "approve"}}, args: []string{"show", "r1", "--exit-status"}, code: ExitOK, status: "done"},
		{name: "show_cancelled", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}}, args: []string{"show", "r1", "--exit-status"}, code: ExitCancelled, status: "cancelled"},
		{name: "batch", args: []string{"batch", "b1", "$ROOT/rows.csv", "--exit-status"}, code: ExitOK, status: "done"},
		// A command error exits as it always does.
		{name: "show_unknown", args: []string{"show", "nope", "--exit-status"}, code: ExitNotFound, stderr: "does not exist"},

		// wait always exits by the outcome.
		{name: "wait_done", setup: [][]string{startR1, {"resume", "r1", "--action", "approve"}}, args: []string{"wait", "r1"}, code: ExitOK, status: "done"},
		{name: "wait_cancelled", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}}, args: []string{"wait", "r1"}, code: ExitCancelled, status: "cancelled"},
		{name: "wait_final_sale", setup: [][]string{{"start", "r1", "A3007", "--reason", "size"}}, args: []string{"wait", "r1", "--timeout", "1d"}, code: ExitFailed, status: "failed"},
		{name: "wait_timeout", setup: [][]string{startR1}, args: []string{"wait", "r1", "--timeout", "1ms"}, code: ExitNotFinished, status: "waiting", stderr: "--timeout 1ms passed: task r1 is not finished"},
		{name: "wait_unknown", setup: [][]string{startR1}, args: []string{"wait", "nope"}, code: ExitNotFound, stderr: "not found"},
		{name: "wait_other_user", setup: [][]string{startR1}, args: []string{"--user", "other-user", "wait", "r1"}, code: ExitNotFound, stderr: "not found"},
		{name: "wait_no_data_dir", args: []string{"wait", "r1"}, code: ExitNotFound, stderr: "does not exist"},
		{name: "stop_negative_wait", setup: [][]string{startR1}, args: []string{"stop", "r1", "--wait", "-1s"}, code: ExitUsage, stderr: "--wait must not be negative"},
		{name: "wait_negative_timeout", setup: [][]string{startR1}, args: []string{"wait", "r1", "--timeout", "-1s"}, code: ExitUsage, stderr: "--timeout must not be negative"},
		{name: "wait_bad_timeout", setup: [][]string{startR1}, args: []string{"wait", "r1", "--timeout", "soon"}, code: ExitUsage, stderr: "invalid duration"},
		{name: "wait_no_task", args: []string{"wait"}, code: ExitUsage, stderr: "wait needs TASK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			c.write("rows.csv", "task,order,reason\nb-r1,A3001,too small\nb-r3,A3007,broken\n")
			for _, args := range tc.setup {
				c.mustRun(args...)
			}
			r := c.run(context.Background(), append(tc.args, "--output", "json")...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q; stdout:\n%s", r.code, tc.code, r.stderr, r.stdout)
			}
			switch {
			case tc.stderr == "" && r.stderr != "":
				t.Errorf("stderr %q, want none", r.stderr)
			case tc.stderr != "" && (!strings.Contains(r.stderr, tc.stderr) || strings.Count(r.stderr, "\n") != 1):
				t.Errorf("stderr %q, want one line with %q", r.stderr, tc.stderr)
			}
			if tc.status == "" {
				return
			}
			var v struct{ Status string }
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Status != tc.status {
				t.Errorf("stdout is not one view of status %s (%v):\n%s", tc.status, err, r.stdout)
			}
		})
	}
}

// A context that a signal cancelled exits 128 plus its number, with the
// error code interrupted; one cancelled otherwise (a test's) exits 130.
func TestRunSignalExit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		code  int
		says  string
	}{
		{"SIGINT", signalCause{syscall.SIGINT}, ExitInterrupted, "interrupted by SIGINT"},
		{"SIGTERM", signalCause{syscall.SIGTERM}, ExitTerminated, "interrupted by SIGTERM"},
		{"NoSignal", nil, ExitInterrupted, "interrupted by a signal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(tc.cause)
			r := c.run(ctx, "start", "r1", "A3003", "--reason", "size", "--output", "json", "--exit-status")
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			// One clean line: the signal's name, not the context's "context canceled".
			checkFailure(t, []string{"start"}, r, tc.says)
			if strings.Contains(r.stderr, "context canceled") {
				t.Errorf("stderr %q leaks the context's error text", r.stderr)
			}
			var v struct{ Error struct{ Code string } }
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Error.Code != "interrupted" {
				t.Errorf("stdout %s (%v), want the error code interrupted", r.stdout, err)
			}
		})
	}
}

func TestOutcomeCode(t *testing.T) {
	for o, want := range map[returns.Outcome]int{
		returns.OutcomeDone:        0,
		returns.OutcomeCancelled:   5,
		returns.OutcomeFailed:      6,
		returns.OutcomeNotFinished: 7,
		returns.OutcomeInterrupted: 8,
	} {
		if got := outcomeCode(o); got != want {
			t.Errorf("outcomeCode(%s) = %d, want %d", o, got, want)
		}
	}
}

// The note of a signal that ended a command after it printed its view
// names the signal and, for a stopped run, the command that continues it.
func TestSignalNote(t *testing.T) {
	a := &app{data: DefaultDataDir, user: DefaultUser}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalCause{syscall.SIGTERM})
	for _, tc := range []struct {
		v    *returns.View
		want string
	}{
		{nil, "interrupted by SIGTERM"},
		{&returns.View{Task: "b1", Status: returns.StatusInterrupted}, "interrupted by SIGTERM: task b1 stopped at its last checkpoint and nothing done is lost; continue it with `assistant resume b1`"},
		{&returns.View{Task: "r1", Status: returns.StatusWaiting}, "interrupted by SIGTERM as it ended: task r1 is waiting"},
	} {
		if got := a.signalNote(ctx, tc.v); got != tc.want {
			t.Errorf("signalNote(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestStdoutWriteFailureIsExit1: a command whose output cannot be written
// (stdout on a full disk) is exit 1, an internal failure, whichever way it
// prints (a view, a list, a streamed list, a history); it was exit 2, a
// usage error, for all but orders list.
func TestStdoutWriteFailureIsExit1(t *testing.T) {
	for _, args := range [][]string{
		{"show", "r1"},
		{"list"},
		{"history", "r1"},
		{"orders", "list"},
		{"orders", "list", "--output", "text"},
		{"show", "r1", "--output", "text"},
		{"recover", "--output", "text"},
		{"recover"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			c := newCLI(t)
			c.mustRun(startR1...)
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Skipf("no /dev/full here: %v", err)
			}
			defer full.Close()
			var stderr strings.Builder
			code := Run(context.Background(), append([]string{"--data", c.data}, args...), full, &stderr, c.seed)
			if code != ExitInternal || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want %d and one line", code, stderr.String(), ExitInternal)
			}
		})
	}
}
