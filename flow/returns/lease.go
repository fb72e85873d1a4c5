package returns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/google/uuid"

	"assistant/runs"
)

// Lease timing. The holder renews its lease every DefaultHeartbeat; a lease
// not renewed for DefaultLeaseTTL lapses and another process may take the
// task over. The heartbeat also polls for an operator stop, so a stop is
// noticed within DefaultHeartbeat (docs/recovery.md).
const (
	DefaultLeaseTTL  = 5 * time.Second
	DefaultHeartbeat = 250 * time.Millisecond
)

// errStopped is the cancel cause when an operator stopped the task.
var errStopped = errors.New("stopped by operator")

// identity is this process as a lease holder.
type identity struct {
	owner string
	pid   int
	host  string
}

func newIdentity() identity {
	host, _ := os.Hostname()
	return identity{owner: uuid.NewString(), pid: os.Getpid(), host: host}
}

// holderGone reports whether a lease's holder is known dead: it ran on this
// host and its pid no longer exists. On another host only expiry tells.
func (s *Service) holderGone(l runs.Lease) bool {
	if l.Owner == "" {
		return true
	}
	if l.Host != s.me.host || l.PID <= 0 {
		return false
	}
	if l.PID == s.me.pid {
		return l.Owner != s.me.owner
	}
	err := syscall.Kill(l.PID, 0)
	return errors.Is(err, syscall.ESRCH)
}

// holderAlive reports whether a live process holds the lease now: there is
// a holder, its lease has not lapsed, and it is not known dead.
func (s *Service) holderAlive(l runs.Lease) bool {
	return l.Owner != "" && l.Until.After(s.now()) && !s.holderGone(l)
}

// lease is the lease r takes: this process, for r.policy.leaseTTL from now.
func (r *runner) lease() runs.Lease {
	me := r.svc.me
	return runs.Lease{Owner: me.owner, PID: me.pid, Host: me.host, Until: r.svc.now().UTC().Add(r.policy.leaseTTL)}
}

// acquire takes the task's lease, marking steps that a dead or stopped
// holder left running as failed, and sets t.Status and t.Lease to what the
// record now holds (running; this process, with the new fencing epoch). A
// live holder is ErrConflict (busy).
func (r *runner) acquire(ctx context.Context, t *runs.TaskRecord) error {
	now := r.svc.now().UTC()
	l := r.lease()
	prev, epoch, err := r.runs.AcquireLease(ctx, t.ID, l, now, r.svc.holderGone)
	var held *runs.LeaseHeldError
	switch {
	case errors.As(err, &held):
		if t.Status != StatusRunning && t.Status != StatusInterrupted {
			// A batch holds the row while it stores its run.
			return fmt.Errorf("%w: %v; a batch is storing it, try again in a moment", ErrConflict, err)
		}
		return fmt.Errorf("%w: %v; wait for it to finish, or run `assistant stop %s`", ErrConflict, err, t.ID)
	case errors.Is(err, runs.ErrConflict):
		return fmt.Errorf("task %s was taken by another process at the same moment: %w", t.ID, ErrConflict)
	case err != nil:
		return err
	}
	l.Epoch = epoch
	t.Status, t.Lease = StatusRunning, l
	if prev != StatusRunning && prev != StatusInterrupted {
		return nil
	}
	msg := msgProcessGone
	if prev == StatusInterrupted {
		msg = msgInterrupted
	}
	_, err = r.runs.FailRunningSteps(ctx, t.ID, msg, now)
	return err
}

// heartbeat renews the lease of task every DefaultHeartbeat until done is
// closed, and cancels the run (errStopped) when the lease is lost or an
// operator stopped the task.
func (r *runner) heartbeat(ctx context.Context, task string, done <-chan struct{}, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(DefaultHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			err := r.runs.RenewLease(ctx, task, r.svc.me.owner, r.svc.now().UTC().Add(DefaultLeaseTTL))
			if errors.Is(err, runs.ErrConflict) {
				cancel(errStopped)
				return
			}
		}
	}
}

// repair records v's status on a task record that lags behind its head,
// taking the lease so that a live process is never overruled.
func (r *runner) repair(ctx context.Context, t runs.TaskRecord, v *View) error {
	if t.Status == v.Status && t.Stage == v.Stage {
		return nil
	}
	if err := r.acquire(ctx, &t); err != nil {
		return err
	}
	return r.runs.ReleaseLeaseSync(ctx, t.ID, r.svc.me.owner, v.Status, v.Stage)
}
