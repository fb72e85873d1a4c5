package returns

import (
	"context"

	"assistant/runs"
)

// Fingerprint is the fingerprint Start records for a request, for tests
// (package returns_test) that write a task record the way Start would.
func Fingerprint(user, order, reason string) string {
	return fingerprint(StartOptions{User: user, Order: order, Reason: reason})
}

// Repair is the runner's repair of a record that lags behind its head
// (v read with the record t), for tests.
func (s *Service) Repair(ctx context.Context, t runs.TaskRecord, v *View) error {
	return s.cmd.repair(ctx, t, v)
}

// Errorf is errorf, for tests: an *Error with hint h.
func Errorf(h Hint, format string, args ...any) error { return errorf(h, format, args...) }

// Phrasef is phrasef, for tests: a message argument whose Inputs the front
// end words.
func Phrasef(format string, args ...any) any { return phrasef(format, args...) }

// AfterSubmit is the router after the submit node, for tests.
func AfterSubmit(s State) []string { return afterSubmit(s) }

// RoundAction is what a round's answers decide, for tests.
func RoundAction(s State) string { return roundAction(s) }
