package returns

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"assistant/business"
	"assistant/runs"
)

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
		return &schemaRefusal{matches: foreign, msg: fmt.Sprintf("%s: the schema %s exists but was not made by assistant (%s; nothing was changed)", where, name, why),
			h: Hint{Before: "use another database, or drop that schema if nothing in it is needed"}}
	case f.Version > f.Known:
		return &schemaRefusal{matches: newer, msg: fmt.Sprintf("%s: the schema %s is at version %d, this build knows %d: written by a newer version of assistant "+
			"(nothing was changed)", where, name, f.Version, f.Known), h: Hint{Before: "upgrade assistant to the version that wrote it"}}
	}
	return nil
}

// schemaRefusal is a refusal of ServerSchemas.Check: one line, matching
// (errors.Is) each of matches, and its hint h.
type schemaRefusal struct {
	msg     string
	matches []error
	h       Hint
}

func (e *schemaRefusal) Error() string { return e.msg }

func (e *schemaRefusal) hint() (Hint, bool) { return e.h, !e.h.IsZero() }

func (e *schemaRefusal) Is(target error) bool {
	for _, m := range e.matches {
		if target == m {
			return true
		}
	}
	return false
}

// fixLostSchema is what to do about a schema of the pair that is lost.
var fixLostSchema = Hint{Before: "restore both schemas from one pg_dump with pg_restore (docs/postgres.md \"Backup\"), or drop both schemas to start afresh"}

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
// CheckPair refuse in a data dir: under OpenExisting, a database where
// either schema is missing (a read command never makes one: ErrNotFound,
// "no task has been started in …"); in either mode, one schema missing while
// the other holds runs (runs.ErrLostCheckpoints, ErrLostBusiness): making
// a fresh one would hide that they are lost. Before all that, a schema of
// either name that another program made (ErrForeignSchema) or a newer
// build migrated (ErrNewerSchema) is refused, so nothing is written
// beside it.
func (s ServerSchemas) Check(mode OpenMode) error {
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
		return &schemaRefusal{matches: []error{runs.ErrLostCheckpoints}, msg: fmt.Sprintf("open checkpoints in %s: the schema %s is missing while %s records %d task(s), so their runs are lost (nothing was changed)",
			s.Where, CheckpointsSchema, BusinessSchema, lost.Count), h: fixLostSchema}
	case lost != nil:
		return &schemaRefusal{matches: []error{ErrLostBusiness}, msg: fmt.Sprintf("open business in %s: the schema %s is missing while %s holds %d run(s), so their tasks, drafts and applications are lost (nothing was changed)",
			s.Where, BusinessSchema, CheckpointsSchema, lost.Count), h: fixLostSchema}
	case !mode.Creates() && (!s.Checkpoints || !s.Business):
		// A sentence of its own: the kind's words would not read after it.
		return &marked{fmt.Errorf("no task has been started in %s (it holds no schemas %s and %s)", s.Where, CheckpointsSchema, BusinessSchema), ErrNotFound}
	}
	return nil
}
