package returns

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"assistant/runs"
)

// How often Wait looks at the task (docs/ci.md "How wait waits"): first after
// WaitPollMin, then half as often again after each look that finds nothing
// new, up to WaitPollMax; a change starts over at WaitPollMin.
const (
	WaitPollMin = 100 * time.Millisecond
	WaitPollMax = time.Second
)

// WaitOptions names the task Wait waits for and bounds the wait.
type WaitOptions struct {
	Task string
	User string
	// Timeout bounds the wait in wall-clock time; 0 waits until the task
	// has an outcome or ctx ends.
	Timeout time.Duration
}

// Wait blocks until the task has an outcome (OutcomeOf is not
// OutcomeNotFinished: it is done, cancelled, failed or interrupted, or the
// draft it waits on expired) or o.Timeout passes, and returns its view at
// that moment. At a timeout the view is the current one and its outcome is
// OutcomeNotFinished.
//
// Every view it returns is Show's, the task as it is now: a pending
// draft that has expired (by the service's clock) is reported as the task
// ends: status and stage failed, error draft_expired, no question (asNow). Wait writes nothing: it recovers nothing,
// answers nothing and ends nothing; a run whose process is gone is
// returned at once as it is (OutcomeInterrupted).
//
// It reads cheaply while nothing changes: one read of the task's record
// per look (status, stage, updated_at, lease), and the full view (Show)
// only when that record changed, its holder died, or at the end.
// Errors: ErrInvalid, ErrNotFound (an unknown task, or another user's, at
// once: it does not wait for a task to appear), ctx's error (wrapped; a
// signal), storage errors.
func (s *Service) Wait(ctx context.Context, o WaitOptions) (*View, error) {
	v, err := s.Show(ctx, o.Task, o.User)
	if err != nil {
		return nil, err
	}
	stillThere := func() error { return s.stillThere(ctx, v.Task) }
	if err := stillThere(); err != nil {
		return nil, err
	}
	var timeout <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	seen, err := s.look(ctx, v.Task, o.User)
	if err != nil {
		return nil, err
	}
	interval := WaitPollMin
	for {
		// The view is as of when it was read: judge its expiry now.
		if v.Draft != nil && !v.Draft.Expired && v.Status == StatusWaiting && !s.now().Before(v.Draft.ExpiresAt) {
			if v, err = s.Show(ctx, v.Task, o.User); err != nil {
				return nil, err
			}
		}
		if OutcomeOf(v) != OutcomeNotFinished {
			return v, nil
		}
		pause := time.NewTimer(s.nextLook(v, interval))
		select {
		case <-ctx.Done():
			pause.Stop()
			return nil, fmt.Errorf("wait for %s: %w", v.Task, ctx.Err())
		case <-timeout:
			pause.Stop()
			// The view may be up to WaitPollMax old: print the current one.
			if v, err = s.Show(ctx, v.Task, o.User); err != nil {
				return nil, err
			}
			return v, nil
		case <-pause.C:
		}
		if err := stillThere(); err != nil {
			return nil, err
		}
		now, err := s.look(ctx, v.Task, o.User)
		if err != nil {
			// A store dropped or replaced between the check and the look
			// fails the look: say that, not the look's error.
			if gone := stillThere(); gone != nil {
				return nil, gone
			}
			return nil, err
		}
		if now.same(seen) && !now.holderGone(s) {
			interval = min(interval*3/2, WaitPollMax)
			continue
		}
		seen, interval = now, WaitPollMin
		if v, err = s.Show(ctx, v.Task, o.User); err != nil {
			if gone := stillThere(); gone != nil {
				return nil, gone
			}
			return nil, err
		}
	}
}

// watchFile returns a check that the business file at path is still
// opened, the file the Service opened: an open SQLite file reads on after
// its data dir is deleted, so a wait would otherwise wait for ever for a
// task nobody can reach any more. The check is ErrNotFound once the file
// is gone or another file took its place (a restore); it always passes
// when the file could not be read at Open (opened nil).
func watchFile(path string, opened os.FileInfo) func(ctx context.Context, task string) error {
	if opened == nil {
		return func(context.Context, string) error { return nil }
	}
	dir := filepath.Dir(path)
	return func(_ context.Context, task string) error {
		now, err := os.Stat(path)
		switch {
		case err != nil:
			return fmt.Errorf("wait for %s: %w: the data dir %s was deleted while waiting; nothing more can happen to the task there", task, ErrNotFound, dir)
		case !os.SameFile(opened, now):
			return fmt.Errorf("wait for %s: %w: the data dir %s was replaced while waiting (its %s is another file now); run the command again", task, ErrNotFound, dir, BusinessFile)
		}
		return nil
	}
}

// nextLook is how long Wait pauses before its next look: interval, or less
// when the pending draft expires sooner (by the service's clock), so an
// expiry is reported when it happens.
func (s *Service) nextLook(v *View, interval time.Duration) time.Duration {
	if v.Status == StatusWaiting && v.Draft != nil && !v.Draft.Expired {
		if left := v.Draft.ExpiresAt.Sub(s.now()); left < interval {
			return max(left, time.Millisecond)
		}
	}
	return interval
}

// sighting is what one cheap look at a task's record sees: every command
// that moves a task writes its record (status, stage, updated_at) or its
// lease, so an unchanged sighting means an unchanged outcome, unless the
// holder died meanwhile (holderGone).
type sighting struct {
	status, stage string
	updated       time.Time
	lease         runs.Lease
}

// look reads the task's record: one row of business.sqlite, by its key.
func (s *Service) look(ctx context.Context, task, user string) (sighting, error) {
	t, err := s.task(ctx, task, user)
	if err != nil {
		return sighting{}, fmt.Errorf("wait for %s: %w", task, err)
	}
	return sighting{status: t.Status, stage: t.Stage, updated: t.UpdatedAt, lease: t.Lease}, nil
}

// same reports whether g and h saw the same record. A heartbeat's renewal
// (lease until) is no change: holderGone tells when a lease lapses.
func (g sighting) same(h sighting) bool {
	return g.status == h.status && g.stage == h.stage && g.updated.Equal(h.updated) &&
		g.lease.Owner == h.lease.Owner && g.lease.Epoch == h.lease.Epoch
}

// holderGone reports whether the record names a running task whose holder
// is no longer alive: the record does not change when a process dies.
func (g sighting) holderGone(s *Service) bool {
	return g.status == StatusRunning && !s.holderAlive(g.lease)
}
