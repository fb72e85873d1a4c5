package returns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"assistant/business"
	"assistant/flow"
	"assistant/internal/termtext"
	"assistant/runs"
)

// A decide run (StartDecide) gives many waiting tasks their
// decisions in bulk: each row of its file names a task, an action and,
// optionally, the draft the decision is for. It is a batch task whose rows
// are decisions (BatchState.Of RowsOfDecisions): the same graph walks its
// rows in chunks, with the same group commits, checkpoints, stop, resume
// and recover as a batch, and each row goes through the answer path of
// Service.Resume (its checks, the same outcomes).

// Error codes of a refused row (runs.BatchRow.ErrorCode): the codes of the
// JSON error object a single command would print for the same refusal
// (docs/json.md), so a row reads as the command it stands for.
const (
	CodeInvalidInput = "invalid_input"
	CodeConflict     = "conflict"
	CodeNotFound     = "not_found"
	// CodeBusy is the code of a store that stayed busy (ErrBusy): exit 3,
	// as a command's own error (docs/cli.md "Errors").
	CodeBusy = "busy"
	// CodeNotCounted is the code of a decide row whose approve was taken
	// while the task waits for approval again: an approval of its draft
	// no longer counts (waitsAgain); the row's outcome is draft_ready.
	CodeNotCounted = "approval_not_counted"
)

// decidePrefix starts the input binding (task fingerprint) of a decide
// run, as "batch:" starts a batch's: it tells what the rows are when the
// run must be rebuilt from its record.
const decidePrefix = "decide:"

// decideSpec is a decide file's columns, found by name as a batch file's
// (business.OpenTable); draft may be left out.
var decideSpec = business.TableSpec{What: "decide file", Refused: "no decision was given", Columns: []business.Column{
	{Name: "task", Aliases: []string{"task id"}, Required: true},
	{Name: "action", Aliases: []string{"decision"}, Required: true},
	{Name: "draft", Aliases: []string{"draft id"}},
}}

// ParseDecisions reads a decide CSV (columns task, action and optionally
// draft, found by name) and validates every row: a valid task id, action
// approve or cancel, a draft id that could be one. It returns the rows
// (RowNo, Line, TaskID, Action, DraftID) and the file's fingerprint (hex,
// the first 16 bytes of the SHA-256 of its bytes). A row that decides a
// task an earlier row decides already is kept and marked duplicate_task
// (it is reported, not applied). A bad file is ErrInvalid naming up to ten
// bad lines; a file over MaxBatchFileBytes bytes or MaxBatchRows rows is
// ErrInvalid (and business.ErrTooLarge). Nothing is decided from a refused
// file.
func ParseDecisions(r io.Reader) ([]runs.BatchRow, string, error) {
	rows, fp, err := readRows(r, decideSpec, decideSplit, decisionRecord)
	if err != nil {
		return nil, "", err
	}
	return markDuplicates(rows, func(r runs.BatchRow) string { return r.TaskID }, OutcomeDuplicateTask, "task"), fp, nil
}

// decideSplit says how to split a decide file with too many rows.
const decideSplit = "split it into several files"

// decisionRecord turns record rec, row n on line line of a decide file,
// into a row, or says what is wrong with it (checkDecision).
func decisionRecord(n, line int, rec []string) (runs.BatchRow, error) {
	row := runs.BatchRow{RowNo: n, Line: line, TaskID: rec[0], Action: rec[1], DraftID: rec[2]}
	return row, checkDecision(row)
}

// DecideFile is a decide file checked by ReadDecideFile and not held in
// memory: its rows are read again from the file when the run stores them
// (a page of the transaction at a time), so that deciding a file of any
// size takes the same memory. Rows and Fingerprint are ParseDecisions'
// (the number of rows, the fingerprint of the file's bytes).
type DecideFile struct {
	Rows        int
	Fingerprint string
	src         io.ReadSeeker
	// repeated holds the hashes of task ids that more than one row names
	// (or that collide): only the rows with one of them are compared by
	// task id when the file is read again.
	repeated map[uint64]bool
}

// ReadDecideFile reads the decide file src once, through, as
// ParseDecisions does (the same checks and errors, the same fingerprint),
// keeping only 8 bytes a row while it reads (a hash of each task id, to
// find rows that decide a task twice). src is read again, from its start,
// when the run is started (StartDecide with DecideOptions.File), and must
// not change meanwhile: a file whose bytes changed is ErrInvalid then and
// nothing is decided. For stdin, spool it to a file first.
func ReadDecideFile(src io.ReadSeeker) (*DecideFile, error) {
	var hashes []uint64
	n, fp, err := scanRows(src, decideSpec, decideSplit, decisionRecord, func(row runs.BatchRow) error {
		hashes = append(hashes, taskHash(row.TaskID))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(hashes)
	repeated := map[uint64]bool{}
	for i := 1; i < len(hashes); i++ {
		if hashes[i] == hashes[i-1] {
			repeated[hashes[i]] = true
		}
	}
	return &DecideFile{Rows: n, Fingerprint: fp, src: src, repeated: repeated}, nil
}

// taskHash is the 64-bit FNV-1a hash of a task id.
func taskHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// each reads f's file again from its start and gives add each row, in
// order, a row deciding a task an earlier row decides marked
// duplicate_task as ParseDecisions marks it. Errors: add's; ErrInvalid
// "changed while it was read" when the file is not the one ReadDecideFile
// read: other bytes (checked once it was read through), or a file that no
// longer passes the check (a bad row, no rows, a bad header: the check
// passed, so the file changed); the caller discards what add stored.
func (f *DecideFile) each(add func(runs.BatchRow) error) error {
	if _, err := f.src.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read decide file again: %w", err)
	}
	first := map[string]int{}
	var addErr error
	_, fp, err := scanRows(f.src, decideSpec, decideSplit, decisionRecord, func(row runs.BatchRow) error {
		if f.repeated[taskHash(row.TaskID)] {
			if line, ok := first[row.TaskID]; ok {
				markDuplicate(&row, OutcomeDuplicateTask, "task", row.TaskID, line)
			} else {
				first[row.TaskID] = row.FileLine()
			}
		}
		addErr = add(row)
		return addErr
	})
	switch {
	case addErr != nil:
		return addErr
	case errors.Is(err, ErrInvalid):
		return fmt.Errorf("%w: the decide file changed while it was read (fingerprint %s, then a file that fails the check); nothing was decided", ErrInvalid, f.Fingerprint)
	case err == nil && fp != f.Fingerprint:
		return fmt.Errorf("%w: the decide file changed while it was read (fingerprint %s, then %s); nothing was decided", ErrInvalid, f.Fingerprint, fp)
	}
	return err
}

// checkDecision says what is wrong with a decide row's fields, nil when
// nothing is: the rules of Resume's answer (task, action, draft).
func checkDecision(row runs.BatchRow) error {
	switch {
	case ValidTaskID(row.TaskID) != nil:
		return ValidTaskID(row.TaskID)
	case row.Action == "":
		return fmt.Errorf("task %s: the action is empty; write approve or cancel", row.TaskID)
	case row.Action != ActionApprove && row.Action != ActionCancel:
		return fmt.Errorf("task %s: the action must be approve or cancel, not %s", row.TaskID, termtext.Quote(row.Action))
	case row.DraftID != "" && ValidTaskID(row.DraftID) != nil:
		return fmt.Errorf("task %s: draft id %s is not one (no spaces, control characters, '/' or '\\', at most %d bytes)", row.TaskID, termtext.Quote(row.DraftID), MaxTaskIDBytes)
	}
	return nil
}

// DecideID is the id of the decide run of user's file with fingerprint fp
// (ParseDecisions'): "decide-" and 16 hex digits of a hash of both. The
// same file decided again by the same user is the same run, so a decide
// killed part-way is finished by running it again, and a finished one
// prints its report again instead of deciding anything twice.
func DecideID(user, fp string) string {
	return "decide-" + hashInput(user, fp)[:16]
}

// DecideOptions are the input of StartDecide.
type DecideOptions struct {
	// ID names the run; "" means DecideID(User, Fingerprint).
	ID   string
	User string
	// File is the decide file (ReadDecideFile); when it is set, Rows and
	// Fingerprint are not used.
	File        *DecideFile
	Rows        []runs.BatchRow // from ParseDecisions
	Fingerprint string          // of the file, from ParseDecisions
	Chunk       int             // rows per checkpoint; 0 means DefaultBatchChunk
}

// StartDecide creates a decide run with its rows and runs it: each row's
// decision is given to its task as Resume's answer by o.User would give
// it, many rows to a commit. A row the
// answer path refuses is reported with the code the command would exit
// with: invalid_input (a draft that is not the task's pending one, a task
// that waits for a reason), conflict (a task that ended otherwise, one a
// live process runs), not_found (an unknown task, or another user's: the
// two read alike). Every decision, and the row's report, is durable
// before the run's next checkpoint counts it, and the run's view is
// returned once every row was handled. The same id with the same file
// continues the run as StartBatch does (to its end, or ErrConflict while
// another live process runs it); with another file it is ErrConflict.
// Errors: ErrInvalid, ErrConflict, storage errors.
func (s *Service) StartDecide(ctx context.Context, o DecideOptions) (*View, error) {
	total, each := len(o.Rows), eachOf(o.Rows)
	if o.File != nil {
		total, each, o.Fingerprint = o.File.Rows, o.File.each, o.File.Fingerprint
	}
	if o.ID == "" {
		o.ID = DecideID(o.User, o.Fingerprint)
	}
	if err := ValidTaskID(o.ID); err != nil {
		return nil, fmt.Errorf("%w: decide run id: %v", ErrInvalid, err)
	}
	return s.startRows(ctx, rowsTask{id: o.ID, user: o.User, fingerprint: decidePrefix + o.Fingerprint, total: total, each: each, chunk: o.Chunk, of: RowsOfDecisions, idName: InputID})
}

// Refusals are the outcomes of a decide row that was not applied as
// asked: the codes of refusal and the duplicates ParseDecisions marks.
var Refusals = []string{CodeInvalidInput, CodeConflict, CodeNotFound, CodeInconsistent, OutcomeDuplicateTask}

// RanBefore returns the line that tells a person that decide run id of
// user (with fingerprint fp, ParseDecisions') finished before this command
// started, so that running it now only prints its report again: "decide
// run ID already ran on DATE: N rows refused", and the hint to give
// another id to run the file again, joined by Line and worded by the
// Service's Wording. It is "" for a run that is new, that has not finished (the
// command continues it), or that is another file's or another user's (the
// command refuses it). A refused row is never retried by running the same
// file again: the run's id is a hash of the user and the file. It writes
// nothing. Errors: storage errors.
func (s *Service) RanBefore(ctx context.Context, id, user, fp string) (string, error) {
	if id == "" {
		id = DecideID(user, fp)
	}
	if ValidTaskID(id) != nil {
		return "", nil // StartDecide refuses it
	}
	t, err := s.runs.Task(ctx, id)
	if errors.Is(err, runs.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if t.User != user || t.Kind != runs.KindBatch || t.Fingerprint != decidePrefix+fp || t.Status != StatusDone {
		return "", nil
	}
	v, err := s.Show(ctx, id, user)
	if err != nil || v.Batch == nil {
		return "", err
	}
	refused := 0
	for _, c := range Refusals {
		refused += v.Batch.Counts[c]
	}
	again := Hint{Before: "pass", With: []InputValue{{InputID, "NEW"}}, After: "to run the file again"}
	return Line(fmt.Sprintf("decide run %s already ran on %s: %d rows refused", id, t.UpdatedAt.UTC().Format(time.RFC3339), refused), s.words.Hint(again)), nil
}

// decideRow gives the task of a decide row its decision, as user, through
// the one answer path of resume (runner.answerOnly, without the
// trail read back for a view nobody prints: the user must own the
// task or hold a grant from its owner; the answer is checked against the
// task's head, the lease taken, the run continued), and returns what the
// row came to: the task's stage after the answer (submitted, cancelled,
// failed with its error code), or the refusal. A task that another live
// process holds is runs.ErrBusy, for the caller to wait on; a storage
// failure is an error.
func (r *runner) decideRow(ctx context.Context, run, user string, row runs.BatchRow) (runs.RowOutcome, error) {
	r.tallyDecision(ctx, run, row)
	v, err := r.answerOnly(ctx, ResumeOptions{Task: row.TaskID, User: user, Action: row.Action, DraftID: row.DraftID, DecisionID: rowDecisionID(run, row.RowNo)})
	switch {
	case err == nil:
		out := stageOutcome(row.RowNo, v.Stage, v.Error)
		if why := waitsAgain(v); why != "" {
			// Taken, and the submit it led to counted an approval no
			// more: the row says so, as recover and resume do.
			out.ErrorCode, out.Error = CodeNotCounted, why
		}
		return out, nil
	case errors.Is(err, runs.ErrBusy):
		return runs.RowOutcome{}, err
	case isRefusal(err):
		return refusal(row.RowNo, err, r.svc.words), nil
	}
	return runs.RowOutcome{}, err
}

// tallyDecision counts, while decide run run is recovered from a crash
// (countRows), row whose decision the trail holds already: a row whose
// task's head still asks the question is answered again (its run goes
// again), one whose head is past it is only looked up. Outside a recovery
// it reads nothing. A read that fails counts nothing: the figures are a
// report, and the row's own run meets the error.
func (r *runner) tallyDecision(ctx context.Context, run string, row runs.BatchRow) {
	if _, ok := r.svc.recovering.Load(run); !ok {
		return
	}
	trail, err := r.desk.Decisions(ctx, row.TaskID)
	id := rowDecisionID(run, row.RowNo)
	if err != nil || !slices.ContainsFunc(trail, func(d business.Decision) bool { return d.ID == id }) {
		return
	}
	snap, err := r.graph.State(ctx, row.TaskID)
	switch {
	case errors.Is(err, flow.ErrThreadNotFound), err == nil && len(snap.Interrupts) > 0:
		r.rows.ranAgain++
	case err == nil:
		r.rows.lookedUp++
	}
}

// rowDecisionID is the id of the decision row rowNo of decide run run
// gives: the same each time the row runs (a chunk whose business commit
// landed and whose checkpoints did not runs again and answers the question
// its head still asks), so the trail records it once. It has the form of
// a new decision id: "dec_" and a UUID (version 5, of run and row).
func rowDecisionID(run string, rowNo int) string {
	return "dec_" + uuid.NewSHA1(uuid.NameSpaceURL, []byte("assistant:decide:"+run+":"+strconv.Itoa(rowNo))).String()
}

// isRefusal reports whether err refuses one row (bad input, a conflict, an
// unknown task) rather than failing the run.
func isRefusal(err error) bool {
	return errors.Is(err, ErrInvalid) || errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound)
}

// ErrorCode is the code of the JSON error object for err (docs/json.md
// "Errors"), as a command that met err prints it: invalid_input,
// conflict, busy (a store locked past its busy timeout, a server without
// a free connection slot: ErrBusy once Classify marked it; a task another
// live process holds stays conflict, as resume says), not_found,
// inconsistent (the data dir's two files disagree on the task:
// ErrInconsistent), or internal for anything else (a storage failure).
func ErrorCode(err error) string {
	err = Classify(err)
	switch {
	case errors.Is(err, ErrBusy):
		// Before conflict: a busy store matches ErrConflict too (exit 3).
		return CodeBusy
	case errors.Is(err, ErrInconsistent):
		return CodeInconsistent
	case errors.Is(err, ErrInvalid):
		return CodeInvalidInput
	case errors.Is(err, ErrNotFound):
		return CodeNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, runs.ErrBusy):
		return CodeConflict
	}
	return "internal"
}

// refusal is the outcome of row rowNo refused with err: the outcome and
// the error code are err's code, the message err's with its hint, worded
// by w.
func refusal(rowNo int, err error, w Wording) runs.RowOutcome {
	code := ErrorCode(err)
	return runs.RowOutcome{RowNo: rowNo, Outcome: code, ErrorCode: code, Error: Say(err, w)}
}
