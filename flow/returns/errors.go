package returns

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"assistant/business"
	"assistant/flow"
)

// Errors that decide the exit code (docs/cli.md "Exit codes"). Every error
// an operation returns for a person matches one of them with errors.Is once
// passed through Classify, or is a storage failure (exit 1).
var (
	// ErrInvalid: bad input (exit 2). Nothing was changed.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound: unknown task or order, or one of another user's (exit 4).
	ErrNotFound = errors.New("not found")
	// ErrConflict: same task id with other input, a task busy in another
	// process, or the state changed under the request (exit 3).
	ErrConflict = errors.New("conflict")
	// ErrBusy: a data file stayed locked by another process for longer than
	// the busy timeout (exit 3, like a busy task). Classify marks it; an
	// error it marks matches ErrConflict too.
	ErrBusy = errors.New("data file busy")
	// ErrInterrupted: the command's context was cancelled (SIGINT, SIGTERM)
	// before it did its work (exit 130).
	ErrInterrupted = errors.New("interrupted")
	// ErrUnauthenticated: a request to the server carried no access
	// token, or one that is unknown, revoked or expired (HTTP 401;
	// docs/server.md "Access tokens"). No command line meets it.
	ErrUnauthenticated = errors.New("unauthenticated")
)

// ErrLostBusiness: checkpoints.sqlite holds runs but business.sqlite beside
// it is missing or empty, so their tasks, drafts and applications are gone.
// Its hint is refusalHints'.
var ErrLostBusiness = errors.New("the business file is missing or empty, so the tasks, drafts and applications of those runs are lost")

// busyError marks a store locked past the busy timeout: ErrBusy, and
// ErrConflict too. Its message says who held what; its hint is to try
// again.
type busyError struct{ err error }

func (e *busyError) Error() string {
	what := fmt.Sprintf("another process held the data dir's write lock for longer than %s", business.DefaultBusyTimeout)
	if business.IsPGLockBusy(e.err) {
		what = "another session held a lock on the database for longer than the lock timeout"
	}
	// The database's own words ("database is locked (5) (SQLITE_BUSY)")
	// give way to what happened; the context around them stays.
	msg := e.err.Error()
	if cause := business.BusyCause(e.err); cause != nil {
		if around, ok := strings.CutSuffix(msg, cause.Error()); ok {
			if around = strings.TrimSuffix(around, ": "); around == "" {
				return what
			}
			return around + ": " + what
		}
	}
	return fmt.Sprintf("%s (%s)", msg, what)
}

func (e *busyError) Unwrap() error { return e.err }

// Is makes errors.Is match ErrBusy and ErrConflict.
func (e *busyError) Is(target error) bool { return target == ErrBusy || target == ErrConflict }

func (e *busyError) hint() (Hint, bool) {
	return Hint{Before: "try again once the other process is done"}, true
}

// serverBusyHint is the hint of a PostgreSQL server that had no free
// connection slot for the whole connect timeout.
var serverBusyHint = Hint{Before: fmt.Sprintf("every connection slot of the server stayed taken (max_connections, or the database's or role's CONNECTION LIMIT), or it was starting up, for the connect timeout (%s unless the URL sets connect_timeout); try again later, or raise the limit", business.PGConnectTimeout)}

// Classify returns err so that errors.Is finds this package's sentinels in
// it: a cancelled context becomes ErrInterrupted, an SQLite file locked past
// the busy timeout (either store) ErrBusy with a hint, a checkpoint
// compare-and-set that lost ErrConflict, and a store's refusal of a file
// or schema without a hint gets its hint (refusalHints). Other errors are
// returned as they are. cmd calls it once per command, so it needs no store package to
// choose an exit code.
func Classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) && !errors.Is(err, ErrInterrupted):
		return &marked{err, ErrInterrupted}
	case errors.Is(err, business.ErrPGServerBusy) && !errors.Is(err, ErrBusy):
		return &Error{Kind: ErrBusy, Message: err.Error(), Hint: serverBusyHint, err: err}
	case business.IsBusy(err) && !errors.Is(err, ErrBusy):
		return &busyError{err}
	case errors.Is(err, flow.ErrConflict) && !errors.Is(err, ErrConflict):
		return &marked{err, ErrConflict}
	case errors.Is(err, business.ErrPairMismatch) && !errors.Is(err, ErrInconsistent):
		// The data dir's two files belong to different data dirs.
		return Classify(&marked{err, ErrInconsistent})
	}
	if _, ok := HintOf(err); !ok {
		if h, ok := refusalHint(err); ok {
			return &refused{err, h}
		}
	}
	return err
}

// marked is err, unchanged in its message, that also matches sentinel.
type marked struct {
	err      error
	sentinel error
}

func (e *marked) Error() string { return e.err.Error() }

func (e *marked) Unwrap() error { return e.err }

// Is makes errors.Is match the sentinel.
func (e *marked) Is(target error) bool { return target == e.sentinel }

// Error is an error meant for a person: what happened (Message, in the
// domain's words, naming inputs by Input) and what to do next (Hint),
// kept apart, and its Kind. errors.Is and errors.As see through it to
// the sentinel and every error it wraps.
type Error struct {
	// Kind is the sentinel the error matches (KindOf); nil for a
	// failure.
	Kind error
	// Message is what happened, with its inputs named by PlainWords; it
	// is what Error returns.
	Message string
	// Hint is what to do next; zero for nothing.
	Hint Hint

	err    error // fmt.Errorf(format, args...): Message and the chain
	format string
	args   []any
}

// Error returns the message, without the hint.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the error the message says, whose chain holds Kind and
// the errors the message wraps; nil for an Error made as a literal.
func (e *Error) Unwrap() error { return e.err }

// Is makes errors.Is match Kind, also for an Error made as a literal.
func (e *Error) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// Text is the message with its inputs named by w, and every *Error it
// wraps worded by w too; an Error made as a literal is its Message.
func (e *Error) Text(w Wording) string {
	if e.format == "" {
		return e.Message
	}
	return fmt.Sprintf(wrapVerb.ReplaceAllString(e.format, "%${1}v"), wordArgs(e.args, w)...)
}

// wrapVerb is a %w verb of a format, with its flags, width and precision
// (%.0w wraps an error its message does not print): Text prints each as
// %v with the same, as the args it words are strings.
var wrapVerb = regexp.MustCompile(`%([-+# 0]*[0-9]*(?:\.[0-9]*)?)w`)

// wordArgs is args with each Input and phrase worded by w, and each error
// by textOf.
func wordArgs(args []any, w Wording) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case worded:
			out[i] = a.words(w)
		case error:
			out[i] = textOf(a, w)
		default:
			out[i] = a
		}
	}
	return out
}

// errorf is fmt.Errorf(format, args...) as an *Error with hint h: an
// argument that is an Input or a phrase is worded by the front end that
// prints the message (Error.Text), and %w wraps as it does for
// fmt.Errorf.
func errorf(h Hint, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: KindOf(err), Message: err.Error(), Hint: h, err: err, format: format, args: args}
}

// kinds are the sentinels KindOf chooses from, in order.
var kinds = []error{ErrInterrupted, ErrInconsistent, ErrInvalid, ErrBusy, ErrNotFound, ErrConflict, ErrUnauthenticated}

// KindOf is the kind of err: the first of ErrInterrupted, ErrInconsistent,
// ErrInvalid, ErrBusy, ErrNotFound, ErrConflict and ErrUnauthenticated that errors.Is finds in
// it (pass it through Classify first), or nil for a failure of no kind.
func KindOf(err error) error {
	for _, k := range kinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

// textOf is err's message with the first *Error in its chain (errors.As)
// worded by w.
func textOf(err error, w Wording) string {
	var e *Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	return strings.Replace(err.Error(), e.Message, e.Text(w), 1)
}

// hinted is an error that says what to do next: *Error, and the typed
// errors of this package with a hint of their own. final is set when the
// search for err's hint ends at it (HintOf): a hint of its own, or none
// when its text says the hints of the errors it joins (*RecoverError);
// an *Error without a hint wraps one that may have one.
type hinted interface {
	error
	hint() (h Hint, final bool)
}

func (e *Error) hint() (Hint, bool) { return e.Hint, !e.Hint.IsZero() }

// HintOf returns the first hint in err's chain, depth first as errors.As
// looks (a hinted error's, unless it ends the search without one).
func HintOf(err error) (Hint, bool) {
	if h, ok := err.(hinted); ok {
		if hint, final := h.hint(); final {
			return hint, !hint.IsZero()
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return HintOf(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if h, ok := HintOf(e); ok {
				return h, true
			}
		}
	}
	return Hint{}, false
}

// Describe is err for a person, as w words it: the message (err's text
// with the inputs it names worded by w) and the hint (HintOf, worded by
// w; "" for none). The message does not end in the words of its kind
// (": conflict", ": not found"): a wrapped sentinel gives the kind, and
// the front end says it by the exit code or the JSON code.
func Describe(err error, w Wording) (message, hint string) {
	message = withoutKindWords(textOf(err, w))
	if h, ok := HintOf(err); ok {
		hint = w.Hint(h)
	}
	return message, hint
}

// withoutKindWords is message without the words of its kind that
// wrapping left in it, so that it reads as a sentence: the exit code and
// the JSON code say the kind. "invalid input: " in front of what was
// wrong (fmt.Errorf("%w: …", ErrInvalid)) is dropped, at the start and
// after an operation's "start r1: "; ": conflict" and ": unauthenticated"
// at the end are dropped; "X: not found" reads "X not found".
func withoutKindWords(message string) string {
	invalid := ErrInvalid.Error() + ": "
	message = strings.ReplaceAll(strings.TrimPrefix(message, invalid), ": "+invalid, ": ")
	for _, k := range []error{ErrConflict, ErrUnauthenticated} {
		if m, ok := strings.CutSuffix(message, ": "+k.Error()); ok && m != "" {
			return m
		}
	}
	if m, ok := strings.CutSuffix(message, ": "+ErrNotFound.Error()); ok && m != "" {
		return m + " " + ErrNotFound.Error()
	}
	return message
}

// Line is a message and its hint as one line: "message; hint", or the
// message alone without a hint. Every front end that prints both on one
// line joins them so.
func Line(message, hint string) string {
	if hint == "" {
		return message
	}
	return message + "; " + hint
}

// Say is err as one line worded by w: Line of Describe.
func Say(err error, w Wording) string { return Line(Describe(err, w)) }
