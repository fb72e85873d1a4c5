package returns

import (
	"context"
	"fmt"

	"assistant/business"
)

// Severities of a Finding.
const (
	// SeverityError: the two files contradict each other, or a file is
	// damaged; the flow refuses the task (ErrInconsistent) or the file, and
	// only a restore sets it right. Verify exits 1.
	SeverityError = "error"
	// SeverityWarning: a state the flow handles by itself: the next resume
	// or recover of the task sets it right (a record behind its run, a run
	// lost before its first checkpoint), or every command already reads
	// the task as the business file records it (a recorded end the
	// checkpoints lack); listed with the command that does it, or "nothing
	// to do". Verify still exits 0.
	SeverityWarning = "warning"
)

// Finding is one problem Verify found: the task (or file) it concerns, what
// is wrong, and what to do.
type Finding struct {
	Severity string `json:"severity"`
	Task     string `json:"task,omitempty"`
	File     string `json:"file,omitempty"`
	Problem  string `json:"problem"`
	// Fix is Hint worded for the task's owner (VerifyOptions.Wording).
	Fix string `json:"fix"`
	// Hint is what to do.
	Hint Hint `json:"-"`
	// owner is the user of the finding's task ("" for a file, or a run
	// without a record): what Hint offers for the task is done as them.
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

// wordFixes sets every finding's Fix to its Hint worded by words for the
// finding's task owner; words nil is PlainWords.
func (r *VerifyReport) wordFixes(words func(user string) Wording) {
	for i, f := range r.Findings {
		w := PlainWords
		if words != nil {
			w = words(f.owner)
		}
		r.Findings[i].Fix = w.Hint(f.Hint)
	}
}

// fixAfter is fix with words put before it.
func fixAfter(words string, fix Hint) Hint {
	fix.Before = words + fix.Before
	return fix
}

// idOrNull is a data dir identity as the report gives it: nil for none.
func idOrNull(id string) *string {
	if id == "" {
		return nil
	}
	return &id
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
			Hint: backupFix("restore the data dir from a backup", restoringDoc, ", or move the file aside")})
	}
	if c.Older {
		r.Findings = append(r.Findings, Finding{Severity: SeverityWarning, File: name,
			Problem: fmt.Sprintf("schema version %d, older than this build's; its rows were not checked", c.Version),
			Hint:    Hint{Before: "run any other command of this build (it migrates the file), then", Do: DoVerify, After: "again"}})
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
var fixLostFile = backupFix("restore both files from one backup taken before the loss", restoringDoc, ", or move both files away to start afresh")

// lostFinding is the error finding of a file (or schema) of the pair lost
// while the other holds task records or runs: every other command refuses
// the store then (CheckPair, ServerSchemas.Check). of names the two
// ("checkpoints.sqlite", or "the schema checkpoints").
func lostFinding(lost *Lost, of func(name string) string, fix Hint) Finding {
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
		Hint: fix}
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
			Hint:    backupFix("if tasks were run in this data dir, restore both files from one backup", "", "; a new data dir's first command makes it")})
	case cps.DataDirID != "" && desk.DataDirID != "" && cps.DataDirID != desk.DataDirID:
		r.Findings = append(r.Findings, Finding{Severity: SeverityError, File: BusinessFile,
			Problem: fmt.Sprintf("the files belong to different data dirs: %s carries %s, %s carries %s", CheckpointsFile, cps.DataDirID, BusinessFile, desk.DataDirID),
			Hint:    fixAfter("put back the file that belongs with the other: ", fixRestore)})
	}
}
