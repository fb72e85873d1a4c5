package returns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	DataDir string
	// Create makes the data dir (0700) and the business file when missing;
	// without it a missing data dir is ErrNotFound.
	Create bool
	// Seed is the teaching orders CSV loaded when business.sqlite is created.
	Seed []byte
	// Checkpoints is the checkpoint store, opened by the caller.
	Checkpoints flow.Checkpointer
	// Now is the wall clock; nil means WallClock (time.Now unless a fault
	// skews it).
	Now func() time.Time
	// Wording is how the front end words a hint, and the inputs a message
	// names, in the texts the Service stores or reports as data (a row's
	// error, recover's report); nil means PlainWords.
	Wording Wording
	// DataDirID is the data dir identity the checkpoint store carries: the
	// business file must carry the same (business.Options.DataDirID).
	DataDirID string
	// MaxAttempts is how often a node of a task may fail (crash, error)
	// before the run ends failed with attempts_exhausted; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// Host is how this process's leases name its machine (HostIdentity);
	// "" means ThisHost().
	Host string
	// Store, when set, is a business store the caller opened elsewhere
	// than in a data dir (on a database server): Open then opens no file,
	// and DataDir, Create, Seed and DataDirID are not used. The Service
	// owns it once Open succeeds (Close closes it).
	Store *ServerStore
}

// ServerStore is a business store on a database server, opened by the
// caller (who knows the store package), and what Wait needs to tell that
// it is gone.
type ServerStore struct {
	// Desk is the business store; runs.New(Desk.Handle(), …) keeps the
	// run bookkeeping in it.
	Desk *business.Store
	// Gone reports, with ErrNotFound, that the store the Service reads is
	// no longer there (its schema dropped): Wait ends on it. nil checks
	// nothing; a lost connection ends Wait with the read's own error.
	Gone func(ctx context.Context) error
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
	// words is Config.Wording, defaulted.
	words Wording
	// stops maps a batch driven by this Service to the context a stop or a
	// signal ends (driveBatch, stopOf).
	stops sync.Map
	// stillThere reports, with ErrNotFound, that the business store this
	// Service opened is gone or replaced (Wait ends then): the data dir's
	// file identity (watchFile), or the server's check (ServerStore.Gone).
	stillThere func(ctx context.Context, task string) error
}

// Open opens business.sqlite in cfg.DataDir, or takes cfg.Store, and
// compiles the return and batch graphs over cfg.Checkpoints. The caller
// closes the Service and the checkpointer. Errors: ErrNotFound (no data dir
// or file, without Create), ErrInvalid (the data dir is a file), the
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
	desk, stillThere, err := openDesk(ctx, cfg, now)
	if err != nil {
		return nil, err
	}
	s := &Service{desk: desk, runs: runs.New(desk.Handle(), now), cps: cfg.Checkpoints, now: now, me: newIdentity(cfg.Host), maxAttempts: cfg.MaxAttempts, stillThere: stillThere}
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

// openDesk opens the business store of cfg: cfg.Store's, or
// business.sqlite in cfg.DataDir (made with cfg.Create), and the check
// Wait makes that it is still there.
func openDesk(ctx context.Context, cfg Config, now func() time.Time) (*business.Store, func(context.Context, string) error, error) {
	if st := cfg.Store; st != nil {
		gone := st.Gone
		if gone == nil {
			gone = func(context.Context) error { return nil }
		}
		return st.Desk, func(ctx context.Context, task string) error {
			if err := gone(ctx); err != nil {
				return fmt.Errorf("wait for %s: %w", task, err)
			}
			return nil
		}, nil
	}
	if err := PrepareDataDir(cfg.DataDir, cfg.Create); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(cfg.DataDir, BusinessFile)
	desk, err := business.Open(ctx, path, business.Options{Create: cfg.Create, Seed: cfg.Seed, Now: now, DataDirID: cfg.DataDirID})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	if err != nil {
		return nil, nil, err
	}
	opened, _ := os.Stat(path) // just opened: the file the store reads (Wait)
	return desk, watchFile(path, opened), nil
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

// PrepareDataDir makes dir (mode 0700) when create is set, and reports a
// missing dir as ErrNotFound otherwise, so a read command never creates files.
// A dir that is a file is ErrInvalid.
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
// applications and task records (business.sqlite lost) are gone.
// countThreads counts the threads of a checkpoint file read-only (the
// checkpoint store's, given by the caller that opens it). Call it before
// opening either store; it changes no file. Verify reports the same state
// as an error finding (LostFile). Errors: runs.ErrLostCheckpoints,
// ErrLostBusiness, file errors.
func CheckPair(ctx context.Context, dir string, countThreads func(context.Context, string) (int, error)) error {
	lost, err := LostFile(ctx, dir, countThreads)
	if err != nil || lost == nil {
		return err
	}
	path := filepath.Join(dir, lost.File)
	if lost.File == CheckpointsFile {
		return fmt.Errorf("open checkpoints %s: %s records %d task(s): %w", path, BusinessFile, lost.Count, runs.ErrLostCheckpoints)
	}
	return fmt.Errorf("open business %s: %s holds %d run(s): %w", path, CheckpointsFile, lost.Count, ErrLostBusiness)
}

// Lost is a file of a data dir's pair (or a schema of a server's) that is
// missing or empty while the other holds runs or task records: the state
// CheckPair (or ServerSchemas.Check) refuses.
type Lost struct {
	// File is the lost one: CheckpointsFile or BusinessFile (on a server
	// CheckpointsSchema or BusinessSchema).
	File string
	// Count is how many task records (checkpoints lost) or runs (business
	// lost) the other one holds; at least 1.
	Count int
}

// LostFile looks, read-only, for the state CheckPair refuses in data dir
// dir: one file missing or empty while the other holds task records or
// runs (countThreads counts a checkpoint file's threads). nil when there is
// none: both files there, both missing, or the one there holding nothing.
// Errors: file errors, reading the count.
func LostFile(ctx context.Context, dir string, countThreads func(context.Context, string) (int, error)) (*Lost, error) {
	cpsPath, deskPath := filepath.Join(dir, CheckpointsFile), filepath.Join(dir, BusinessFile)
	cpsEmpty, err := missingOrEmpty(cpsPath)
	if err != nil {
		return nil, err
	}
	deskEmpty, err := missingOrEmpty(deskPath)
	if err != nil {
		return nil, err
	}
	switch {
	case cpsEmpty && !deskEmpty:
		n, err := runs.CountTasksReadOnly(ctx, deskPath)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return &Lost{File: CheckpointsFile, Count: n}, nil
		}
	case deskEmpty && !cpsEmpty:
		n, err := countThreads(ctx, cpsPath)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return &Lost{File: BusinessFile, Count: n}, nil
		}
	}
	return nil, nil
}

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
		return runs.TaskRecord{}, fmt.Errorf("task %s: %w", id, err)
	}
	return t, nil
}

// ServerSchemas is what one look at a database server found of the two
// schemas, before either store is opened (which would make them): the
// server's twin of the data dir's two files for PrepareDataDir and
// CheckPair.
type ServerSchemas struct {
	// Where names the database for a person ("database assistant on
	// db.internal:5432"), never with a password.
	Where string
	// Checkpoints and Business: the schema exists.
	Checkpoints, Business bool
	// Threads and Tasks count the runs in the checkpoint schema and the
	// task records in the business schema. They are read only when the
	// other schema is missing (the one case Check uses them); 0 otherwise.
	Threads, Tasks int
	// CheckpointsFound and BusinessFound tell, for a schema of that name
	// that exists, whether it is this program's and not newer than this
	// build: both stores' refusal rules, looked at before either store
	// opens (and would make its schema).
	CheckpointsFound, BusinessFound SchemaFound
}

// SchemaFound is what the look found of one schema of the database.
type SchemaFound struct {
	// Exists: a schema of that name exists (pg_namespace).
	Exists bool
	// Version is the highest version its schema_version records; 0 when
	// it has no such table, no row, or one this program did not make.
	Version int
	// Known is the newest version this build knows of that store.
	Known int
	// Empty: its schema_version table exists (with a version column)
	// but holds no row, so Version is 0.
	Empty bool
}

// refusal is the refusal of schema name found as f in where: another
// program's (matching foreign) or a newer build's (matching newer); nil
// when it is missing, or ours and not newer.
func (f SchemaFound) refusal(name, where string, foreign, newer []error) error {
	switch {
	case !f.Exists:
		return nil
	case f.Version == 0:
		why := fmt.Sprintf("it has no %s.schema_version", name)
		if f.Empty {
			why = fmt.Sprintf("its %s.schema_version is empty", name)
		}
		return &schemaRefusal{matches: foreign, msg: fmt.Sprintf("%s: the schema %s exists but was not made by assistant (%s); "+
			"use another database, or drop that schema if nothing in it is needed (nothing was changed)", where, name, why)}
	case f.Version > f.Known:
		return &schemaRefusal{matches: newer, msg: fmt.Sprintf("%s: the schema %s is at version %d, this build knows %d: written by a newer version of assistant; "+
			"upgrade assistant (nothing was changed)", where, name, f.Version, f.Known)}
	}
	return nil
}

// schemaRefusal is a refusal of ServerSchemas.Check: one line, matching
// (errors.Is) each of matches.
type schemaRefusal struct {
	msg     string
	matches []error
}

func (e *schemaRefusal) Error() string { return e.msg }

func (e *schemaRefusal) Is(target error) bool {
	for _, m := range e.matches {
		if target == m {
			return true
		}
	}
	return false
}

// fixLostSchema is what to do about a schema of the pair that is lost.
const fixLostSchema = "restore both schemas from one pg_dump with pg_restore (docs/postgres.md \"Backup\"), " +
	"or drop both schemas to start afresh (nothing was changed)"

// ErrForeignSchema and ErrNewerSchema are the refusals of a schema of the
// server's database that another program made, or that a newer build
// migrated (ServerSchemas.Check). A business schema's also match
// business.ErrForeignFile and business.ErrNewerSchema.
var (
	ErrForeignSchema = errors.New("not a schema of assistant")
	ErrNewerSchema   = errors.New("written by a newer version of assistant")
)

// Lost is the schema of the pair that is missing while the other holds
// task records or runs (Check refuses that, Verify reports it), or nil.
func (s ServerSchemas) Lost() *Lost {
	switch {
	case !s.Checkpoints && s.Business && s.Tasks > 0:
		return &Lost{File: CheckpointsSchema, Count: s.Tasks}
	case !s.Business && s.Checkpoints && s.Threads > 0:
		return &Lost{File: BusinessSchema, Count: s.Threads}
	}
	return nil
}

// Check refuses, before anything is made, what PrepareDataDir and
// CheckPair refuse in a data dir: without create, a database where either
// schema is missing (a read command never makes one: ErrNotFound, "no task
// has been started in …"); with or without it, one schema missing while
// the other holds runs (runs.ErrLostCheckpoints, ErrLostBusiness): making
// a fresh one would hide that they are lost. Before all that, a schema of
// either name that another program made (ErrForeignSchema) or a newer
// build migrated (ErrNewerSchema) is refused, so nothing is written
// beside it.
func (s ServerSchemas) Check(create bool) error {
	if err := s.CheckpointsFound.refusal(CheckpointsSchema, s.Where, []error{ErrForeignSchema}, []error{ErrNewerSchema}); err != nil {
		return err
	}
	if err := s.BusinessFound.refusal(BusinessSchema, s.Where, []error{ErrForeignSchema, business.ErrForeignFile},
		[]error{ErrNewerSchema, business.ErrNewerSchema}); err != nil {
		return err
	}
	lost := s.Lost()
	switch {
	case lost != nil && lost.File == CheckpointsSchema:
		return &schemaRefusal{matches: []error{runs.ErrLostCheckpoints}, msg: fmt.Sprintf("open checkpoints in %s: the schema %s is missing while %s records %d task(s), so their runs are lost; %s",
			s.Where, CheckpointsSchema, BusinessSchema, lost.Count, fixLostSchema)}
	case lost != nil:
		return &schemaRefusal{matches: []error{ErrLostBusiness}, msg: fmt.Sprintf("open business in %s: the schema %s is missing while %s holds %d run(s), so their tasks, drafts and applications are lost; %s",
			s.Where, BusinessSchema, CheckpointsSchema, lost.Count, fixLostSchema)}
	case !create && (!s.Checkpoints || !s.Business):
		return fmt.Errorf("no task has been started in %s (it holds no schemas %s and %s): %w", s.Where, CheckpointsSchema, BusinessSchema, ErrNotFound)
	}
	return nil
}
