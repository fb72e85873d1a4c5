package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// Group commit (docs/server.md "Group commit"): a long-lived process that
// takes many decisions at once (`assistant serve`) gives them to a
// Committer, which gathers those that arrive together into one group and
// runs the group as a decide chunk runs its rows (chunkRows): every
// decision's business writes in one transaction of the business store,
// committed durably first, then every decision's checkpoints in one
// transaction of the checkpoint store. Each decision is judged inside
// that business transaction by the answer path of Resume (the caller's
// right to decide, the question and version, then, at submit, every
// counted approval, the run's lease and the order: business.SubmitChecks),
// so what one decision is refused for writes nothing and the others
// commit. Decide returns only once both commits are durable.

// Defaults of a Committer (GroupOptions).
const (
	// DefaultGroupWait is how long a group gathers decisions after its
	// first one arrived, unless it is full first.
	DefaultGroupWait = 2 * time.Millisecond
	// DefaultGroupSize is the most decisions one group commits.
	DefaultGroupSize = 64
)

// GroupOptions are how a Committer gathers decisions.
type GroupOptions struct {
	// Wait is how long a group gathers after its first decision; 0 means
	// DefaultGroupWait.
	Wait time.Duration
	// Size is the most decisions of one group; 0 means DefaultGroupSize.
	Size int
	// OnGroup, when set, is told the number of decisions of each group
	// committed in one business and one checkpoint transaction (for a
	// metric); a decision that runs alone (see Committer) is a group of 1.
	OnGroup func(size int)
}

// Committer gives decisions to return tasks in groups that share their
// durable commits (group commit). Make one with Service.NewCommitter; it
// is safe for concurrent use, and needs no closing: it holds no goroutine
// while no decision waits.
//
// A decision runs alone, through Resume with its own commits, when it
// cannot share a group: it answers no question (a plain resume of a
// stopped or crashed run), the checkpoint store cannot buffer
// (flow.Bufferer), its task is in the group already, a live process holds
// its task (Resume waits for that process), or the group failed as a
// whole (a storage error, a conflict with another process at the
// checkpoint commit: nothing of the group was kept, and each of its
// decisions is then run alone).
type Committer struct {
	svc     *Service
	wait    time.Duration
	size    int
	onGroup func(int)

	mu      sync.Mutex
	pending []*groupCall
	// leading: a goroutine gathers or commits a group; it starts the next
	// one when decisions wait after its commit.
	leading bool
	// full is signalled when pending reaches size while a group gathers.
	full chan struct{}
}

// groupCall is one decision waiting in a Committer.
type groupCall struct {
	ctx     context.Context
	arrived time.Time
	o       ResumeOptions
	v       *View
	err     error
	done    chan struct{}
}

// NewCommitter returns a Committer over s gathering as o says.
func (s *Service) NewCommitter(o GroupOptions) *Committer {
	c := &Committer{svc: s, wait: o.Wait, size: o.Size, onGroup: o.OnGroup, full: make(chan struct{}, 1)}
	if c.wait <= 0 {
		c.wait = DefaultGroupWait
	}
	if c.size <= 0 {
		c.size = DefaultGroupSize
	}
	return c
}

// Decide gives the decision o as Resume does, with the same checks,
// outcomes and errors, and returns once it is durable in both stores: in
// a group with the decisions that arrived with it (see Committer), or
// alone. ctx ending while the decision waits in a group does not take it
// out: Decide returns what it came to.
func (c *Committer) Decide(ctx context.Context, o ResumeOptions) (*View, error) {
	if _, ok := c.svc.cps.(flow.Bufferer); !ok || !o.answering() {
		return c.alone(ctx, o)
	}
	if err := checkResume(o); err != nil {
		return nil, err
	}
	call := &groupCall{ctx: ctx, o: o, done: make(chan struct{}), arrived: time.Now()}
	c.mu.Lock()
	c.pending = append(c.pending, call)
	if len(c.pending) == c.size {
		select {
		case c.full <- struct{}{}:
		default:
		}
	}
	if !c.leading {
		c.leading = true
		go c.lead()
	}
	c.mu.Unlock()
	<-call.done
	return call.v, call.err
}

// alone gives decision o through Resume, with its own commits, as a group
// of one.
func (c *Committer) alone(ctx context.Context, o ResumeOptions) (*View, error) {
	v, err := c.svc.Resume(ctx, o)
	c.grouped(1)
	return v, err
}

// grouped tells OnGroup of a group of n decisions.
func (c *Committer) grouped(n int) {
	if c.onGroup != nil {
		c.onGroup(n)
	}
}

// lead gathers a group until the Committer's wait has passed since its
// first decision arrived (or until it is full), commits it, and goes on
// with the next while decisions wait.
func (c *Committer) lead() {
	for {
		// The group gathers for wait from its first decision's arrival:
		// decisions that queued while the group before committed waited
		// already.
		c.mu.Lock()
		d := c.wait - time.Since(c.pending[0].arrived)
		c.mu.Unlock()
		if d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-c.full:
			}
			t.Stop()
		}
		c.mu.Lock()
		n := min(len(c.pending), c.size)
		group := c.pending[:n:n]
		c.pending = append([]*groupCall(nil), c.pending[n:]...)
		select {
		case <-c.full: // a signal of this group's, not the next one's
		default:
		}
		if len(c.pending) >= c.size {
			c.full <- struct{}{}
		}
		c.mu.Unlock()
		c.commit(group)
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.leading = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// commit runs group, answers every call of it, and runs alone those that
// could not share it, each on a goroutine of its own.
func (c *Committer) commit(group []*groupCall) {
	shared, apart := splitGroup(group)
	if len(shared) > 0 {
		left := c.svc.decideGroup(shared)
		if n := len(shared) - len(left); n > 0 {
			c.grouped(n)
		}
		apart = append(apart, left...)
	}
	for _, call := range group {
		if !slices.Contains(apart, call) {
			close(call.done)
		}
	}
	for _, call := range apart {
		go func() {
			call.v, call.err = c.alone(call.ctx, call.o)
			close(call.done)
		}()
	}
}

// splitGroup parts group into the calls that may share the group's
// commits and those that decide a task an earlier call of the group
// decides already (run alone, after it).
func splitGroup(group []*groupCall) (shared, apart []*groupCall) {
	seen := make(map[string]bool, len(group))
	for _, call := range group {
		if seen[call.o.Task] {
			apart = append(apart, call)
			continue
		}
		seen[call.o.Task] = true
		shared = append(shared, call)
	}
	return shared, apart
}

// decideGroup gives the decisions of calls, each for a task of its own, in
// one business transaction and one checkpoint transaction, as chunkRows
// gives a decide chunk's rows (the same chunk runner, the same answer
// path, the same order of the commits and the storage rule they keep: a
// checkpoint never names a business row that could be lost). It sets each
// call's view or refusal, with its trail read back as Resume's view has
// it (one read for the group: trails), and returns the calls it did not decide, to be run alone: one whose
// task a live process holds, or all of them when the group failed as a
// whole. A crash between the two commits (fault point
// group:between-commits) leaves task records and trails ahead of their
// checkpoints, as a decide chunk's crash does: the answer given again
// (a client retrying with its key) is found saved and continues the run,
// and the application, keyed by draft, is made once.
func (s *Service) decideGroup(calls []*groupCall) []*groupCall {
	ctx := context.Background() // the group's commits are every caller's
	bf := s.cps.(flow.Bufferer)
	buf := bf.NewBuffer()
	rows := make([]runs.BatchRow, len(calls))
	ids := make([]string, len(calls))
	for i, call := range calls {
		rows[i] = runs.BatchRow{RowNo: i + 1, TaskID: call.o.Task}
		ids[i] = call.o.Task
	}
	views := make([]*View, len(calls))
	errs := make([]error, len(calls))
	var apart []*groupCall
	var held []string
	var ended []runs.Progress
	err := s.desk.InTx(ctx, func(tx *business.Store) error {
		// Read once the business file's write lock is held, as a chunk's.
		if err := buf.Preload(ctx, ids); err != nil {
			return err
		}
		r, err := s.chunkRunner(tx, buf)
		if err != nil {
			return err
		}
		defer func() { held, ended = r.held, r.progress }()
		if err := prepareDecisions(ctx, r, BatchState{}, rows); err != nil {
			return err
		}
		for i, call := range calls {
			views[i], errs[i] = r.answerOnly(ctx, call.o)
			switch err := errs[i]; {
			case err == nil:
			case heldElsewhere(err):
				// Resume waits for the holder and judges the answer
				// again against what it left.
				apart = append(apart, call)
			case isRefusal(err):
				// Refused by its checks, which write nothing: this
				// decision fails alone.
			default:
				return fmt.Errorf("decision %d (task %s): %w", i+1, call.o.Task, err)
			}
			Fault("group:after-decision")
		}
		// Until the checkpoints are stored too, each task is recorded
		// running under this process's lease, as a run of resume is until
		// it lets go: a crash between the commits leaves it to the
		// recovery scan of the next start.
		if err := r.runs.RecordProgressAll(ctx, s.me.owner, stillRunning(r.progress)); err != nil {
			return err
		}
		if log, ok := r.steps.(*stepLog); ok {
			return log.flush(ctx)
		}
		return nil
	})
	if err != nil {
		buf.Discard()
		return calls
	}
	Fault("group:between-commits")
	flushErr := buf.Flush(ctx)
	if flushErr != nil {
		buf.Discard()
	}
	Fault("group:before-release")
	if err := s.letGo(ctx, ended, held); err != nil && flushErr == nil {
		flushErr = err
	}
	var trails map[string][]business.Decision
	var trailErr error
	if flushErr == nil {
		trails, trailErr = s.trails(ctx, calls, views, errs, apart)
	}
	for i, call := range calls {
		if slices.Contains(apart, call) {
			continue
		}
		switch {
		case flushErr != nil:
			// The business commit is durable and the checkpoints are
			// not: the state a crash between the commits leaves, which
			// the decision given again continues.
			call.err = fmt.Errorf("save the checkpoints of a group of %d decisions: %w", len(calls), flushErr)
		case errs[i] != nil:
			call.err = errs[i]
		case trailErr != nil:
			call.err = trailErr
		default:
			call.v = views[i]
			if call.v != nil && call.v.Batch == nil {
				call.v = withDecisions(call.v, trails[call.v.Task])
			}
			call.v, call.err = s.forViewer(call.ctx, call.v, call.o.User)
		}
	}
	return apart
}

// trails reads back, once both commits are durable, the decision trails
// of the views of the group's calls that were decided (views[i] with no
// errs[i], not apart): one read for the group instead of one a call, as
// withTrail reads each.
func (s *Service) trails(ctx context.Context, calls []*groupCall, views []*View, errs []error, apart []*groupCall) (map[string][]business.Decision, error) {
	var ids []string
	for i, call := range calls {
		if v := views[i]; errs[i] == nil && v != nil && v.Batch == nil && !slices.Contains(apart, call) {
			ids = append(ids, v.Task)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return s.desk.DecisionsOf(ctx, ids)
}

// heldElsewhere reports whether err refuses an answer because another
// live process holds its task (runs.ErrBusy, or a refusal wrapping the
// holder's lease): Resume waits that out (waitsForHolder).
func heldElsewhere(err error) bool {
	var held *runs.LeaseHeldError
	return errors.Is(err, runs.ErrBusy) || errors.As(err, &held)
}

// stillRunning is ps, each task's progress at the end of its decision,
// with each status running: what the group's business commit records.
func stillRunning(ps []runs.Progress) []runs.Progress {
	out := make([]runs.Progress, len(ps))
	for i, p := range ps {
		p.Status = StatusRunning
		out[i] = p
	}
	return out
}

// letGo records each task of a group or a chunk as its run left it
// (ended: the status and stage of each), then lets go of its tasks
// (held): two commits that need no sync (a crash between them leaves the
// tasks recorded at rest under a lease that lapses, which the next run or
// recover lets go of).
func (s *Service) letGo(ctx context.Context, ended []runs.Progress, held []string) error {
	if err := s.runs.RecordProgressAll(ctx, s.me.owner, ended); err != nil {
		return fmt.Errorf("record how the tasks ended: %w", err)
	}
	if err := s.runs.ReleaseLeases(ctx, s.me.owner, held); err != nil {
		return fmt.Errorf("let go of the tasks: %w", err)
	}
	return nil
}
