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
	// Approvals is how many people must approve the draft: 1 or 2 (0
	// means 1). Part of the input binding.
	Approvals int
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
	if o.Approvals < 0 || o.Approvals > MaxApprovals {
		return errorf(Hint{}, "%w: %s must be 1 or 2, not %d", ErrInvalid, InputApprovals, o.Approvals)
	}
	return ValidDraftTTL(o.TTL)
}

// ValidDraftTTL returns ErrInvalid unless ttl is 0 (the default) or a whole
// number of seconds in MinDraftTTL..MaxDraftTTL. A draft's validity is
// kept in whole seconds (the task record and the state hold seconds), so a
// sub-second part (1999ms) is refused rather than cut off.
func ValidDraftTTL(ttl time.Duration) error {
	if ttl == 0 {
		return nil
	}
	if ttl < MinDraftTTL || ttl > MaxDraftTTL {
		return fmt.Errorf("%w: draft ttl %s is outside %s..%s", ErrInvalid, ttl, MinDraftTTL, MaxDraftTTL)
	}
	if ttl%time.Second != 0 {
		return fmt.Errorf("%w: draft ttl %s is not a whole number of seconds (drafts are valid for whole seconds: use %s or %s)", ErrInvalid, ttl, ttl.Truncate(time.Second), ttl.Truncate(time.Second)+time.Second)
	}
	return nil
}

// fingerprint identifies a start's input, everything that shapes the run:
// user, order, reason and draft validity (0 meaning the default). The same task id
// started again with the same input returns its progress, with other
// input is refused (sameInput).
//
// With the default validity it is baseFingerprint, the form every task
// stored before the validity joined the input, so a batch row (which runs
// with the default) and a retry of an old task compare equal by the
// fingerprint alone; any other validity is part of the hash.
//
// Two approvals are part of the hash too ("approvals=2" after the
// validity), so every task of one approval, as every task started before
// two could be asked for, keeps its fingerprint.
func fingerprint(o StartOptions) string {
	ttl := o.TTL
	if ttl == 0 {
		ttl = business.DefaultDraftTTL
	}
	switch {
	case o.Approvals >= 2:
		return hashInput(o.User, o.Order, strings.TrimSpace(o.Reason), fmt.Sprintf("ttl_ms=%d", ttl.Milliseconds()), fmt.Sprintf("approvals=%d", o.Approvals))
	case ttl == business.DefaultDraftTTL:
		return baseFingerprint(o)
	}
	return hashInput(o.User, o.Order, strings.TrimSpace(o.Reason), fmt.Sprintf("ttl_ms=%d", ttl.Milliseconds()))
}

// baseFingerprint is the hash of user, order and trimmed reason: the
// fingerprint of a start with the default validity, and of every task
// recorded before the validity was part of it (whatever its validity).
func baseFingerprint(o StartOptions) string {
	return hashInput(o.User, o.Order, strings.TrimSpace(o.Reason))
}

// hashInput is the first 16 bytes of the SHA-256 of parts joined by NUL,
// in hex.
func hashInput(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// sameInput reports whether t, a return task's record, was started with
// the input o (its TTL set). A record with the base fingerprint (the
// default validity, or a task recorded before the validity was hashed)
// holds its validity in the task record: that must match too.
func (r *runner) sameInput(ctx context.Context, t runs.TaskRecord, o StartOptions) (bool, error) {
	if t.Fingerprint != baseFingerprint(o) || o.Approvals >= 2 {
		return t.Fingerprint == fingerprint(o), nil
	}
	ttl, err := r.runs.DraftTTL(ctx, t.ID)
	if err != nil {
		return false, fmt.Errorf("start %s: %w", t.ID, err)
	}
	want := o.TTL
	if want == 0 {
		want = business.DefaultDraftTTL
	}
	return ttl == want, nil
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
	v = v.markExpired(s.now())
	if err != nil {
		return v, err
	}
	if v, err = s.withTrail(ctx, v); err != nil {
		return nil, err
	}
	return s.forViewer(ctx, v, o.User)
}

// start runs Start's request (o valid, its TTL set) with r's policy.
func (r *runner) start(ctx context.Context, o StartOptions) (*View, error) {
	fp := fingerprint(o)
	t, err := r.runs.Task(ctx, o.Task)
	switch {
	case err == nil:
		return r.restart(ctx, t, o)
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
	t := runs.TaskRecord{ID: o.Task, User: o.User, OrderID: o.Order, Reason: strings.TrimSpace(o.Reason), Fingerprint: fp, Status: StatusRunning, CreatedAt: now, UpdatedAt: now, Kind: runs.KindReturn, Lease: r.lease(), Approvals: o.Approvals}
	t.Lease.Epoch = 1 // CreateLeasedTask's
	if err := r.fenceNew(ctx, t.ID); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Task, err)
	}
	// The task is created holding its lease, so no other process sees it
	// running without a holder.
	if err := r.runs.CreateLeasedTask(ctx, t, runs.KindReturn, o.TTL, t.Lease); errors.Is(err, runs.ErrTaskExists) {
		// Another process created it a moment ago: treat as a restart.
		if t, err = r.runs.Task(ctx, o.Task); err != nil {
			return nil, fmt.Errorf("start %s: %w", o.Task, err)
		}
		return r.restart(ctx, t, o)
	} else if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Task, err)
	}
	Fault("start:after-record")
	r.steps.fresh(t.ID)
	return r.invoke(ctx, t, o.TTL)
}

// invoke runs a task's first invocation with draft validity ttl and
// t.Approvals approvals (0 means 1); the caller holds the lease.
func (r *runner) invoke(ctx context.Context, t runs.TaskRecord, ttl time.Duration) (*View, error) {
	approvals := 0
	if t.Approvals >= 2 {
		approvals = t.Approvals
	}
	return r.driveReturn(ctx, t, func(ctx context.Context, g *flow.Runnable[State]) (*flow.Snapshot[State], error) {
		snap, err := g.Invoke(ctx, t.ID, State{
			Task: t.ID, User: t.User, Order: t.OrderID, Reason: t.Reason, TTLSeconds: int64(ttl / time.Second), Approvals: approvals,
		})
		if errors.Is(err, flow.ErrThreadExists) {
			return nil, nil
		}
		return snap, err
	})
}

// restart answers a Start of a task that exists.
func (r *runner) restart(ctx context.Context, t runs.TaskRecord, o StartOptions) (*View, error) {
	if t.User != o.User {
		return nil, idTaken(ctx, r.desk, t, o.User, "task id")
	}
	if same, err := r.sameInput(ctx, t, o); err != nil {
		return nil, err
	} else if !same {
		return nil, idTaken(ctx, r.desk, t, o.User, "task id", "order", "reason", InputDraftTTL, InputApprovals)
	}
	snap, err := r.graph.State(ctx, t.ID)
	if errors.Is(err, flow.ErrThreadNotFound) && recordEnded(t) && t.Kind != runs.KindBatch {
		snap, err = nil, nil // ended, as its record says (truth); not run again
	} else if errors.Is(err, flow.ErrThreadNotFound) {
		// The task record was written but the process died before the
		// first checkpoint: run it now.
		if err := r.acquire(ctx, &t); err != nil {
			return nil, err
		}
		t.Approvals = o.Approvals
		return r.invoke(ctx, t, o.TTL)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", t.ID, err)
	}
	if snap, err = r.truth(ctx, t, snap); err != nil {
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

// OrderInNewStores returns the error Start gives for an unknown order
// (ErrNotFound) when stores made now with the teaching orders seed
// (business.Options.Seed; nil: none) would not hold o.User's order
// o.Order, so that a start on stores not made yet refuses it before
// making them; nil when they would. Errors: ErrNotFound, or the seed's
// own (a line that does not parse).
func OrderInNewStores(seed []byte, o StartOptions) error {
	ok, err := business.SeedHasOrder(seed, o.User, o.Order)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("order %s: %w for user %s", o.Order, ErrNotFound, o.User)
	}
	return nil
}
