package returns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"assistant/business"
	"assistant/flow"
)

// Errors that decide the exit code (DESIGN.md "Exit codes"); every error the
// operations return for a person matches one of them with errors.Is, or is a
// storage failure (exit 1).
var (
	// ErrInvalid: bad input (exit 2). Nothing was changed.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound: unknown task or order, or one of another user (exit 4).
	ErrNotFound = errors.New("not found")
	// ErrConflict: same task id with other input, or the state changed
	// under the request (exit 3).
	ErrConflict = errors.New("conflict")
)

// File names inside the data dir (DESIGN.md "Storage").
const (
	BusinessFile    = "business.sqlite"
	CheckpointsFile = "checkpoints.sqlite"
)

// Config opens a Service.
type Config struct {
	DataDir string
	// Create makes the data dir (0700) and the business file when missing;
	// without it a missing data dir is ErrNotFound.
	Create bool
	// Seed is the teaching orders CSV loaded when business.sqlite is created.
	Seed []byte
	// Checkpoints is the checkpoint store, opened by the caller.
	Checkpoints flow.Checkpointer
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
}

// Service runs return requests over one data dir.
type Service struct {
	desk  *business.Store
	cps   flow.Checkpointer
	graph *flow.Runnable[State]
	batch *flow.Runnable[BatchState]
	// progress, when set, is told after each batch row: rows handled, total.
	progress func(done, total int)
	now      func() time.Time
	me       identity // this process as a lease holder
	// stepSeq maps a running engine task (thread + task id) to its
	// timeline step seq.
	stepSeq sync.Map
	// steps, in a batch chunk's Service, keeps the rows' timeline until
	// each step ends (see stepLog); nil elsewhere.
	steps *stepLog
	// held, in a batch chunk's Service, lists the row tasks whose leases
	// it kept after their runs (see drive); chunkRows lets go of them.
	held []string
}

// PrepareDataDir makes dir (mode 0700) when create is set, and reports a
// missing dir as ErrNotFound otherwise, so a read command never creates files.
func PrepareDataDir(dir string, create bool) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("data dir %s is not a directory: %w", dir, ErrInvalid)
	}
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create data dir %s: %w", dir, err)
		}
		return nil
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data dir %s does not exist (no task has been started there): %w", dir, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("data dir %s is not a directory: %w", dir, ErrInvalid)
	}
	return nil
}

// CheckPair refuses a data dir where one of the two files is missing or
// empty while the other holds runs: opening it would make a fresh, empty
// file and hide that runs (checkpoints.sqlite lost) or their drafts,
// applications and task records (business.sqlite lost) are gone. countThreads
// counts the threads of a checkpoint file read-only (checkpoints package).
// Call it before opening either store; it changes no file.
func CheckPair(ctx context.Context, dir string, countThreads func(context.Context, string) (int, error)) error {
	cpsPath, deskPath := filepath.Join(dir, CheckpointsFile), filepath.Join(dir, BusinessFile)
	cpsEmpty, err := missingOrEmpty(cpsPath)
	if err != nil {
		return err
	}
	deskEmpty, err := missingOrEmpty(deskPath)
	if err != nil {
		return err
	}
	switch {
	case cpsEmpty && !deskEmpty:
		n, err := business.CountTasksReadOnly(ctx, deskPath)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("open checkpoints %s: business.sqlite records %d task(s): %w", cpsPath, n, business.ErrLostCheckpoints)
		}
	case deskEmpty && !cpsEmpty:
		n, err := countThreads(ctx, cpsPath)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("open business %s: checkpoints.sqlite holds %d run(s): %w", deskPath, n, ErrLostBusiness)
		}
	}
	return nil
}

// ErrLostBusiness: checkpoints.sqlite holds runs but business.sqlite beside
// it is missing or empty, so their tasks, drafts and applications are gone.
var ErrLostBusiness = errors.New("the business file is missing or empty, so the tasks, drafts and applications of those runs are lost; restore business.sqlite from a backup (or move both files away to start afresh)")

func missingOrEmpty(path string) (bool, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return st.Size() == 0, nil
}

// Open opens business.sqlite in cfg.DataDir and compiles the return graph
// over cfg.Checkpoints. The caller closes the Service and the checkpointer.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	if err := PrepareDataDir(cfg.DataDir, cfg.Create); err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	path := filepath.Join(cfg.DataDir, BusinessFile)
	desk, err := business.Open(ctx, path, business.Options{Create: cfg.Create, Seed: cfg.Seed, Now: now})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	s := &Service{desk: desk, cps: cfg.Checkpoints, now: now, me: newIdentity()}
	if err := s.compileReturn(); err != nil {
		desk.Close()
		return nil, err
	}
	// A batch loops once per chunk, at least one row each, so its loop is
	// bounded by its rows; the recursion limit only guards against a bug.
	b, err := s.buildBatch().Compile(flow.Options{
		Checkpointer:   cfg.Checkpoints,
		Now:            now,
		Hook:           Fault,
		OnTask:         s.onTask,
		RecursionLimit: MaxBatchRows + 1,
	})
	if err != nil {
		desk.Close()
		return nil, fmt.Errorf("compile batch graph: %w", err)
	}
	s.batch = b
	return s, nil
}

// compileReturn compiles the return graph over s's stores into s.graph.
func (s *Service) compileReturn() error {
	g, err := Build(Deps{Desk: s.desk, Now: s.now, Fault: Fault}).Compile(flow.Options{
		Checkpointer: s.cps,
		Now:          s.now,
		Hook:         Fault,
		OnTask:       s.onTask,
	})
	if err != nil {
		return fmt.Errorf("compile return graph: %w", err)
	}
	s.graph = g
	return nil
}

// withStores returns a Service for return tasks like s (same process
// identity, clock and progress) over other stores: a batch chunk's business
// transaction and checkpoint buffer. It cannot run batches itself.
func (s *Service) withStores(desk *business.Store, cps flow.Checkpointer) (*Service, error) {
	c := &Service{desk: desk, cps: cps, now: s.now, me: s.me, progress: s.progress, steps: newStepLog()}
	if err := c.compileReturn(); err != nil {
		return nil, err
	}
	return c, nil
}

// OnBatchProgress sets a function told after each batch row (rows handled,
// total), e.g. to draw a progress bar. Call it before running a batch.
func (s *Service) OnBatchProgress(fn func(done, total int)) { s.progress = fn }

// kind returns the kind of task t (business.KindReturn or KindBatch).
func (s *Service) kind(ctx context.Context, id string) (string, error) {
	_, kind, err := s.desk.TaskLease(ctx, id)
	return kind, err
}

// Close closes business.sqlite.
func (s *Service) Close() error { return s.desk.Close() }

// Desk gives the business store, for tests and reports.
func (s *Service) Desk() *business.Store { return s.desk }

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
	fp := fingerprint(o)
	t, err := s.desk.Task(ctx, o.Task)
	switch {
	case err == nil:
		return s.restart(ctx, t, o, fp)
	case !errors.Is(err, business.ErrNotFound):
		return nil, fmt.Errorf("start %s: %w", o.Task, err)
	}
	return s.create(ctx, o, fp)
}

// create records and runs a task that does not exist yet (o is valid, its
// TTL set, fp its fingerprint).
func (s *Service) create(ctx context.Context, o StartOptions, fp string) (*View, error) {
	if _, err := s.desk.Order(ctx, o.Order, o.User); errors.Is(err, business.ErrNotFound) {
		return nil, fmt.Errorf("order %s: %w for user %s", o.Order, ErrNotFound, o.User)
	} else if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Task, err)
	}
	now := s.now().UTC()
	t := business.Task{ID: o.Task, User: o.User, OrderID: o.Order, Reason: strings.TrimSpace(o.Reason), Fingerprint: fp, Status: StatusRunning, CreatedAt: now, UpdatedAt: now}
	// The task is created holding its lease, so no other process sees it
	// running without a holder.
	if err := s.desk.CreateLeasedTask(ctx, t, business.KindReturn, o.TTL, s.lease()); errors.Is(err, business.ErrTaskExists) {
		// Another process created it a moment ago: treat as a restart.
		if t, err = s.desk.Task(ctx, o.Task); err != nil {
			return nil, fmt.Errorf("start %s: %w", o.Task, err)
		}
		return s.restart(ctx, t, o, fp)
	} else if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Task, err)
	}
	if s.inChunk() {
		s.steps.fresh(t.ID) // a task made just now has no steps to count
	}
	return s.invoke(ctx, t, o)
}

// invoke runs a task's first invocation; the caller holds the lease.
func (s *Service) invoke(ctx context.Context, t business.Task, o StartOptions) (*View, error) {
	return s.driveReturn(ctx, t, func(ctx context.Context) (*flow.Snapshot[State], error) {
		snap, err := s.graph.Invoke(ctx, t.ID, State{
			Task: t.ID, User: t.User, Order: t.OrderID, Reason: t.Reason, TTLSeconds: int64(o.TTL / time.Second),
		})
		if errors.Is(err, flow.ErrThreadExists) {
			return nil, nil
		}
		return snap, err
	})
}

// restart answers a Start of a task that exists.
func (s *Service) restart(ctx context.Context, t business.Task, o StartOptions, fp string) (*View, error) {
	if t.User != o.User {
		// Task ids are global: say it is taken, and nothing about whose.
		return nil, fmt.Errorf("task id %s is already taken: %w (choose another task id)", o.Task, ErrConflict)
	}
	if t.Fingerprint != fp {
		return nil, fmt.Errorf("task %s already exists with other input: %w (choose another task id, or run `assistant show %s`)", o.Task, ErrConflict, o.Task)
	}
	snap, err := s.graph.State(ctx, t.ID)
	if errors.Is(err, flow.ErrThreadNotFound) {
		// The task record was written but the process died before the
		// first checkpoint: run it now.
		if err := s.acquire(ctx, &t); err != nil {
			return nil, err
		}
		return s.invoke(ctx, t, o)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", t.ID, err)
	}
	if snap.Done() || snap.Waiting() {
		// Parked or finished (perhaps by another process a moment ago).
		v := s.view(t, snap)
		if cur, err := s.desk.Task(ctx, t.ID); err == nil && cur.Status == StatusRunning {
			if err := s.repair(ctx, cur, v); err != nil && !errors.Is(err, ErrConflict) {
				return nil, err
			}
		}
		return v, nil
	}
	// Mid-run: the same start again after a crash or a stop continues it,
	// unless a live process drives it now (then it shows its progress).
	if l, _, err := s.desk.TaskLease(ctx, t.ID); err == nil && s.holderAlive(l) {
		return s.Show(ctx, t.ID, t.User)
	}
	return s.Resume(ctx, ResumeOptions{Task: t.ID, User: t.User})
}

// task returns the task of id if it belongs to user; another user's task is
// reported exactly like an unknown one.
func (s *Service) task(ctx context.Context, id, user string) (business.Task, error) {
	if err := ValidTaskID(id); err != nil {
		return business.Task{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	t, err := s.desk.Task(ctx, id)
	if errors.Is(err, business.ErrNotFound) || (err == nil && t.User != user) {
		return business.Task{}, fmt.Errorf("task %s: %w for user %s (run `assistant list` to see your tasks)", id, ErrNotFound, user)
	}
	if err != nil {
		return business.Task{}, fmt.Errorf("task %s: %w", id, err)
	}
	return t, nil
}

// Show returns the progress of a task. Errors: ErrInvalid, ErrNotFound.
func (s *Service) Show(ctx context.Context, task, user string) (*View, error) {
	t, err := s.task(ctx, task, user)
	if err != nil {
		return nil, err
	}
	// One read gives the kind and, for a running task, its holder.
	l, kind, err := s.desk.TaskLease(ctx, t.ID)
	if err != nil {
		return nil, fmt.Errorf("show %s: %w", t.ID, err)
	}
	var v *View
	if kind == business.KindBatch {
		snap, err := headOrNil(s.batch.State(ctx, t.ID))
		if err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		v = s.batchView(ctx, t, snap)
	} else {
		snap, err := headOrNil(s.graph.State(ctx, t.ID))
		if err != nil {
			return nil, fmt.Errorf("show %s: %w", t.ID, err)
		}
		v = s.view(t, snap)
	}
	if (v.Status == StatusRunning || v.Status == StatusInterrupted) && (l.Owner != "" || v.Status == StatusRunning) {
		v.Holder = &HolderView{PID: l.PID, Host: l.Host, Until: l.Until, Alive: s.holderAlive(l)}
	}
	return v, nil
}

// headOrNil passes a thread's head snapshot on, with a thread that has no
// checkpoint yet (created, then killed before its first one) as nil.
func headOrNil[S any](snap *flow.Snapshot[S], err error) (*flow.Snapshot[S], error) {
	if errors.Is(err, flow.ErrThreadNotFound) {
		return nil, nil
	}
	return snap, err
}

// ResumeOptions are the input of Resume. Set Reason (with HasReason) to
// answer need_reason, Action to answer approval, neither to continue a run
// that stopped part-way.
type ResumeOptions struct {
	Task        string
	User        string
	Reason      string
	HasReason   bool
	Action      string // approve or cancel
	DraftID     string // optional: must equal the pending draft
	InterruptID string // optional: which pending interrupt to answer
}

// Resume answers the task's pending question, or continues its run. On a
// task that has ended it changes nothing and returns its progress (with
// result.reused true when approve is repeated on a submitted task).
// Errors: ErrInvalid (answer of the wrong kind, wrong draft, unknown
// interrupt id), ErrNotFound, ErrConflict (another process advanced the
// task, or the answer contradicts the decision already recorded).
func (s *Service) Resume(ctx context.Context, o ResumeOptions) (*View, error) {
	if o.HasReason && o.Action != "" {
		return nil, fmt.Errorf("%w: give --reason or --action, not both", ErrInvalid)
	}
	if o.Action != "" && o.Action != ActionApprove && o.Action != ActionCancel {
		return nil, fmt.Errorf("%w: --action must be approve or cancel, not %q", ErrInvalid, o.Action)
	}
	// A blank reason is an answer the flow refuses by asking again; a reason
	// that can never be valid (control characters, too long) is bad input.
	if r := strings.TrimSpace(o.Reason); o.HasReason && r != "" {
		if err := ValidReason(r); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	t, err := s.task(ctx, o.Task, o.User)
	if err != nil {
		return nil, err
	}
	if kind, err := s.kind(ctx, t.ID); err != nil {
		return nil, fmt.Errorf("resume %s: %w", t.ID, err)
	} else if kind == business.KindBatch {
		return s.resumeBatch(ctx, t, o)
	}
	snap, err := s.graph.State(ctx, t.ID)
	if errors.Is(err, flow.ErrThreadNotFound) {
		// Created, then killed before its first checkpoint: run it from its
		// recorded input, as start would.
		ttl, err := s.desk.DraftTTL(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		// An answer must fit the question the record shows before the run
		// is rebuilt: a wrong answer changes nothing.
		if err := s.fitsRecord(ctx, t, o); err != nil {
			return nil, err
		}
		if err := s.acquire(ctx, &t); err != nil {
			return nil, err
		}
		v, err := s.invoke(ctx, t, StartOptions{Task: t.ID, User: t.User, Order: t.OrderID, Reason: t.Reason, TTL: ttl})
		if err != nil || !(o.HasReason || o.Action != "") {
			return v, err
		}
		// The answer is for the question the run asks again now (a batch
		// killed between a chunk's two commits leaves records that show
		// the question while the run is missing): answer it, as asked.
		if _, err := s.graph.State(ctx, t.ID); errors.Is(err, flow.ErrThreadNotFound) {
			return nil, fmt.Errorf("task %s has no run to answer: %w", t.ID, ErrConflict)
		}
		return s.Resume(ctx, o)
	}
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", t.ID, err)
	}
	answering := o.HasReason || o.Action != ""
	if snap.Done() || (snap.Waiting() && !answering && t.Status != StatusWaiting) {
		// A process killed after its last checkpoint and before it let go
		// of the task leaves the record behind the head: set it right.
		if err := s.repair(ctx, t, s.view(t, snap)); err != nil {
			return nil, err
		}
		if snap.Done() {
			return s.finished(t, snap, o), nil
		}
		return s.view(t, snap), nil
	}
	// A live process driving the task is told first: any answer now would
	// meet a run part-way, and the reason is that it is busy.
	if answering && len(snap.Interrupts) == 0 {
		if l, _, err := s.desk.TaskLease(ctx, t.ID); err == nil && s.holderAlive(l) {
			return nil, fmt.Errorf("task %s is being run by process %d on %s: %w; wait for it to ask its question (`assistant show %s`)", t.ID, l.PID, l.Host, ErrConflict, t.ID)
		}
	}
	// Check the answer before touching anything: a wrong answer changes nothing.
	if _, err := s.plan(t, snap, o); err != nil {
		return nil, err
	}
	if err := s.acquire(ctx, &t); err != nil {
		return nil, err
	}
	endedBefore := false
	v, err := s.driveReturn(ctx, t, func(ctx context.Context) (*flow.Snapshot[State], error) {
		// Read again under the lease: another process may have moved the
		// task between the first read and the lease.
		cur, err := s.graph.State(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		if cur.Done() {
			endedBefore = true
			return cur, nil
		}
		run, err := s.plan(t, cur, o)
		if err != nil {
			return nil, err
		}
		return run(ctx)
	})
	if err == nil && endedBefore && o.Action == ActionApprove && v.Result != nil {
		// Another process submitted while this one waited for the lease:
		// this approve made no application of its own.
		v.Result.Reused = true
	}
	return v, err
}

// fitsRecord checks an answer to a task whose run is missing (its record
// was committed, its checkpoints were not) against the question the record
// shows: the kind of answer, and the draft it names. Errors as plan's:
// ErrInvalid for a wrong kind or draft, ErrConflict when the record shows
// no question.
func (s *Service) fitsRecord(ctx context.Context, t business.Task, o ResumeOptions) error {
	if !o.HasReason && o.Action == "" {
		return nil
	}
	kind := map[string]string{StageDraftReady: KindApproval, StageNeedReason: KindNeedReason}[t.Stage]
	if kind == "" {
		return fmt.Errorf("task %s has no question pending; run `assistant resume %s` to continue it, then answer the question it asks: %w", t.ID, t.ID, ErrConflict)
	}
	if err := wrongKind(t.ID, kind, o); err != nil || o.DraftID == "" {
		return err
	}
	d, err := s.desk.DraftByTask(ctx, t.ID)
	if err != nil && !errors.Is(err, business.ErrNotFound) {
		return err
	}
	return wrongDraft(t.ID, o.DraftID, d.ID)
}

// repair records v's status on a task record that lags behind its head,
// taking the lease so that a live process is never overruled.
func (s *Service) repair(ctx context.Context, t business.Task, v *View) error {
	if t.Status == v.Status && t.Stage == v.Stage {
		return nil
	}
	if err := s.acquire(ctx, &t); err != nil {
		return err
	}
	return s.desk.ReleaseLeaseSync(ctx, t.ID, s.me.owner, v.Status, v.Stage)
}

// recordedAnswer reports whether the answer in o is the one the task has
// recorded already: applied to the state, or saved at the head by a process
// that died before applying it (the snapshot's task answers, which a
// continued run replays). An answer that contradicts the recorded one is
// ErrConflict.
func recordedAnswer(task string, snap *flow.Snapshot[State], o ResumeOptions) (bool, error) {
	action, reason := snap.Values.Decision, ""
	for _, ts := range snap.Tasks {
		for _, raw := range ts.Answers {
			switch ts.Node {
			case NodeReview:
				var a ApprovalAnswer
				if json.Unmarshal(raw, &a) == nil && a.Action != "" {
					action = a.Action
				}
			case NodeAskReason:
				var a ReasonAnswer
				if json.Unmarshal(raw, &a) == nil {
					reason = strings.TrimSpace(a.Reason)
				}
			}
		}
	}
	switch {
	case o.Action != "" && action != "":
		if o.Action != action {
			return false, fmt.Errorf("task %s was already answered %q; the answer %q is refused: %w", task, action, o.Action, ErrConflict)
		}
		return true, nil
	case o.HasReason && reason != "":
		if strings.TrimSpace(o.Reason) != reason {
			return false, fmt.Errorf("task %s was already given the reason %q; the reason %q is refused: %w", task, reason, o.Reason, ErrConflict)
		}
		return true, nil
	case o.HasReason && snap.Values.Reason != "" && strings.TrimSpace(o.Reason) == snap.Values.Reason:
		return true, nil
	}
	return false, nil
}

// finished is the answer to a resume of a task that has ended: its progress,
// unchanged; approving a submitted task again says the application was reused.
func (s *Service) finished(t business.Task, snap *flow.Snapshot[State], o ResumeOptions) *View {
	v := s.view(t, snap)
	if o.Action == ActionApprove && v.Result != nil {
		v.Result.Reused = true
	}
	return v
}

// plan checks o against the task's head and returns the run that answers or
// continues it. Errors (nothing changed): ErrInvalid for an answer of the
// wrong kind or draft, ErrConflict for an answer that contradicts the
// decision already recorded.
func (s *Service) plan(t business.Task, snap *flow.Snapshot[State], o ResumeOptions) (func(context.Context) (*flow.Snapshot[State], error), error) {
	answering := o.HasReason || o.Action != ""
	if len(snap.Interrupts) == 0 {
		// A run stopped part-way (crash, stop, breakpoint). An answer given
		// now must be one the run has recorded already (applied, or saved
		// as a pending write by the process that died): it can only be
		// re-affirmed. Any other answer would answer a question nobody saw.
		if answering {
			recorded, err := recordedAnswer(t.ID, snap, o)
			if err != nil {
				return nil, err
			}
			if !recorded {
				return nil, fmt.Errorf("task %s has no question pending: its run stopped part-way, and the answer given was not recorded; run `assistant resume %s` to continue it, then answer the question it asks: %w", t.ID, t.ID, ErrConflict)
			}
		}
		return func(ctx context.Context) (*flow.Snapshot[State], error) {
			return s.graph.Resume(ctx, t.ID, flow.Command{})
		}, nil
	}
	if !answering {
		in := snap.Interrupts[0]
		return nil, fmt.Errorf("%w: task %s is waiting for an answer (%s); %s", ErrInvalid, t.ID, kindOf(in.Value), hintFor(t.ID, kindOf(in.Value)))
	}
	in, err := pick(snap.Interrupts, o.InterruptID)
	if err != nil {
		return nil, fmt.Errorf("%w: task %s: %v", ErrInvalid, t.ID, err)
	}
	answer, err := answerFor(t.ID, in, snap.Values, o)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (*flow.Snapshot[State], error) {
		return s.graph.Resume(ctx, t.ID, flow.Command{ResumeMap: map[string]any{in.ID: answer}})
	}, nil
}

func pick(open []flow.PendingInterrupt, id string) (flow.PendingInterrupt, error) {
	if id == "" {
		if len(open) > 1 {
			return flow.PendingInterrupt{}, fmt.Errorf("%d questions are pending; name one with --interrupt", len(open))
		}
		return open[0], nil
	}
	for _, in := range open {
		if in.ID == id {
			return in, nil
		}
	}
	return flow.PendingInterrupt{}, fmt.Errorf("interrupt %q is not pending", id)
}

// answerFor builds the resume value from the pending interrupt's kind and
// st, the state the question was asked in; an answer of the wrong kind is
// ErrInvalid and nothing is written.
func answerFor(task string, in flow.PendingInterrupt, st State, o ResumeOptions) (any, error) {
	kind := kindOf(in.Value)
	if err := wrongKind(task, kind, o); err != nil {
		return nil, err
	}
	switch kind {
	case KindNeedReason:
		return ReasonAnswer{Reason: o.Reason}, nil
	case KindApproval:
		var q ApprovalQuestion
		if err := json.Unmarshal(approvalView(in.Value, st), &q); err != nil {
			return nil, fmt.Errorf("decode approval question of %s: %w", task, err)
		}
		if o.DraftID != "" {
			if err := wrongDraft(task, o.DraftID, q.DraftID); err != nil {
				return nil, err
			}
		}
		return ApprovalAnswer{Action: o.Action, DraftID: q.DraftID}, nil
	}
	return nil, fmt.Errorf("%w: task %s waits on an interrupt of unknown kind %q", ErrInvalid, task, kindOf(in.Value))
}

func kindOf(v json.RawMessage) string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(v, &k)
	return k.Kind
}

// wrongKind is the error (ErrInvalid) for an answer of the other kind than
// a question of kind asks; nil when it fits or the kind is unknown.
func wrongKind(task, kind string, o ResumeOptions) error {
	switch {
	case kind == KindNeedReason && !o.HasReason:
		return fmt.Errorf("%w: task %s is waiting for a reason, not an action; %s", ErrInvalid, task, hintFor(task, kind))
	case kind == KindApproval && o.Action == "":
		return fmt.Errorf("%w: task %s is waiting for approval, not a reason; %s", ErrInvalid, task, hintFor(task, kind))
	}
	return nil
}

// wrongDraft is the error (ErrInvalid) for --draft given when the draft
// waiting for approval is pending; nil when they are the same.
func wrongDraft(task, given, pending string) error {
	if given == pending {
		return nil
	}
	return fmt.Errorf("%w: --draft %s is not the draft waiting for approval (%s); run `assistant show %s`", ErrInvalid, given, pending, task)
}

func hintFor(task, kind string) string {
	if kind == KindNeedReason {
		return fmt.Sprintf("run `assistant resume %s --reason \"...\"`", task)
	}
	return fmt.Sprintf("run `assistant resume %s --action approve` or `--action cancel`", task)
}

// TaskSummary is one line of List.
type TaskSummary struct {
	Task      string    `json:"task"`
	Order     string    `json:"order"`
	Status    string    `json:"status"`
	Stage     string    `json:"stage"`
	CreatedAt time.Time `json:"created_at"` // UTC
	UpdatedAt time.Time `json:"updated_at"` // UTC
}

// Statuses lists the valid run statuses, for validating a filter.
var Statuses = []string{StatusRunning, StatusWaiting, StatusInterrupted, StatusDone, StatusCancelled, StatusFailed}

// CheckStatus returns ErrInvalid unless status is "" or a run status.
func CheckStatus(status string) error {
	if status != "" && !slices.Contains(Statuses, status) {
		return fmt.Errorf("%w: --status must be one of %s, not %q", ErrInvalid, strings.Join(Statuses, ", "), status)
	}
	return nil
}

// List returns the user's tasks, oldest first, with the run status and stage
// recorded after each command; status "" lists all. An unknown status is
// ErrInvalid.
func (s *Service) List(ctx context.Context, user, status string) ([]TaskSummary, error) {
	if err := CheckStatus(status); err != nil {
		return nil, err
	}
	tasks, err := s.desk.ListTasks(ctx, user, status)
	if err != nil {
		return nil, err
	}
	out := make([]TaskSummary, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, TaskSummary{Task: t.ID, Order: t.OrderID, Status: t.Status, Stage: t.Stage, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt})
	}
	return out, nil
}
