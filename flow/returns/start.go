package returns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// StartOptions are the input of Start.
type StartOptions struct {
	Task   string
	User   string
	Order  string
	Reason string        // may be empty: the flow asks for one
	TTL    time.Duration // draft validity; 0 means business.DefaultDraftTTL
}

// ValidateStart checks StartOptions without touching any file; errors match
// ErrInvalid.
func ValidateStart(o StartOptions) error {
	if err := ValidTaskID(o.Task); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := ValidTaskID(o.Order); err != nil {
		return fmt.Errorf("%w: order id: %v", ErrInvalid, err)
	}
	if strings.TrimSpace(o.User) == "" {
		return fmt.Errorf("%w: user must not be empty", ErrInvalid)
	}
	if o.Reason != "" && strings.TrimSpace(o.Reason) != "" {
		if err := ValidReason(strings.TrimSpace(o.Reason)); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	if o.TTL != 0 && (o.TTL < MinDraftTTL || o.TTL > MaxDraftTTL) {
		return fmt.Errorf("%w: draft ttl %s is outside %s..%s", ErrInvalid, o.TTL, MinDraftTTL, MaxDraftTTL)
	}
	return nil
}

// fingerprint identifies a start's input: the same task id started again
// with the same fingerprint returns its progress, with another is refused.
func fingerprint(o StartOptions) string {
	sum := sha256.Sum256([]byte(o.User + "\x00" + o.Order + "\x00" + strings.TrimSpace(o.Reason)))
	return hex.EncodeToString(sum[:16])
}

// Start begins a return request, or returns the progress of the same request
// started before. It runs the flow until its first question or its end.
// Errors: ErrInvalid, ErrNotFound (unknown order or another user's),
// ErrConflict (the task id exists with other input), storage errors.
func (s *Service) Start(ctx context.Context, o StartOptions) (*View, error) {
	if err := ValidateStart(o); err != nil {
		return nil, err
	}
	if o.TTL == 0 {
		o.TTL = business.DefaultDraftTTL
	}
	v, err := s.cmd.start(ctx, o)
	return v.markExpired(s.now()), err
}

// start runs Start's request (o valid, its TTL set) with r's policy.
func (r *runner) start(ctx context.Context, o StartOptions) (*View, error) {
	fp := fingerprint(o)
	t, err := r.runs.Task(ctx, o.Task)
	switch {
	case err == nil:
		return r.restart(ctx, t, o, fp)
	case !errors.Is(err, runs.ErrNotFound):
		return nil, fmt.Errorf("start %s: %w", o.Task, err)
	}
	return r.create(ctx, o, fp)
}

// create records and runs a task that does not exist yet (o is valid, its
// TTL set, fp its fingerprint).
func (r *runner) create(ctx context.Context, o StartOptions, fp string) (*View, error) {
	if _, err := r.desk.Order(ctx, o.Order, o.User); errors.Is(err, business.ErrNotFound) {
		return nil, fmt.Errorf("order %s: %w for user %s", o.Order, ErrNotFound, o.User)
	} else if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Task, err)
	}
	if err := r.orphanRun(ctx, o.Task, o.User); err != nil {
		return nil, err
	}
	now := r.svc.now().UTC()
	t := runs.TaskRecord{ID: o.Task, User: o.User, OrderID: o.Order, Reason: strings.TrimSpace(o.Reason), Fingerprint: fp, Status: StatusRunning, CreatedAt: now, UpdatedAt: now, Kind: runs.KindReturn, Lease: r.lease()}
	t.Lease.Epoch = 1 // CreateLeasedTask's
	// The task is created holding its lease, so no other process sees it
	// running without a holder.
	if err := r.runs.CreateLeasedTask(ctx, t, runs.KindReturn, o.TTL, t.Lease); errors.Is(err, runs.ErrTaskExists) {
		// Another process created it a moment ago: treat as a restart.
		if t, err = r.runs.Task(ctx, o.Task); err != nil {
			return nil, fmt.Errorf("start %s: %w", o.Task, err)
		}
		return r.restart(ctx, t, o, fp)
	} else if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Task, err)
	}
	r.steps.fresh(t.ID)
	return r.invoke(ctx, t, o.TTL)
}

// invoke runs a task's first invocation with draft validity ttl; the caller
// holds the lease.
func (r *runner) invoke(ctx context.Context, t runs.TaskRecord, ttl time.Duration) (*View, error) {
	return r.driveReturn(ctx, t, func(ctx context.Context, g *flow.Runnable[State]) (*flow.Snapshot[State], error) {
		snap, err := g.Invoke(ctx, t.ID, State{
			Task: t.ID, User: t.User, Order: t.OrderID, Reason: t.Reason, TTLSeconds: int64(ttl / time.Second),
		})
		if errors.Is(err, flow.ErrThreadExists) {
			return nil, nil
		}
		return snap, err
	})
}

// restart answers a Start of a task that exists.
func (r *runner) restart(ctx context.Context, t runs.TaskRecord, o StartOptions, fp string) (*View, error) {
	if t.User != o.User {
		// Task ids are global: say it is taken, and nothing about whose.
		return nil, fmt.Errorf("task id %s is already taken: %w (choose another task id)", o.Task, ErrConflict)
	}
	if t.Fingerprint != fp {
		return nil, fmt.Errorf("task %s already exists with other input: %w (choose another task id, or run `assistant show %s`)", o.Task, ErrConflict, o.Task)
	}
	snap, err := r.graph.State(ctx, t.ID)
	if errors.Is(err, flow.ErrThreadNotFound) {
		// The task record was written but the process died before the
		// first checkpoint: run it now.
		if err := r.acquire(ctx, &t); err != nil {
			return nil, err
		}
		return r.invoke(ctx, t, o.TTL)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", t.ID, err)
	}
	if err := r.reconcile(ctx, t.ID, snap); err != nil {
		return nil, err
	}
	if snap.Done() || snap.Waiting() {
		// Parked or finished (perhaps by another process a moment ago).
		v := view(t, snap)
		if cur, err := r.runs.Task(ctx, t.ID); err == nil && cur.Status == StatusRunning {
			if err := r.repair(ctx, cur, v); err != nil && !errors.Is(err, ErrConflict) {
				return nil, err
			}
		}
		return v, nil
	}
	// Mid-run: the same start again after a crash or a stop continues it,
	// unless a live process drives it now (then it shows its progress).
	if l, _, err := r.runs.TaskLease(ctx, t.ID); err == nil && r.svc.holderAlive(l) {
		return r.show(ctx, t.ID)
	}
	return r.resume(ctx, t, ResumeOptions{Task: t.ID, User: t.User})
}
