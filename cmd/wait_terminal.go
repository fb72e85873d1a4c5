package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"assistant/flow/returns"
)

// waitStatusEvery is how often wait's status line on a terminal is
// redrawn.
const waitStatusEvery = time.Second

// waitStatus is what wait shows on a terminal while it waits (docs/ci.md
// "How wait waits"): first what the task waits for and the commands that
// answer it from another terminal, then one status line redrawn in place
// (elapsed time, the draft's remaining validity) until stop clears it.
// On a pipe or file wait prints none of it.
type waitStatus struct {
	w      io.Writer
	now    func() time.Time
	began  time.Time
	draft  *returns.DraftView
	done   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once
}

// startWaitStatus shows, on a terminal stderr, what task v waits for and
// how to answer it, and starts its status line; nil (nothing shown) when
// stderr is no terminal or v has an outcome already (wait returns at once).
func (a *app) startWaitStatus(v *returns.View) *waitStatus {
	if !isTerminal(a.stderr) || returns.OutcomeOf(v) != returns.OutcomeNotFinished {
		return nil
	}
	fmt.Fprint(a.stderr, waitHeading(v, a.nextCommandPrefix(), a.user))
	s := &waitStatus{w: a.stderr, now: a.now, began: time.Now(), draft: v.Draft, done: make(chan struct{})}
	s.draw()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(waitStatusEvery)
		defer tick.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-tick.C:
				s.draw()
			}
		}
	}()
	return s
}

// waitHeading is what task v waits for, and the commands from writeCard
// that answer it (prog is their prefix, viewer the person who runs wait).
func waitHeading(v *returns.View, prog, viewer string) string {
	var b strings.Builder
	what := "its run to end"
	switch {
	case v.Status == returns.StatusWaiting && v.Kind != nil && *v.Kind == returns.KindApproval && v.Draft != nil:
		what = fmt.Sprintf("a decision on draft version %d", max(v.Draft.Version, 1))
	case v.Status == returns.StatusWaiting && v.Kind != nil && *v.Kind == returns.KindNeedReason:
		what = "a reason from " + termSafe(v.User)
	case v.Holder != nil && v.Holder.Alive:
		what = fmt.Sprintf("its run in pid %d on %s to end", v.Holder.PID, termSafe(v.Holder.Host))
	}
	fmt.Fprintf(&b, "Waiting for task %s (order %s): %s.\n", termSafe(v.Task), termSafe(v.Order), what)
	var card strings.Builder
	_ = writeCard(&card, v, prog, viewer)
	var next []string
	for _, line := range strings.Split(card.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "Next:"); ok {
			next = append(next, strings.TrimSpace(rest))
		} else if rest, ok := strings.CutPrefix(line, "   or:"); ok {
			next = append(next, strings.TrimSpace(rest))
		}
	}
	if len(next) > 0 {
		b.WriteString("Answer it from another terminal:\n")
		for _, n := range next {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	return b.String()
}

// line is the status line at now: the time waited and the draft's
// remaining validity, by the service's clock.
func (s *waitStatus) line(now, wall time.Time) string {
	l := "waiting " + wall.Sub(s.began).Round(time.Second).String()
	if s.draft != nil {
		if left := s.draft.ExpiresAt.Sub(now).Round(time.Second); left > 0 {
			l += " · draft valid " + left.String() + " more"
		} else {
			l += " · draft expired"
		}
	}
	return l
}

// draw redraws the status line in place: carriage return, the line, and
// the rest of the terminal line cleared.
func (s *waitStatus) draw() {
	fmt.Fprintf(s.w, "\r%s\x1b[K", s.line(s.now(), time.Now()))
}

// stop ends the status line and clears it, so what follows (the task on
// stdout, a note on stderr) starts on a clean line. A nil s does nothing.
func (s *waitStatus) stop() {
	if s == nil {
		return
	}
	s.closed.Do(func() {
		close(s.done)
		s.wg.Wait()
		fmt.Fprint(s.w, "\r\x1b[K")
	})
}

// waitOnTerminal runs wait for opts with the terminal status around it:
// the task is read once (Show) to say what it waits for; a task that
// cannot be read shows nothing, and Wait reports why.
func (a *app) waitOnTerminal(ctx context.Context, svc *returns.Service, o returns.WaitOptions) (*returns.View, error) {
	var st *waitStatus
	if isTerminal(a.stderr) {
		if v, err := svc.Show(ctx, o.Task, o.User); err == nil {
			st = a.startWaitStatus(v)
		}
	}
	defer st.stop()
	return svc.Wait(ctx, o)
}
