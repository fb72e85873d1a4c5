package returns

import (
	"context"
	"fmt"

	"assistant/runs"
)

// Show returns the progress of a task as it is now (asNow): its head, and
// for a running or interrupted task the process that holds it, judged by
// the service clock and the order's eligibility at the time of the call.
// Every view of a task (show, wait, the server's) is this one. It writes
// nothing. Errors: ErrInvalid, ErrNotFound, storage errors.
func (s *Service) Show(ctx context.Context, task, user string) (*View, error) {
	v, err := s.recordedView(ctx, task, user)
	if err != nil {
		return nil, err
	}
	if v, err = s.asNow(ctx, v, s.now()); err != nil {
		return nil, err
	}
	return s.forViewer(ctx, v, user)
}

// recordedView is the task's view as its head and records hold it, with
// the draft's expiry as of now (markExpired) but not judged further: what
// a stop compares its outcome with. Errors as Show's.
func (s *Service) recordedView(ctx context.Context, task, user string) (*View, error) {
	t, err := s.decidable(ctx, task, user)
	if err != nil {
		return nil, err
	}
	return judgedNow(ctx, s, t, func(t runs.TaskRecord, first bool) (*View, bool, error) {
		v, err := s.viewOf(ctx, t, first)
		return v, err == nil && judgedGone(v.Holder), err
	})
}

// judgedNow is what build makes of task record t, a view that judges the
// task's holder alive or gone (build's second result: gone). A holder
// judged gone after its record was read may have finished and let go in
// between, and exited; a holder that is gone writes nothing more, so a
// record read again that still names it tells the state as it is now.
// judgedNow reads it again and, when it moved, builds anew from it, at
// most holderRereads times in all; first tells build whether it is the
// first look (where the views' fault points are).
func judgedNow[V any](ctx context.Context, s *Service, t runs.TaskRecord, build func(t runs.TaskRecord, first bool) (V, bool, error)) (V, error) {
	for try := 1; ; try++ {
		v, gone, err := build(t, try == 1)
		if err != nil || !gone || try == holderRereads {
			return v, err
		}
		now, err := s.runs.Task(ctx, t.ID)
		if err != nil {
			return v, fmt.Errorf("read task %s again: %w", t.ID, err)
		}
		if sameHolding(t, now) {
			return v, nil
		}
		t = now
	}
}

// judgedGone reports whether a view names a holder (addHolder) that it
// judged gone: what judgedNow looks again for.
func judgedGone(h *HolderView) bool { return h != nil && !h.Alive }

// holderRereads is how many looks judgedNow takes at most at a task
// whose record moves while a view judges its holder gone (a run that
// ends and exits between the reads); after that the view is what it
// built last.
const holderRereads = 3

// sameHolding reports whether records a and b of one task hold the same
// state under the same lease: status, stage, update time, and the lease's
// owner, epoch and expiry (a renewal says the holder was alive).
func sameHolding(a, b runs.TaskRecord) bool {
	return a.Status == b.Status && a.Stage == b.Stage && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.Lease.Owner == b.Lease.Owner && a.Lease.Epoch == b.Lease.Epoch && a.Lease.Until.Equal(b.Lease.Until)
}

// viewOf is recordedView of the task whose record is t; first is whether
// it is recordedView's first look (fault point show:before-holder).
func (s *Service) viewOf(ctx context.Context, t runs.TaskRecord, first bool) (*View, error) {
	var v *View
	if t.Kind == runs.KindBatch {
		snap, err := headOrNil(s.batch.State(ctx, t.ID))
		if err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		v = s.batchView(ctx, t, snap)
	} else {
		snap, err := headOrNil(s.cmd.graph.State(ctx, t.ID))
		if err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		if snap, err = s.cmd.truth(ctx, t, snap); err != nil {
			return nil, err
		}
		if v, err = s.withTrail(ctx, view(t, snap)); err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		d, err := standing(ctx, s.desk, t.ID, snap)
		if err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		if d != nil {
			v.Stands = standingView(d)
		}
		made, err := s.madeApplication(ctx, snap)
		if err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		if made != nil {
			v.Result = made
		} else if v.AwaitingSubmit, err = s.awaitingSubmit(ctx, t.ID, t.User, snap); err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
	}
	if first {
		Fault("show:before-holder")
	}
	s.addHolder(v, t.Lease)
	return v.markExpired(s.now()), nil
}

// show is Show of a return task through r's stores (a chunk sees its own
// transaction and buffer).
func (r *runner) show(ctx context.Context, id string) (*View, error) {
	t, err := r.runs.Task(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("show %s: %w", id, err)
	}
	snap, err := headOrNil(r.graph.State(ctx, id))
	if err != nil {
		return nil, fmt.Errorf("show %s: %w", id, err)
	}
	v := view(t, snap)
	r.svc.addHolder(v, t.Lease)
	return v, nil
}

// addHolder adds the lease holder to the view of a running task, or of an
// interrupted one that a process still holds.
func (s *Service) addHolder(v *View, l runs.Lease) {
	if (v.Status == StatusRunning || v.Status == StatusInterrupted) && (l.Owner != "" || v.Status == StatusRunning) {
		v.Holder = &HolderView{PID: l.PID, Host: l.Host, Until: l.Until, Alive: s.holderAlive(l)}
	}
}
