package returns

import (
	"context"
	"fmt"
	"sync"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// runner drives return tasks over one set of stores, the way its policy
// says. Three runners exist, each chosen by name where it is made:
//
//   - the command runner (Service.cmd, commandPolicy): a lone command
//     (start, resume, recover) over the data dir's stores;
//   - the row runner (Service.rowRunner, rowPolicy): a batch's rows run one
//     by one over the same stores, when the checkpoint store cannot buffer;
//   - a chunk runner (Service.chunkRunner, chunkPolicy): a batch's rows
//     inside one business transaction and one checkpoint buffer.
type runner struct {
	svc    *Service // identity and clock
	desk   *business.Store
	runs   *runs.Store
	cps    flow.Checkpointer
	graph  *flow.Runnable[State]
	policy policy
	steps  stepRecorder
	// holds maps the thread of each run in progress to the lease it runs
	// under, for the check before each superstep (beforeStep).
	holds *sync.Map
	// recoveries maps the thread of a crashed run this runner took over to
	// what the recovery started from (beginRecovery), until drive reports it.
	recoveries *sync.Map
	// resumedStopped holds the threads this runner took from an
	// interrupted record (a stopped task that an answer or resume
	// continues on purpose), until drive ends the run: an answer refused
	// under the lease leaves the stop standing.
	resumedStopped *sync.Map
	// known holds the records of a chunk's tasks, read for all of them in
	// one statement (nil: the task does not exist), each used once by the
	// row that runs it (runner.mayDecide, runner.knownTask); nil outside a
	// chunk.
	known map[string]*runs.TaskRecord
	// held lists the row tasks whose leases a chunk runner kept after their
	// runs (policy.release == keepLease); the chunk lets go of them once
	// its checkpoints are committed.
	held []string
	// deferProgress makes release keep a row's status and stage in
	// progress instead of writing it, for the chunk to record all of them
	// in one statement (runs.RecordProgressAll) before it commits: set for
	// a batch's or a decide run's chunk, whose rows read no task record
	// after their run.
	deferProgress bool
	progress      []runs.Progress
}

// policy says how a runner drives a run.
type policy struct {
	name string // for messages: "command", "batch row", "chunk row"
	// heartbeat renews the lease every DefaultHeartbeat and cancels the run
	// when an operator stops it. A batch's rows take a fraction of a
	// millisecond and have none: the batch's own heartbeat watches for a
	// stop, which the batch checks between rows.
	heartbeat bool
	// release is how the run gives its lease up when it ends.
	release releaseMode
	// leaseTTL is how long the lease the runner takes lasts unless renewed.
	leaseTTL time.Duration
}

// releaseMode is how a run ends its hold on a task.
type releaseMode int

const (
	// releaseDurable records the status and gives the lease up in the
	// command's one durable commit to business.sqlite.
	releaseDurable releaseMode = iota
	// releaseLazy gives the lease up in a plain commit: a batch syncs once
	// per chunk, before the checkpoint that counts the row.
	releaseLazy
	// keepLease records the status and keeps the lease (runner.held): until
	// a chunk's checkpoints are committed the record shows a question whose
	// run is not stored yet, and an answer from another process must wait.
	keepLease
)

var (
	commandPolicy = policy{name: "command", heartbeat: true, release: releaseDurable, leaseTTL: DefaultLeaseTTL}
	rowPolicy     = policy{name: "batch row", release: releaseLazy, leaseTTL: DefaultLeaseTTL}
	// A chunk's row keeps its lease, without a heartbeat, until the chunk's
	// checkpoints are committed: the chunk runs at most MaxChunkTime, and
	// that commit may wait the busy timeout.
	chunkPolicy = policy{name: "chunk row", release: keepLease, leaseTTL: DefaultLeaseTTL + MaxChunkTime + business.DefaultBusyTimeout}
)

// newRunner compiles the return graph over the given stores for a runner
// with policy p. A chunk runner buffers its timeline (stepLog); the others
// write each step as it starts and ends.
func (s *Service) newRunner(desk *business.Store, rs *runs.Store, cps flow.Checkpointer, p policy) (*runner, error) {
	r := &runner{svc: s, desk: desk, runs: rs, cps: cps, policy: p, steps: newDirectSteps(rs, s.now), holds: &sync.Map{}, recoveries: &sync.Map{}, resumedStopped: &sync.Map{}}
	if p.release == keepLease {
		r.steps = newStepLog(rs, s.now)
	}
	g, err := Build(Deps{Desk: desk, Now: s.now, Fault: Fault}).Compile(flow.Options{
		Checkpointer: cps,
		Now:          s.now,
		Hook:         Fault,
		OnTask:       r.steps.onTask,
		BeforeStep:   r.beforeStep,
	})
	if err != nil {
		return nil, fmt.Errorf("compile return graph: %w", err)
	}
	r.graph = g
	return r, nil
}

// rowRunner is the command runner's stores and graph with rowPolicy.
func (s *Service) rowRunner() *runner {
	r := *s.cmd
	r.policy, r.held = rowPolicy, nil
	return &r
}

// chunkRunner returns a runner with chunkPolicy over a chunk's business
// transaction (desk, from business.Store.InTx) and checkpoint buffer.
func (s *Service) chunkRunner(desk *business.Store, cps flow.Checkpointer) (*runner, error) {
	return s.newRunner(desk, runs.New(desk.Handle(), s.now), cps, chunkPolicy)
}

// takeLease takes the lease of task t for l (acquire): in a decide chunk
// (r.known set, its records read under the chunk's write lock) with one
// guarded statement while the record read shows the lease free and is
// still current (runs.AcquireRead), else with runs.AcquireLease, which
// reads the lease again and may take over a lapsed one.
func (r *runner) takeLease(ctx context.Context, t runs.TaskRecord, l runs.Lease, now time.Time) (runs.Acquired, error) {
	if r.known != nil {
		if got, ok, err := r.runs.AcquireRead(ctx, t, l, now); err != nil || ok {
			return got, err
		}
	}
	return r.runs.AcquireLease(ctx, t.ID, l, now, r.svc.liveness)
}

// beforeStep is the check before each superstep of a run (flow.Options.
// BeforeStep): for a run driven under a lease (drive), the task must still
// be running and held by this run, and no node of the superstep may have
// failed MaxAttempts times; in the same transaction the lease is renewed
// when a renewal is due (renewal), the steps of the superstep before are recorded ended and the
// superstep's steps started: one business commit per superstep. An
// operator stop or a takeover thus ends a run before its next step,
// whatever its heartbeat has seen.
func (r *runner) beforeStep(ctx context.Context, ev flow.StepEvent) error {
	v, ok := r.holds.Load(ev.ThreadID)
	if !ok {
		return nil
	}
	l := v.(runs.Lease)
	renew := r.renewal(l)
	if err := r.steps.begin(ctx, ev, l, renew, r.svc.maxAttempts); err != nil {
		return err
	}
	if !renew.IsZero() {
		l.Until = renew
		r.holds.Store(ev.ThreadID, l)
	}
	return nil
}

// renewal is the expiry to renew the lease l to with a superstep: zero
// (no write) while l lasts longer than a renewal would leave it less one
// heartbeat, now + the policy's lease TTL once it does not.
func (r *runner) renewal(l runs.Lease) time.Time {
	now := r.svc.now().UTC()
	if l.Until.After(now.Add(r.policy.leaseTTL - DefaultHeartbeat)) {
		return time.Time{}
	}
	return now.Add(r.policy.leaseTTL)
}
