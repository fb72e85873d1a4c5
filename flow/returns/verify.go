package returns

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// VerifySchemaVersion is the schema_version of the JSON that `assistant
// verify` prints (docs/cli.md "verify").
const VerifySchemaVersion = 1

// Severities of a Finding.
const (
	// SeverityError: the two files contradict each other, or a file is
	// damaged; the flow refuses the task (ErrInconsistent) or the file, and
	// only a restore sets it right. Verify exits 1.
	SeverityError = "error"
	// SeverityWarning: a state the flow sets right by itself the next time
	// the task is resumed or recovered (a record behind or ahead of its
	// run, a run lost before its first checkpoint); listed with the
	// command that does it. Verify still exits 0.
	SeverityWarning = "warning"
)

// Finding is one problem Verify found: the task (or file) it concerns, what
// is wrong, and what to do.
type Finding struct {
	Severity string `json:"severity"`
	Task     string `json:"task,omitempty"`
	File     string `json:"file,omitempty"`
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
	// owner is the user of the finding's task ("" for a file, or a run
	// without a record): a command Fix quotes for the task runs as them
	// (VerifyOptions.Command).
	owner string
}

// FileReport is what Verify found about one file of the data dir.
type FileReport struct {
	File string `json:"file"`
	// Exists: the file is there and not empty.
	Exists bool `json:"exists"`
	// SchemaVersion is its PRAGMA user_version (0 when unread).
	SchemaVersion int64 `json:"schema_version"`
	// DataDirID is the data dir identity it carries, or null.
	DataDirID *string `json:"data_dir_id"`
	// Integrity is "ok", or "failed" when a problem of the file is listed
	// in the findings.
	Integrity string `json:"integrity"`
}

// VerifyReport is what Verify found in a data dir. Clean is true when no
// finding is an error.
type VerifyReport struct {
	SchemaVersion int          `json:"schema_version"`
	DataDir       string       `json:"data_dir"`
	Clean         bool         `json:"clean"`
	Files         []FileReport `json:"files"`
	// Tasks is how many tasks (records and runs) the cross-file checks
	// read.
	Tasks    int       `json:"tasks_checked"`
	Findings []Finding `json:"findings"`
}

// Errors counts the findings of severity error.
func (r *VerifyReport) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}

// FileCheck is what a store's CheckFile found in one file of the data dir,
// read-only (business.FileCheck).
type FileCheck = business.FileCheck

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
	// Command, when set, gives the command prefix a fix quotes for a
	// command run as user ("" for a command of no user's, such as backup):
	// "assistant" and the global flags that make it pasteable as it is
	// (docs/cli.md "Conventions": --data or --store, and --user where it
	// differs). nil quotes plain "assistant".
	Command func(user string) string
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
const fixRestore = "restore both files from one backup taken before the damage (`assistant backup DIR` makes one; docs/recovery.md \"Restoring a backup\")"

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
	if err := PrepareDataDir(o.DataDir, false); err != nil {
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
	rep.quoteCommands(o.Command)
	rep.Clean = rep.Errors() == 0
	return rep, nil
}

// quoteCommands gives every command the findings' fixes quote
// (`assistant …`) the prefix command returns for the finding's task owner,
// so that it pastes as it is; command nil leaves them plain.
func (r *VerifyReport) quoteCommands(command func(user string) string) {
	if command == nil {
		return
	}
	for i, f := range r.Findings {
		r.Findings[i].Fix = strings.ReplaceAll(f.Fix, "`assistant ", "`"+command(f.owner)+" ")
	}
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

// idOrNull is a data dir identity as the report gives it: nil for none.
func idOrNull(id string) *string {
	if id == "" {
		return nil
	}
	return &id
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
			Fix: "restore both schemas from one pg_dump with pg_restore (docs/postgres.md \"Backup\"), or drop both to start afresh"})
	}
	if sv.Desk != nil {
		if err := crossCheck(ctx, o, sv.Desk, now, rep); err != nil {
			return nil, err
		}
	}
	rep.quoteCommands(o.Command)
	rep.Clean = rep.Errors() == 0
	return rep, nil
}

// addFile records one file's check in the report.
func (r *VerifyReport) addFile(name string, c business.FileCheck) {
	f := FileReport{File: name, Exists: c.Exists, SchemaVersion: c.Version, Integrity: "ok"}
	if c.DataDirID != "" {
		id := c.DataDirID
		f.DataDirID = &id
	}
	if len(c.Problems) > 0 {
		f.Integrity = "failed"
	}
	for _, p := range c.Problems {
		r.Findings = append(r.Findings, Finding{Severity: SeverityError, File: name, Problem: p,
			Fix: "restore the data dir from a backup (`assistant backup DIR` makes one; docs/recovery.md \"Restoring a backup\"), or move the file aside"})
	}
	if c.Older {
		r.Findings = append(r.Findings, Finding{Severity: SeverityWarning, File: name,
			Problem: fmt.Sprintf("schema version %d, older than this build's; its rows were not checked", c.Version),
			Fix:     "run any other command of this build (it migrates the file), then `assistant verify` again"})
	}
	r.Files = append(r.Files, f)
}

// lostFile is the file of o's data dir that CheckPair finds lost (missing
// or empty while the other holds task records or runs), read as CheckPair
// reads it; nil when none is, or when the file there cannot be counted
// (its own findings say why: a damaged file, or an older schema).
func lostFile(ctx context.Context, o VerifyOptions, desk business.FileCheck) (*Lost, error) {
	cps := o.CheckpointsFile
	switch {
	case cps.Exists == desk.Exists:
		return nil, nil
	case desk.Exists && !desk.Usable(), cps.Exists && (!cps.Usable() || o.CountThreads == nil):
		return nil, nil
	}
	return LostFile(ctx, o.DataDir, o.CountThreads)
}

// fixLostFile is what to do about a file of the pair that is lost.
const fixLostFile = "restore both files from one backup taken before the loss (`assistant backup DIR` makes one; docs/recovery.md \"Restoring a backup\"), " +
	"or move both files away to start afresh"

// lostFinding is the error finding of a file (or schema) of the pair lost
// while the other holds task records or runs: every other command refuses
// the store then (CheckPair, ServerSchemas.Check). of names the two
// ("checkpoints.sqlite", or "the schema checkpoints").
func lostFinding(lost *Lost, of func(name string) string, fix string) Finding {
	other, what := CheckpointsFile, "run(s), so the tasks, drafts and applications of those runs are lost"
	if lost.File == CheckpointsFile || lost.File == CheckpointsSchema {
		other, what = BusinessFile, "task record(s), so their runs are lost"
	}
	if lost.File == CheckpointsSchema {
		other = BusinessSchema
	} else if lost.File == BusinessSchema {
		other = CheckpointsSchema
	}
	return Finding{Severity: SeverityError, File: lost.File,
		Problem: fmt.Sprintf("%s is missing or empty while %s holds %d %s; every other command refuses this store until it is restored",
			of(lost.File), of(other), lost.Count, what),
		Fix: fix}
}

// addPairing checks that the two files carry one data dir identity, and
// that neither is lost while the other holds data: lost, when set, is the
// file CheckPair refuses the data dir for (an error); a file missing
// beside one that holds nothing is a warning (a new data dir's first
// command makes it).
func (r *VerifyReport) addPairing(cps, desk business.FileCheck, lost *Lost) {
	switch {
	case lost != nil:
		r.Findings = append(r.Findings, lostFinding(lost, func(name string) string { return name }, fixLostFile))
	case !cps.Exists && !desk.Exists:
		return
	case !cps.Exists || !desk.Exists:
		missing, other := CheckpointsFile, BusinessFile
		if !desk.Exists {
			missing, other = BusinessFile, CheckpointsFile
		}
		r.Findings = append(r.Findings, Finding{Severity: SeverityWarning, File: missing,
			Problem: fmt.Sprintf("%s is missing or empty while %s is there", missing, other),
			Fix:     "if tasks were run in this data dir, restore both files from one backup (`assistant backup DIR` makes one); a new data dir's first command makes it"})
	case cps.DataDirID != "" && desk.DataDirID != "" && cps.DataDirID != desk.DataDirID:
		r.Findings = append(r.Findings, Finding{Severity: SeverityError, File: BusinessFile,
			Problem: fmt.Sprintf("the files belong to different data dirs: %s carries %s, %s carries %s", CheckpointsFile, cps.DataDirID, BusinessFile, desk.DataDirID),
			Fix:     "put back the file that belongs with the other: " + fixRestore})
	}
}

// verifier holds what the cross-file checks read through.
type verifier struct {
	cps   flow.Checkpointer
	desk  *business.Store
	runs  *runs.Store
	r     *runner // reconcile's reads, over the read-only stores
	svc   *Service
	graph *flow.Runnable[State]
}

func newVerifier(cps flow.Checkpointer, desk *business.Store, now func() time.Time, host string) (*verifier, error) {
	g, err := Build(Deps{Desk: desk, Now: now}).Compile(flow.Options{Checkpointer: cps, Now: now})
	if err != nil {
		return nil, fmt.Errorf("compile return graph: %w", err)
	}
	// A Service of its own only for the liveness of leases (holderAlive):
	// it opens nothing.
	svc := &Service{desk: desk, now: now, me: newIdentity(host)}
	return &verifier{cps: cps, desk: desk, runs: runs.New(desk.Handle(), now), svc: svc, graph: g,
		r: &runner{svc: svc, desk: desk, graph: g}}, nil
}

// check runs the cross-file checks into rep.
func (v *verifier) check(ctx context.Context, rep *VerifyReport) error {
	// The runs first: a business row a checkpoint names is committed before
	// the checkpoint, so rows read after the runs hold every one of them.
	rs, err := v.readRuns(ctx)
	if err != nil {
		return err
	}
	tasks, err := v.runs.ListTasks(ctx, "", "")
	if err != nil {
		return err
	}
	records := make(map[string]runs.TaskRecord, len(tasks))
	for _, t := range tasks {
		records[t.ID] = t
	}
	for _, id := range rs.threads {
		if err := v.checkRun(ctx, rep, rs, id, records); err != nil {
			return err
		}
	}
	rep.Tasks = len(records)
	for _, id := range rs.threads {
		if _, ok := records[id]; !ok {
			rep.Tasks++
		}
	}
	for _, t := range tasks {
		if _, ok := rs.heads[t.ID]; !ok && rs.undecodable[t.ID] == nil {
			v.recordWithoutRun(rep, t)
		}
	}
	return v.checkApplications(ctx, rep)
}

// runsRead is every run of the checkpoint file: its threads, and each
// one's head, or why it cannot be decoded.
type runsRead struct {
	threads     []string
	heads       map[string]*flow.Snapshot[State]
	undecodable map[string]error
}

// readRuns reads every thread's head.
func (v *verifier) readRuns(ctx context.Context) (runsRead, error) {
	rs := runsRead{heads: map[string]*flow.Snapshot[State]{}, undecodable: map[string]error{}}
	lister, ok := v.cps.(threadLister)
	if !ok {
		return rs, errors.New("the checkpoint store cannot list its threads")
	}
	threads, err := lister.Threads(ctx)
	if err != nil {
		return rs, err
	}
	rs.threads = threads
	for _, id := range threads {
		snap, err := v.graph.State(ctx, id)
		var de *flow.StateDecodeError
		switch {
		case errors.As(err, &de):
			rs.undecodable[id] = err
		case err != nil && !errors.Is(err, flow.ErrThreadNotFound):
			return rs, err
		default:
			rs.heads[id] = snap
		}
	}
	return rs, nil
}

// checkRun checks the run of thread id against its task record.
func (v *verifier) checkRun(ctx context.Context, rep *VerifyReport, rs runsRead, id string, records map[string]runs.TaskRecord) error {
	t, ok := records[id]
	switch {
	case !ok:
		v.orphanRun(rep, id, rs.heads[id])
	case t.Kind == runs.KindBatch:
	case rs.undecodable[id] != nil:
		rep.Findings = append(rep.Findings, Finding{Severity: SeverityWarning, Task: id, owner: t.User, Problem: rs.undecodable[id].Error(),
			Fix: fmt.Sprintf("`assistant history %s` shows the stored state; a build that knows its format can go on with it", ShellQuote(id))})
	default:
		return v.task(ctx, rep, t, rs.heads[id])
	}
	return nil
}

// checkApplications reports every application whose draft is missing or
// is another user's or order's.
func (v *verifier) checkApplications(ctx context.Context, rep *VerifyReport) error {
	apps, err := v.desk.CheckApplications(ctx)
	if err != nil {
		return err
	}
	for _, p := range apps {
		rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, File: BusinessFile,
			Problem: fmt.Sprintf("application %s: %s", p.Application.ID, p.Problem), Fix: fixRestore})
	}
	return nil
}

// orphanRun reports a run whose task the business file has no record of.
func (v *verifier) orphanRun(rep *VerifyReport, id string, snap *flow.Snapshot[State]) {
	stage := "unknown"
	if snap != nil && snap.Values.Stage != "" {
		stage = snap.Values.Stage
	}
	rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, Task: id,
		Problem: fmt.Sprintf("%s holds its run (stage %s), %s has no record of the task", CheckpointsFile, stage, BusinessFile),
		Fix:     fixRestore})
}

// recordWithoutRun reports a task record whose run the checkpoint file does
// not hold: killed before its first checkpoint, or an older checkpoint
// file. The flow runs it again from its recorded input, reusing what the
// business file holds (its draft, its application).
func (v *verifier) recordWithoutRun(rep *VerifyReport, t runs.TaskRecord) {
	if v.svc.holderAlive(t.Lease) {
		return // a live process is running it now
	}
	fix := fmt.Sprintf("`assistant resume %s` runs it again from its recorded input and reuses its draft and application", ShellQuote(t.ID))
	switch {
	case t.Kind == runs.KindBatch:
		fix = fmt.Sprintf("`assistant resume %s` runs the batch again; rows already handled are skipped", ShellQuote(t.ID))
	case recordEnded(t):
		fix = recordedEndFix(t, v.r.businessName())
	}
	rep.Findings = append(rep.Findings, Finding{Severity: SeverityWarning, Task: t.ID, owner: t.User,
		Problem: fmt.Sprintf("%s records it (%s, stage %q), %s holds no run of it", BusinessFile, t.Status, t.Stage, CheckpointsFile),
		Fix:     fix})
}

// task checks one return task that has both a record and a run.
func (v *verifier) task(ctx context.Context, rep *VerifyReport, t runs.TaskRecord, snap *flow.Snapshot[State]) error {
	st := snap.Values
	if st.User != t.User || st.Order != t.OrderID {
		rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, Task: t.ID, owner: t.User,
			Problem: fmt.Sprintf("%s holds a run of user %s for order %s, %s a task of user %s for order %s", CheckpointsFile, st.User, st.Order, BusinessFile, t.User, t.OrderID),
			Fix:     fixRestore})
		return nil
	}
	err := v.r.reconcile(ctx, t.ID, snap)
	var ie *InconsistentError
	if errors.As(err, &ie) {
		rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, Task: t.ID, owner: t.User,
			Problem: fmt.Sprintf("%s says %s, but %s %s", CheckpointsFile, ie.Checkpoints, BusinessFile, ie.Business), Fix: fixRestore})
		return nil
	}
	if err != nil {
		return err
	}
	if t.Stage == StageSubmitted || (t.Status == StatusDone && t.Kind != runs.KindBatch) {
		_, err := v.desk.ApplicationByTask(ctx, t.ID)
		if errors.Is(err, business.ErrNotFound) {
			rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, Task: t.ID, owner: t.User,
				Problem: fmt.Sprintf("its record in %s says %s/%s, but %s holds no application of it", BusinessFile, t.Status, t.Stage, BusinessFile),
				Fix:     fixRestore})
			return nil
		}
		if err != nil {
			return err
		}
	}
	v.recordAndRun(rep, t, view(t, snap))
	return v.standing(ctx, rep, t, snap)
}

// standing reports an answer the decision trail holds for the question
// the head snap asks, whose checkpoint was lost (an edit, revise or
// reason: standing): the task waits for that answer given again, the fix.
// Errors: storage errors.
func (v *verifier) standing(ctx context.Context, rep *VerifyReport, t runs.TaskRecord, snap *flow.Snapshot[State]) error {
	if v.svc.holderAlive(t.Lease) || recordEnded(t) {
		// A task whose record ended has no answer left to carry out:
		// recordAndRun says so (nothing to do).
		return nil
	}
	d, err := standing(ctx, v.desk, t.ID, snap)
	if err != nil || d == nil {
		return err
	}
	rep.Findings = append(rep.Findings, Finding{Severity: SeverityWarning, Task: t.ID, owner: t.User,
		Problem: fmt.Sprintf("%s holds the answer %s by %s at %s that its run in %s lacks (its checkpoint was lost)", v.r.businessName(), d.Action, d.By, d.At.UTC().Format(time.RFC3339), v.r.checkpointsName()),
		Fix:     fmt.Sprintf("`%s` carries it out (the answer stands; any other is refused)", StandingCommand(t.ID, *standingView(d)))})
	return nil
}

// recordAndRun reports a record whose status is not its run's, when no
// live process holds the task: a process killed after its last checkpoint
// (the record is behind), or a backup or power loss that kept a newer
// business file than checkpoint file (the record is ahead). The flow sets
// either right at the next resume of the task.
func (v *verifier) recordAndRun(rep *VerifyReport, t runs.TaskRecord, head *View) {
	if head.Status == t.Status || v.svc.holderAlive(t.Lease) ||
		(t.Status == StatusInterrupted && head.Status == StatusRunning) {
		return
	}
	fix := fmt.Sprintf("`assistant resume %s` sets the record right", ShellQuote(t.ID))
	switch {
	case recordEnded(t) && !head.done():
		fix = recordedEndFix(t, v.r.businessName())
	case head.Status == StatusWaiting:
		fix = fmt.Sprintf("answer its question (`assistant show %s`): the answer is checked against %s, which keeps what it holds", ShellQuote(t.ID), v.r.businessName())
	}
	rep.Findings = append(rep.Findings, Finding{Severity: SeverityWarning, Task: t.ID, owner: t.User,
		Problem: fmt.Sprintf("its record says %s, its run %s (stage %s)", t.Status, head.Status, head.Stage),
		Fix:     fix})
}

// recordedEndFix is the fix of a task whose record ended while its run in
// the checkpoint file did not (an older checkpoints.sqlite): nothing to
// do, every command reports the recorded end and runs nothing (truth).
// business names the business store (runner.businessName).
func recordedEndFix(t runs.TaskRecord, business string) string {
	return fmt.Sprintf("nothing to do: %s is the truth, so every command reports the task %s and none runs it again (`assistant show %s`)", business, t.Status, ShellQuote(t.ID))
}
