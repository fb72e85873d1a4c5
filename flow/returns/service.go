package returns

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// File names inside the data dir (docs/storage.md).
const (
	BusinessFile    = "business.sqlite"
	CheckpointsFile = "checkpoints.sqlite"
)

// Config opens a Service.
type Config struct {
	// Business is where the business store is: a DataDir, whose
	// business.sqlite Open opens, or a *ServerStore the caller opened on a
	// database server.
	Business Location
	// Checkpoints is the checkpoint store, opened by the caller.
	Checkpoints flow.Checkpointer
	// Now is the wall clock; nil means WallClock (time.Now unless a fault
	// skews it).
	Now func() time.Time
	// Wording is how the front end words a hint, and the inputs a message
	// names, in the texts the Service stores or reports as data (a row's
	// error, recover's report); nil means PlainWords.
	Wording Wording
	// MaxAttempts is how often a node of a task may fail (crash, error)
	// before the run ends failed with attempts_exhausted; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// Host is how this process's leases name its machine (HostIdentity);
	// "" means ThisHost().
	Host string
	// OneRun says the process runs one task's run and closes the stores
	// after it (start, resume): the run's release, its last business
	// write, is made durable by checkpointing the WAL into the file
	// (runs.Release.Last). Open the checkpoint store with
	// checkpoints.SQLiteOptions.DurableByCheckpoint to the same end.
	OneRun bool
}

// DefaultMaxAttempts is how often a node of a task may fail before its run
// ends failed (docs/recovery.md "Attempts").
const DefaultMaxAttempts = 5

// Service runs return requests and batches over one data dir: the
// operations every command calls (Start, Show, Resume, Stop, Recover,
// StartBatch, History, List, Prune, orders). It holds the stores and the
// runner of a lone command; a batch makes its rows' runners itself.
type Service struct {
	desk  *business.Store
	runs  *runs.Store
	cps   flow.Checkpointer
	now   func() time.Time
	me    identity // this process as a lease holder
	cmd   *runner  // runs return tasks for a lone command (commandPolicy)
	batch *flow.Runnable[BatchState]
	// progress, when set, is told after each batch row: rows handled, total.
	progress func(done, total int)
	// maxAttempts is Config.MaxAttempts, defaulted.
	maxAttempts int
	// oneRun is Config.OneRun.
	oneRun bool
	// words is Config.Wording, defaulted.
	words Wording
	// stops maps a batch driven by this Service to the context a stop or a
	// signal ends (driveBatch, stopOf).
	stops sync.Map
	// recovering maps a batch whose crashed run this Service continues to
	// its recovery's row tally (driveBatch, countRows).
	recovering sync.Map
	// stillThere reports, with ErrNotFound, that the business store this
	// Service opened is gone or replaced (Wait ends then): the data dir's
	// file identity (watchFile), or the server's check (ServerStore.Gone).
	stillThere func(ctx context.Context, task string) error
}

// Open opens the business store where cfg.Business says (business.sqlite
// in a DataDir, or a *ServerStore as it is), and compiles the return and
// batch graphs over cfg.Checkpoints. The caller closes the Service and the
// checkpointer. Errors: ErrNotFound (no data dir or file, under
// OpenExisting), ErrInvalid (the data dir is a file, or no Business), the
// stores' refusals.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	clock := cfg.Now
	if clock == nil {
		clock = WallClock
	}
	// Every time the service stores or prints is UTC to the millisecond
	// (docs/json.md "Times"): a draft's expires_at, a task's updated_at, a
	// timeline step, a checkpoint's created_at.
	now := func() time.Time { return clock().UTC().Truncate(time.Millisecond) }
	if cfg.Business == nil {
		return nil, fmt.Errorf("%w: open: no business store given (Config.Business)", ErrInvalid)
	}
	desk, stillThere, err := cfg.Business.openDesk(ctx, now)
	if err != nil {
		return nil, err
	}
	s := &Service{desk: desk, runs: runs.New(desk.Handle(), now), cps: cfg.Checkpoints, now: now, me: newIdentity(cfg.Host), maxAttempts: cfg.MaxAttempts, oneRun: cfg.OneRun, stillThere: stillThere}
	if s.maxAttempts <= 0 {
		s.maxAttempts = DefaultMaxAttempts
	}
	if s.words = cfg.Wording; s.words == nil {
		s.words = PlainWords
	}
	if s.cmd, err = s.newRunner(desk, s.runs, cfg.Checkpoints, commandPolicy); err != nil {
		desk.Close()
		return nil, err
	}
	// A batch loops once per chunk, at least one row each, so its loop is
	// bounded by its rows; the recursion limit only guards against a bug.
	b, err := s.buildBatch().Compile(flow.Options{
		Checkpointer:   cfg.Checkpoints,
		Now:            now,
		Hook:           Fault,
		OnTask:         s.cmd.steps.onTask,
		BeforeStep:     s.cmd.beforeStep,
		RecursionLimit: MaxBatchRows + 1,
	})
	if err != nil {
		desk.Close()
		return nil, fmt.Errorf("compile batch graph: %w", err)
	}
	s.batch = b
	return s, nil
}

// Close closes the business store.
func (s *Service) Close() error { return s.desk.Close() }

// Desk gives the business store, for tests and reports.
func (s *Service) Desk() *business.Store { return s.desk }

// Runs gives the run bookkeeping, for tests and reports.
func (s *Service) Runs() *runs.Store { return s.runs }

// OnBatchProgress sets a function told after each batch row (rows handled,
// total), e.g. to draw a progress bar. Call it before running a batch.
func (s *Service) OnBatchProgress(fn func(done, total int)) { s.progress = fn }

// task returns the record of task id if it belongs to user; another user's
// task is reported exactly like an unknown one. Errors: ErrInvalid (a bad
// id), ErrNotFound, storage errors.
func (s *Service) task(ctx context.Context, id, user string) (runs.TaskRecord, error) {
	if err := ValidTaskID(id); err != nil {
		return runs.TaskRecord{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	t, err := s.runs.Task(ctx, id)
	if errors.Is(err, runs.ErrNotFound) || (err == nil && t.User != user) {
		return runs.TaskRecord{}, s.unknownTask(ctx, id, user, err)
	}
	if err != nil {
		return runs.TaskRecord{}, err // runs.Task names the task
	}
	return t, nil
}
