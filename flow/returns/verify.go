package returns

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
)

// VerifySchemaVersion is the schema_version of the JSON of a VerifyReport
// (docs/storage.md "Verify").
const VerifySchemaVersion = 1

// VerifyOptions are the input of Verify. The checkpoint file is read by the
// caller, who knows the store package: CheckpointsFile is what its
// CheckFile found, Checkpoints the file opened read-only (nil when it
// cannot be).
type VerifyOptions struct {
	DataDir         string
	CheckpointsFile FileCheck
	Checkpoints     flow.Checkpointer
	// CountThreads counts the threads of a checkpoint file read-only
	// (the checkpoint store's, as for CheckPair): a business file missing
	// beside a checkpoint file that holds runs is an error finding, the
	// state every other command refuses. nil leaves that a warning.
	CountThreads func(ctx context.Context, path string) (int, error)
	// Now is the wall clock (a lease's expiry); nil means time.Now.
	Now func() time.Time
	// Host is how leases name this machine (Config.Host); "" means
	// ThisHost().
	Host string
	// Server, when set, is the pair on a database server: Verify then
	// reads no file, and runs the cross-store checks over Server.Desk and
	// Checkpoints. DataDir is then only the name the report gives the
	// store (a URL without its password).
	Server *ServerVerify
	// Wording, when set, gives the wording of a finding's fix (its Hint)
	// for a task of user ("" for a file, or a run without a record): the
	// command line gives the commands it quotes the global flags that make
	// them pasteable as they are, the user's among them (docs/cli.md
	// "Conventions"). nil words every fix by PlainWords.
	Wording func(user string) Wording
}

// ServerVerify is what Verify reads on a database server: the business
// store and the schema versions found, both opened by the caller (who
// knows the store packages).
type ServerVerify struct {
	// Desk is the business store; nil when it cannot be opened, because
	// its schema is lost (Lost) or carries another identity than the
	// checkpoint schema's: the report then says so, and the cross-store
	// checks do not run.
	Desk *business.Store
	// Lost, when set, is the schema missing while the other holds task
	// records or runs (ServerSchemas.Lost): an error finding.
	Lost *Lost
	// CheckpointsVersion and BusinessVersion are the schema versions the
	// two schemas hold.
	CheckpointsVersion, BusinessVersion int64
	// CheckpointsDataDirID and BusinessDataDirID are the data dir
	// identities the two schemas carry ("" for none: null in the report).
	CheckpointsDataDirID, BusinessDataDirID string
}

// Names of the two schemas of a store on a database server
// (docs/postgres.md), as Verify reports them.
const (
	CheckpointsSchema = "checkpoints"
	BusinessSchema    = "business"
)

// IntegrityServer is a FileReport's Integrity on a database server: the
// server keeps its own pages (data checksums, amcheck), Verify checks the
// rows.
const IntegrityServer = "server"

// threadLister is the read a checkpoint store needs for Verify: every
// thread it holds (checkpoints.SQLite.Threads).
type threadLister interface {
	Threads(ctx context.Context) ([]string, error)
}

// fixRestore is what to do about a contradiction between the two files.
var fixRestore = backupFix("restore both files from one backup taken before the damage", restoringDoc)

// restoringDoc follows the backup a fix offers: where restoring is told.
const restoringDoc = "; docs/recovery.md \"Restoring a backup\""

// backupFix is a fix that offers a backup in parentheses: before, then
// "(" the backup "makes one" and after ")", then rest, all in words.
func backupFix(before, after string, rest ...string) Hint {
	return Hint{Before: before + " (", Do: DoBackup, Args: []string{"DIR"}, After: "makes one" + after + ")" + strings.Join(rest, "")}
}

// Verify checks the data dir without writing anything, while other
// processes may use it: both files' PRAGMA integrity_check, schema and
// -wal; their pairing (one data dir identity); and every cross-file
// invariant: each run's draft and application exist in the business file,
// of the task and its user; each task record agrees with its run (the
// same user and order, a recorded submission whose application exists, a
// run for every record and a record for every run); no application
// without its draft. Runs are read before the business file, whose rows a
// checkpoint names are committed first, so a file written meanwhile is
// never taken for a contradiction. Errors are failures to read; what is
// wrong with the data dir is in the report's findings.
func Verify(ctx context.Context, o VerifyOptions) (*VerifyReport, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	rep := &VerifyReport{SchemaVersion: VerifySchemaVersion, DataDir: o.DataDir, Findings: []Finding{}}
	if o.Server != nil {
		return verifyServer(ctx, o, now, rep)
	}
	if err := PrepareDataDir(o.DataDir, OpenExisting); err != nil {
		return nil, err
	}
	deskPath := filepath.Join(o.DataDir, BusinessFile)
	deskCheck, err := business.CheckFile(ctx, deskPath)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", deskPath, err)
	}
	rep.addFile(CheckpointsFile, o.CheckpointsFile)
	rep.addFile(BusinessFile, deskCheck)
	lost, err := lostFile(ctx, o, deskCheck)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", o.DataDir, err)
	}
	rep.addPairing(o.CheckpointsFile, deskCheck, lost)
	if o.CheckpointsFile.Usable() && deskCheck.Usable() && o.Checkpoints != nil {
		desk, err := business.OpenReadOnly(ctx, deskPath)
		if err != nil {
			return nil, err
		}
		defer desk.Close()
		if err := crossCheck(ctx, o, desk, now, rep); err != nil {
			return nil, err
		}
	}
	rep.wordFixes(o.Wording)
	rep.Clean = rep.Errors() == 0
	return rep, nil
}

// crossCheck runs the cross-store checks of o's checkpoints against desk
// and adds what they find to rep. Errors: the graph does not compile, or
// a store fails to read (wrapped with the store's name).
func crossCheck(ctx context.Context, o VerifyOptions, desk *business.Store, now func() time.Time, rep *VerifyReport) error {
	v, err := newVerifier(o.Checkpoints, desk, now, o.Host)
	if err != nil {
		return err
	}
	if err := v.check(ctx, rep); err != nil {
		return fmt.Errorf("verify %s: %w", o.DataDir, err)
	}
	return nil
}

// verifyServer runs Verify's cross-store checks over the two schemas of a
// database server. There is no file to check: the report lists the two
// schemas with their versions and integrity "server".
func verifyServer(ctx context.Context, o VerifyOptions, now func() time.Time, rep *VerifyReport) (*VerifyReport, error) {
	sv := o.Server
	rep.Files = []FileReport{
		{File: CheckpointsSchema, Exists: sv.Lost == nil || sv.Lost.File != CheckpointsSchema, SchemaVersion: sv.CheckpointsVersion, Integrity: IntegrityServer, DataDirID: idOrNull(sv.CheckpointsDataDirID)},
		{File: BusinessSchema, Exists: sv.Lost == nil || sv.Lost.File != BusinessSchema, SchemaVersion: sv.BusinessVersion, Integrity: IntegrityServer, DataDirID: idOrNull(sv.BusinessDataDirID)},
	}
	switch {
	case sv.Lost != nil:
		rep.Findings = append(rep.Findings, lostFinding(sv.Lost, func(name string) string { return "the schema " + name }, fixLostSchema))
	case sv.CheckpointsDataDirID != "" && sv.BusinessDataDirID != "" && sv.CheckpointsDataDirID != sv.BusinessDataDirID:
		rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, File: BusinessSchema,
			Problem: fmt.Sprintf("the schemas belong to different data dirs: %s carries %s, %s carries %s; every other command refuses this store until it is restored",
				CheckpointsSchema, sv.CheckpointsDataDirID, BusinessSchema, sv.BusinessDataDirID),
			Hint: Hint{Before: "restore both schemas from one pg_dump with pg_restore (docs/postgres.md \"Backup\"), or drop both to start afresh"}})
	}
	if sv.Desk != nil {
		if err := crossCheck(ctx, o, sv.Desk, now, rep); err != nil {
			return nil, err
		}
	}
	rep.wordFixes(o.Wording)
	rep.Clean = rep.Errors() == 0
	return rep, nil
}
