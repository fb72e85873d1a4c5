package returns

import (
	"context"
	"errors"
	"fmt"

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
)

// ErrLostBusiness: checkpoints.sqlite holds runs but business.sqlite beside
// it is missing or empty, so their tasks, drafts and applications are gone.
var ErrLostBusiness = errors.New("the business file is missing or empty, so the tasks, drafts and applications of those runs are lost; restore business.sqlite from a backup (or move both files away to start afresh)")

// busyError marks a file locked past the busy timeout: ErrBusy, and
// ErrConflict too, with a hint in its message.
type busyError struct{ err error }

func (e *busyError) Error() string {
	return fmt.Sprintf("%v (another process held the data dir's write lock for longer than %s; try again)", e.err, business.DefaultBusyTimeout)
}

func (e *busyError) Unwrap() error { return e.err }

// Is makes errors.Is match ErrBusy and ErrConflict.
func (e *busyError) Is(target error) bool { return target == ErrBusy || target == ErrConflict }

// Classify returns err so that errors.Is finds this package's sentinels in
// it: a cancelled context becomes ErrInterrupted, an SQLite file locked past
// the busy timeout (either store) ErrBusy with a hint, a checkpoint
// compare-and-set that lost ErrConflict. Other errors are returned as they
// are. cmd calls it once per command, so it needs no store package to
// choose an exit code.
func Classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) && !errors.Is(err, ErrInterrupted):
		return &marked{err, ErrInterrupted}
	case business.IsBusy(err) && !errors.Is(err, ErrBusy):
		return &busyError{err}
	case errors.Is(err, flow.ErrConflict) && !errors.Is(err, ErrConflict):
		return &marked{err, ErrConflict}
	case errors.Is(err, business.ErrPairMismatch) && !errors.Is(err, ErrInconsistent):
		// The data dir's two files belong to different data dirs.
		return &marked{err, ErrInconsistent}
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
