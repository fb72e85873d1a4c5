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
//     (start, resume, stop) over the data dir's stores, and its copy for
//     recover's continuation of a crashed run (Service.recoverRunner,
//     recoverPolicy);
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
	// endedHere holds the threads whose run recorded its failure in the
	// business store under its lease (endHeld), until drive ends the run:
	// the task is no longer running, and its heartbeat stops renewing
	// without cancelling the run.
	endedHere *sync.Map
	// ahead holds the records of a chunk's tasks, read for all of them in
	// one statement by the chunk's prepare (prepareTasks), each used once
	// by the row that runs it (runner.mayDecide, runner.knownTask). Other
	// runners read none ahead: it is empty, and every record is read from
	// the store.
	ahead readAhead
	// held lists the row tasks whose leases a chunk runner kept after their
	// runs (policy.release == keepLease); the chunk lets go of them once
	// its checkpoints are committed.
	held []string
	// progress holds the status and stage of each row a chunk runner ran
	// (policy.release == keepLease), for the chunk to record all of them
	// in one statement (runs.RecordProgressAll) before it commits.
	progress []runs.Progress
	// rows is what the batch rows this runner ran came to, for the tally
	// of a recovery (countRows): rows found finished and looked up, rows
	// whose work a crashed run left without its run and ran again.
	rows rowsRun
}

// readAhead maps the id of each task whose record a chunk read ahead to
// that record (nil: the task does not exist).
type readAhead map[string]*runs.TaskRecord

// take returns the record of task id read ahead, once: the row changes
// it, so a later read goes to the store. ok false when none was read.
func (a readAhead) take(id string) (t *runs.TaskRecord, ok bool) {
	t, ok = a[id]
	delete(a, id)
	return t, ok
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
	// acquire is how the runner takes a task's lease (acquireWith).
	acquire acquireMode
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
	// keepLease keeps the lease (runner.held), and leaves the status to
	// the chunk, which records every row's in one statement
	// (runner.progress; a run that ended steps records its own with
	// them): a chunk's row reads no task record after its run. Until a
	// chunk's checkpoints are committed the record shows a question whose
	// run is not stored yet, and an answer from another process must wait.
	keepLease
)

var (
	commandPolicy = policy{name: "command", heartbeat: true, release: releaseDurable, leaseTTL: DefaultLeaseTTL, acquire: acquireCommand}
	// recover continues a crashed run as a lone command does, but takes
	// the task only while it is still recorded running (acquireRecover).
	recoverPolicy = policy{name: "recover", heartbeat: true, release: releaseDurable, leaseTTL: DefaultLeaseTTL, acquire: acquireRecover}
	rowPolicy     = policy{name: "batch row", release: releaseLazy, leaseTTL: DefaultLeaseTTL, acquire: acquireFresh}
	// A chunk's row keeps its lease, without a heartbeat, until the chunk's
	// checkpoints are committed: the chunk runs at most MaxChunkTime, and
	// that commit may wait the busy timeout.
	chunkPolicy = policy{name: "chunk row", release: keepLease, leaseTTL: DefaultLeaseTTL + MaxChunkTime + business.DefaultBusyTimeout, acquire: acquireChunk}
)

// newRunner compiles the return graph over the given stores for a runner
// with policy p. A chunk runner buffers its timeline (stepLog); the others
// write each step as it starts and ends.
func (s *Service) newRunner(desk *business.Store, rs *runs.Store, cps flow.Checkpointer, p policy) (*runner, error) {
	r := &runner{svc: s, desk: desk, runs: rs, cps: cps, policy: p, steps: newDirectSteps(rs, s.now), holds: &sync.Map{}, recoveries: &sync.Map{}, resumedStopped: &sync.Map{}, endedHere: &sync.Map{}}
	if p.release == keepLease {
		r.steps = newStepLog(rs, s.now)
	}
	g, err := Build(Deps{Desk: desk, Now: s.now, Fault: Fault, Held: r.holdsRunning, Ended: r.endHeld}).Compile(flow.Options{
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

// holdsRunning is the check that the run of task this runner drives still holds
// it running under its lease (runs.Store.HeldRunning), for the submit's
// business transaction; ok false when no run of task is driven here.
func (r *runner) holdsRunning(task string) (business.SubmitCheck, bool) {
	if r.policy.release == keepLease {
		// A chunk's rows run in one business transaction that holds the
		// write lock from its first statement: the check before each
		// superstep (beforeStep) read the lease in it, and nothing can
		// have committed since.
		return nil, false
	}
	v, ok := r.holds.Load(task)
	if !ok {
		return nil, false
	}
	l := v.(runs.Lease)
	return r.runs.HeldRunning(task, l.Owner, l.Epoch), true
}

// endHeld records in the business store that the run of task this runner
// drives ends failed with f (runs.Store.EndHeld), while it still holds
// the task running under its lease: a node's update that ends the run
// failed is true in the business store before its checkpoint is written,
// and a stop written after it is refused. A stop that came first is
// runs.ErrStopped (the node then fails and the run ends interrupted, its
// failure written nowhere), a takeover runs.ErrLeaseLost. A run under no
// lease, a chunk's row (its chunk holds the write lock and records the
// rows' ends), and a run that recorded its end already record nothing.
func (r *runner) endHeld(ctx context.Context, task string, f Failure) error {
	if r.policy.release == keepLease {
		return nil
	}
	v, ok := r.holds.Load(task)
	if !ok {
		return nil
	}
	if _, again := r.endedHere.LoadOrStore(task, struct{}{}); again {
		return nil
	}
	l := v.(runs.Lease)
	err := r.runs.EndHeld(context.WithoutCancel(ctx), task, l.Owner, l.Epoch, StageFailed, f.Code, f.Message)
	if err != nil {
		r.endedHere.Delete(task)
	}
	return err
}

// rowRunner is the command runner's stores and graph with rowPolicy.
func (s *Service) rowRunner() *runner {
	r := *s.cmd
	r.policy, r.held, r.rows = rowPolicy, nil, rowsRun{}
	return &r
}

// recoverRunner is the command runner's stores and graph with
// recoverPolicy, for recover's continuation of one crashed run: the
// batch rows that run continues run with their own runners.
func (s *Service) recoverRunner() *runner {
	r := *s.cmd
	r.policy = recoverPolicy
	return &r
}

// chunkRunner returns a runner with chunkPolicy over a chunk's business
// transaction (desk, from business.Store.InTx) and checkpoint buffer.
func (s *Service) chunkRunner(desk *business.Store, cps flow.Checkpointer) (*runner, error) {
	return s.newRunner(desk, runs.New(desk.Handle(), s.now), cps, chunkPolicy)
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
