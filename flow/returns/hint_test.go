package returns_test

import (
	"errors"
	"fmt"
	"testing"

	"assistant/flow/returns"
)

// TestError: an error for a person carries its kind, its message and its
// hint apart; errors.Is and errors.As see through it and through any
// wrapping; each front end words its inputs and its hint.
func TestError(t *testing.T) {
	show := returns.Hint{Before: "see it with", Do: returns.DoShow, Task: "r1"}

	t.Run("KindMessageAndHintApart", func(t *testing.T) {
		err := returns.Errorf(show, "stop %s: it already ended: %w", "r1", returns.ErrConflict)
		var e *returns.Error
		if !errors.As(err, &e) {
			t.Fatalf("%T is no *returns.Error", err)
		}
		if e.Kind != returns.ErrConflict || returns.KindOf(err) != returns.ErrConflict || !errors.Is(err, returns.ErrConflict) {
			t.Errorf("kind %v, KindOf %v; want ErrConflict", e.Kind, returns.KindOf(err))
		}
		if want := "stop r1: it already ended: conflict"; e.Message != want || err.Error() != want {
			t.Errorf("message %q, Error %q; want %q, without the hint", e.Message, err.Error(), want)
		}
		wantHint(t, err, show)
	})

	t.Run("WrappedKeepsItsHint", func(t *testing.T) {
		err := fmt.Errorf("resume r1: %w", returns.Errorf(show, "task %s: %w", "r1", returns.ErrNotFound))
		wantHint(t, err, show)
		msg, hint := returns.Describe(err, returns.PlainWords)
		if msg != "resume r1: task r1 not found" || hint != "see it with show r1" {
			t.Errorf("Describe = %q, %q", msg, hint)
		}
		if got := returns.Say(err, returns.PlainWords); got != "resume r1: task r1 not found; see it with show r1" {
			t.Errorf("Say = %q", got)
		}
	})

	t.Run("FirstHintOfJoinedErrors", func(t *testing.T) {
		err := fmt.Errorf("%w; then ending it failed: %w", returns.Errorf(show, "lease lost"), errors.New("disk full"))
		wantHint(t, err, show)
		if _, ok := returns.HintOf(errors.New("plain")); ok {
			t.Error("a plain error has a hint")
		}
	})

	t.Run("InputsWordedByTheFrontEnd", func(t *testing.T) {
		inner := returns.Errorf(returns.Hint{}, "%w: %s must be 1 or 2, not %d", returns.ErrInvalid, returns.InputApprovals, 3)
		if inner.Error() != "invalid input: approvals must be 1 or 2, not 3" {
			t.Errorf("plain message %q", inner)
		}
		outer := fmt.Errorf("start r1: %w", returns.Errorf(returns.Hint{}, "%w (%s)", inner, returns.InputDraftTTL))
		if msg, _ := returns.Describe(outer, flagWords{}); msg != "start r1: --approvals must be 1 or 2, not 3 (--draft-ttl)" {
			t.Errorf("worded message %q", msg)
		}
		given := returns.Errorf(returns.Hint{}, "the answer %s changes nothing: %w", returns.Phrasef("%s %q", returns.InputReason, "too small"), returns.ErrConflict)
		if msg, _ := returns.Describe(given, flagWords{}); msg != `the answer --reason "too small" changes nothing` {
			t.Errorf("worded phrase %q", msg)
		}
	})

	t.Run("AnErrorWrappedUnprintedStaysUnprinted", func(t *testing.T) {
		held := errors.New("held by pid 7")
		err := returns.Errorf(show, "task %s is stopped: %w; nothing was done%.0w", "r1", returns.ErrConflict, held)
		if !errors.Is(err, held) {
			t.Errorf("%v does not wrap %v", err, held)
		}
		want := "task r1 is stopped: conflict; nothing was done"
		if msg, _ := returns.Describe(err, flagWords{}); msg != want || err.Error() != want {
			t.Errorf("worded %q, plain %q; want %q for both", msg, err.Error(), want)
		}
	})

	t.Run("PlainWords", func(t *testing.T) {
		for _, tc := range []struct {
			hint returns.Hint
			want string
		}{
			{returns.Hint{Before: "run", Do: returns.DoList, After: "to see your tasks"}, "run list to see your tasks"},
			{returns.Hint{Before: "wait for that process to end (", Do: returns.DoWait, Task: "b1", After: "), then run the same command again"},
				"wait for that process to end (wait b1), then run the same command again"},
			{returns.Hint{Do: returns.DoResume, Task: "r1", With: []returns.InputValue{{Input: returns.InputAction, Value: "edit"}, {Input: returns.InputReason, Value: "smaller"}}},
				"resume r1 with action edit reason smaller"},
			{returns.Hint{Before: "run it with", With: []returns.InputValue{{Input: returns.InputUser, Value: "ann"}}}, "run it with user ann"},
			{returns.Hint{Before: "give it without", With: []returns.InputValue{{Input: returns.InputInterrupt}}}, "give it without interrupt"},
			{returns.Hint{Before: "choose another task id", Then: &returns.Hint{Before: ", or run", Do: returns.DoShow, Task: "r1"}}, "choose another task id, or run show r1"},
			{returns.Hint{Before: "run", Do: returns.DoAnswer, Task: "r1", Ask: returns.KindApproval}, "run answer r1 (approval)"},
		} {
			if got := returns.PlainWords.Hint(tc.hint); got != tc.want {
				t.Errorf("PlainWords.Hint(%+v) = %q, want %q", tc.hint, got, tc.want)
			}
		}
		if returns.Line("m", "") != "m" || returns.Line("m", "h") != "m; h" {
			t.Error("Line joins a message and its hint with \"; \", and is the message alone without one")
		}
	})
}

// TestErrorLiteral: an Error another package makes as a literal matches
// its Kind and says its Message.
func TestErrorLiteral(t *testing.T) {
	err := fmt.Errorf("serve: %w", &returns.Error{Kind: returns.ErrNotFound, Message: "task r1: not found", Hint: returns.Hint{Do: returns.DoList}})
	if !errors.Is(err, returns.ErrNotFound) || returns.KindOf(err) != returns.ErrNotFound {
		t.Errorf("%v does not match its kind", err)
	}
	if msg, hint := returns.Describe(err, returns.PlainWords); msg != "serve: task r1 not found" || hint != "list" {
		t.Errorf("Describe = %q, %q", msg, hint)
	}
}

// TestDescribeReadsAsASentence: the words of an error's kind that wrapping
// leaves in its message ("invalid input: " in front, ": conflict" at the
// end) are not printed: the exit code and the JSON code say the kind, and
// the line reads as a sentence.
func TestDescribeReadsAsASentence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"InvalidInFront", fmt.Errorf("%w: backup directory B is not empty", returns.ErrInvalid), "backup directory B is not empty"},
		{"InvalidAfterTheOperation", fmt.Errorf("start r1: %w", fmt.Errorf("%w: reason is empty", returns.ErrInvalid)), "start r1: reason is empty"},
		{"InvalidOnlyAsKindWords", fmt.Errorf("%w: the value is \"invalid input\"", returns.ErrInvalid), `the value is "invalid input"`},
		{"ConflictAtTheEnd", fmt.Errorf("stop r1: it already ended: %w", returns.ErrConflict), "stop r1: it already ended"},
		{"NotFoundAtTheEnd", fmt.Errorf("task r1: %w", returns.ErrNotFound), "task r1 not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if msg, _ := returns.Describe(tc.err, returns.PlainWords); msg != tc.want {
				t.Errorf("Describe(%q) = %q, want %q", tc.err, msg, tc.want)
			}
		})
	}
}
