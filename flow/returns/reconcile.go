package returns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// ErrInconsistent: the two files of the data dir contradict each other —
// a checkpoint claims a result (a draft, an application) that the business
// file does not hold, or a checkpoint file holds the run of a task the
// business file has no record of, or the two files belong to different
// data dirs. Nothing was written (exit 1, error code "inconsistent"). The
// business file is the truth for side effects, so the flow never goes on
// from such a checkpoint; Verify lists every such task and restoring both
// files from one backup (Backup) sets them right.
var ErrInconsistent = errors.New("inconsistent")

// CodeInconsistent is the error code of ErrInconsistent in the JSON output,
// and why `orders list` shows an order as not returnable when a task of it
// is inconsistent.
const CodeInconsistent = "inconsistent"

// InconsistentError is the error of a task whose checkpoint the business
// file contradicts: what each file says, for a person. It matches
// ErrInconsistent.
type InconsistentError struct {
	Task string
	// Checkpoints is what checkpoints.sqlite says, e.g. "it was submitted
	// as application app_…".
	Checkpoints string
	// Business is what business.sqlite says, e.g. "has no application
	// app_…".
	Business string
	// Server is set when the two stores are the schemas checkpoints and
	// business of a PostgreSQL database, not a data dir's files: the
	// message names them and pg_restore instead.
	Server bool
}

// Error implements the error interface for *InconsistentError: one line
// naming the task and what each file (or schema) says; what to do is its
// hint.
func (e *InconsistentError) Error() string {
	if e.Server {
		return fmt.Sprintf("task %s is inconsistent: the schema %s says %s, but the schema %s %s; nothing was written",
			e.Task, CheckpointsSchema, e.Checkpoints, BusinessSchema, e.Business)
	}
	return fmt.Sprintf("task %s is inconsistent: checkpoints.sqlite says %s, but business.sqlite %s; nothing was written",
		e.Task, e.Checkpoints, e.Business)
}

// hint lists every such task (verify), then restores both stores from one
// backup.
func (e *InconsistentError) hint() (Hint, bool) {
	if e.Server {
		return Hint{Before: "run", Do: DoVerify, After: "to list every such task, then restore both schemas from one pg_dump with pg_restore; see docs/postgres.md \"Backup\""}, true
	}
	return Hint{Before: "run", Do: DoVerify, After: "to list every such task, then restore both files from one backup, which",
		Then: &Hint{Do: DoBackup, Args: []string{"DIR"}, After: "makes; see docs/recovery.md \"Restoring a backup\""}}, true
}

// onServer reports whether the runner's stores are on PostgreSQL.
func (r *runner) onServer() bool { return r.desk != nil && r.desk.Handle().Postgres() }

// checkpointsName names the checkpoint store in a message to a person:
// the file checkpoints.sqlite, or on PostgreSQL the schema checkpoints
// (businessName is the business store's).
func (r *runner) checkpointsName() string {
	if r.onServer() {
		return "the schema " + CheckpointsSchema
	}
	return CheckpointsFile
}

// businessName names the business store in a message to a person: the
// file business.sqlite, or on PostgreSQL the schema business.
func (r *runner) businessName() string {
	if r.onServer() {
		return "the schema " + BusinessSchema
	}
	return BusinessFile
}

// Is makes errors.Is match ErrInconsistent.
func (e *InconsistentError) Is(target error) bool { return target == ErrInconsistent }

// reconcile checks the head snap of task against the business file before
// anything is shown, answered or run from it: the draft the head names must
// exist, of this task and user; the application it reports submitted must
// exist, of that draft; a head that ended cancelled, or failed without an
// application, must not have one in the business file; every answer the
// head holds must be in the decision trail (trailHeld). The reads are by
// primary key or unique index, and the trail only when the head holds an
// answer. snap nil (no checkpoint yet) passes.
// (claimsNothingSubmitted says which failed heads count.)
// Errors: *InconsistentError, storage errors.
func (r *runner) reconcile(ctx context.Context, task string, snap *flow.Snapshot[State]) error {
	if snap == nil {
		return nil
	}
	st := snap.Values
	if st.Draft != nil || st.Result != nil {
		if err := r.rowsHeld(ctx, task, st); err != nil {
			return err
		}
	}
	if st.Result == nil && snap.Done() && claimsNothingSubmitted(st) {
		if err := r.noApplication(ctx, task, st); err != nil {
			return err
		}
	}
	return r.trailHeld(ctx, task, snap)
}

// rowsHeld checks, in one read by primary key, that the draft st names
// exists in the business file and is task's and st.User's, and that the
// application st reports exists and was made from that draft.
func (r *runner) rowsHeld(ctx context.Context, task string, st State) error {
	var draftID, appID string
	if st.Draft != nil {
		draftID = st.Draft.ID
	}
	if st.Result != nil {
		appID = st.Result.ApplicationID
	}
	h, err := r.desk.Held(ctx, draftID, appID)
	if err != nil {
		return fmt.Errorf("reconcile %s: %w", task, err)
	}
	if st.Draft != nil {
		switch {
		case !h.DraftFound:
			return &InconsistentError{Server: r.onServer(), Task: task, Checkpoints: "its draft is " + draftID, Business: "has no draft " + draftID}
		case h.DraftTask != task || h.DraftUser != st.User:
			return &InconsistentError{Server: r.onServer(), Task: task, Checkpoints: "its draft is " + draftID, Business: fmt.Sprintf("holds draft %s for task %s", draftID, h.DraftTask)}
		}
	}
	if st.Result != nil {
		claim := "it was submitted as application " + appID
		switch {
		case !h.ApplicationFound:
			return &InconsistentError{Server: r.onServer(), Task: task, Checkpoints: claim, Business: "has no application " + appID}
		case st.Draft == nil || h.ApplicationDraft != draftID || h.ApplicationUser != st.User:
			return &InconsistentError{Server: r.onServer(), Task: task, Checkpoints: claim, Business: fmt.Sprintf("holds %s for draft %s", appID, h.ApplicationDraft)}
		}
	}
	return nil
}

// claimsNothingSubmitted reports whether a finished state says the task
// made no application: cancelled, or failed for a reason that refuses a
// submission (the order's eligibility, an expired draft). A run a guard
// ended (attempts exhausted, say) claims nothing: its submit may have
// committed before the crashes it gave up after.
func claimsNothingSubmitted(st State) bool {
	switch {
	case st.Stage == StageCancelled:
		return true
	case st.Stage != StageFailed || st.Error == nil:
		return false
	}
	switch st.Error.Code {
	case CodeDraftExpired, CodeOrderNotFound, business.ReasonNotDelivered, business.ReasonReturnWindowClosed,
		business.ReasonFinalSale, business.ReasonOpenApplication:
		return true
	}
	return false
}

// noApplication checks that a task whose head ended without an application
// (cancelled, failed) has none in the business file: an application made
// and then lost from the checkpoints (a build that trusted the checkpoint
// over the business file) would otherwise stay pending unseen.
func (r *runner) noApplication(ctx context.Context, task string, st State) error {
	a, err := r.desk.ApplicationByTask(ctx, task)
	switch {
	case errors.Is(err, business.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("reconcile %s: %w", task, err)
	}
	return &InconsistentError{Server: r.onServer(), Task: task, Checkpoints: "it ended " + st.Stage + " without an application",
		Business: fmt.Sprintf("holds its application %s (%s)", a.ID, a.ReviewStatus)}
}

// unknownTask is the error of Service.task for a task id with no record of
// user's (lookup is the record's read error, matching runs.ErrNotFound, or
// nil for another user's record): *InconsistentError when the checkpoint
// file holds user's run of it (orphanRun), else ErrNotFound.
func (s *Service) unknownTask(ctx context.Context, id, user string, lookup error) error {
	if errors.Is(lookup, runs.ErrNotFound) {
		if err := s.cmd.orphanRun(ctx, id, user); err != nil {
			return err
		}
	}
	return taskNotFound(id, user)
}

// taskNotFound is the error (ErrNotFound) of task id, unknown to user or
// another user's: the two read alike. It offers user's own list.
func taskNotFound(id, user string) error {
	return errorf(Hint{Before: "run", Do: DoList, After: "to see your tasks"}, "task %s: %w for user %s", id, ErrNotFound, user)
}

// orphanRun is asked when task has no record in the business file: a run
// of task for user in the checkpoint file means the business file lost the
// task (an older business.sqlite, say) and is reported as
// *InconsistentError; nil when there is no such run, or it is another
// user's (reported like an unknown task, as always).
func (r *runner) orphanRun(ctx context.Context, task, user string) error {
	snap, err := headOrNil(r.graph.State(ctx, task))
	if err != nil || snap == nil || snap.Values.User != user {
		return nil // the caller reports the task unknown
	}
	if _, err := r.runs.Task(ctx, task); err == nil {
		// Another process created the task between the caller's look-up
		// and the run read here (a start of the same task at the same
		// moment): the record is there; nothing contradicts the run.
		return nil
	}
	stage := snap.Values.Stage
	if stage == "" {
		stage = "running"
	}
	return &InconsistentError{Server: r.onServer(), Task: task, Checkpoints: "it holds the task's run (stage " + stage + ")", Business: "has no record of the task"}
}

// CodeRecordedEnd is the error code of a task that business.sqlite
// records as failed while its checkpoints are older than that end (an
// older checkpoints.sqlite put back, or a power loss that took its last
// checkpoints): the business file says how it ended, not why.
const CodeRecordedEnd = "recorded_end"

// truth returns the head snap of task t as the business file, the truth for
// side effects, has it. It first checks the head against the business file
// (reconcile: a head that claims more than the business file holds is
// *InconsistentError). A head that has not ended while the business file
// records an end (recordedEnd) is returned ended that way: no node due, no
// question asked, so every answer is judged as on a task that ended
// (endedAnswer), and show, wait and list report the recorded end. Nothing
// is written. snap nil (no run in the checkpoint file) passes, unless the
// record ended: then the record's end is returned, as above.
func (r *runner) truth(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State]) (*flow.Snapshot[State], error) {
	if err := r.reconcile(ctx, t.ID, snap); err != nil {
		return nil, err
	}
	if snap == nil {
		if !recordEnded(t) || t.Kind == runs.KindBatch {
			return nil, nil
		}
		// A checkpoint file older than the task: its run is gone, its
		// record ended. The run is not made again; the record says how it
		// ended.
		snap = &flow.Snapshot[State]{ThreadID: t.ID, Next: []string{NodeLookup},
			Values: State{Task: t.ID, User: t.User, Order: t.OrderID, Reason: t.Reason}}
	}
	if snap.Done() {
		return snap, nil
	}
	st, ended, err := r.recordedEnd(ctx, t, snap)
	if err != nil || !ended {
		return snap, err
	}
	out := *snap
	out.Values = st
	out.Next, out.Tasks, out.Interrupts, out.Breakpoint = nil, nil, nil, ""
	return &out, nil
}

// recordedEnd returns the state of a task whose head snap has not ended as
// the business file says it ended, and true; false when the business file
// records no end. In this order:
//
//   - the task's application, when the head asks a question, the record
//     ended or it is interrupted: the request ended submitted with it,
//     reused (an approve whose checkpoints were lost, or that a stop
//     reached after its business commit; nothing more may be decided);
//   - the record's status done, cancelled or failed (the end a command
//     released the task with, durably, after its last checkpoint);
//   - a cancel in the decision trail that the head neither holds nor has
//     saved to replay (the answer's checkpoint was lost).
//
// A record that says done without an application is *InconsistentError.
// Reads: the application by the task's unique draft index, and the trail
// only when the first two say nothing.
func (r *runner) recordedEnd(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State]) (State, bool, error) {
	st := snap.Values
	if snap.Waiting() || recordEnded(t) || t.Status == StatusInterrupted {
		// A head part-way to a node runs on to it, and submit, cancel and
		// a refused lookup look the application up themselves; but not
		// one an operator stopped: a stop that came after the submit's
		// business commit came too late (docs/recovery.md "Operator stop").
		upd, err := nodes{Deps{Desk: r.desk}}.submitted(ctx, st)
		if err != nil {
			return st, false, fmt.Errorf("reconcile %s: %w", t.ID, err)
		}
		if upd.Stage != "" {
			upd.Decision = ActionApprove
			return Reduce(st, upd), true, nil
		}
	}
	switch t.Status {
	case StatusDone:
		return st, false, &InconsistentError{Server: r.onServer(), Task: t.ID, Checkpoints: "its run has not ended", Business: "records it done but holds no application of it"}
	case StatusCancelled:
		return Reduce(st, State{Stage: StageCancelled, Decision: ActionCancel}), true, nil
	case StatusFailed:
		switch {
		case st.Error != nil:
		case t.ErrorCode != "":
			// The record keeps why (business schema 9), as the lost
			// checkpoint said it.
			st.Error = &Failure{Code: t.ErrorCode, Message: t.Error}
		default:
			st.Error = &Failure{Code: CodeRecordedEnd, Message: fmt.Sprintf(
				"task %s ended failed, as %s records; %s is older than that end and does not say why; nothing was submitted", t.ID, r.businessName(), r.checkpointsName())}
		}
		if err := r.lostAnswers(ctx, t.ID, snap, &st); err != nil {
			return st, false, err
		}
		return Reduce(st, State{Stage: StageFailed}), true, nil
	}
	ds, err := r.desk.Decisions(ctx, t.ID)
	if err != nil {
		return st, false, fmt.Errorf("reconcile %s: %w", t.ID, err)
	}
	known := decisionIDs(snap)
	for _, d := range ds {
		if d.Action == ActionCancel && !known[d.ID] {
			return Reduce(st, State{Stage: StageCancelled, Decision: ActionCancel}), true, nil
		}
	}
	return st, false, nil
}

// recordEnded reports whether task record t says its run ended: done,
// cancelled or failed. No status changes after that.
func recordEnded(t runs.TaskRecord) bool { return endedStatus(t.Status) }

// lostAnswers adds to st, the state of task's head snap as its record
// says the task ended, the answers the decision trail holds that the head
// does not: those of the round that ended the task, whose checkpoint was
// lost (a decide chunk killed between its two commits, a power loss, an
// older checkpoints.sqlite put back), given for the head's draft version
// or a later one (an edit whose checkpoint was lost too), or any of the
// trail's when the head holds no draft (the checkpoint file holds no run
// of the task at all: truth makes a head of the record). So the
// same answer given again is known as the one that ended it (endedAnswer:
// no refusal, the end reported again), as it is with the files in step.
// Reads the trail once. Errors: storage errors.
func (r *runner) lostAnswers(ctx context.Context, task string, snap *flow.Snapshot[State], st *State) error {
	ds, err := r.desk.Decisions(ctx, task)
	if err != nil {
		return fmt.Errorf("reconcile %s: %w", task, err)
	}
	known := decisionIDs(snap)
	for _, d := range ds {
		if known[d.ID] || (st.Draft != nil && d.Version < VersionOf(st.Draft)) {
			continue
		}
		st.Decisions = append(st.Decisions, Decision{ID: d.ID, By: d.By, Action: d.Action, DraftID: d.DraftID, Version: d.Version, At: d.At, Comment: d.Comment, Reason: d.Reason})
		st.Decision = d.Action
	}
	return nil
}

// decisionIDs returns the ids of the decisions the head snap holds: those
// of its state, and those of the answers saved at it that a continued run
// replays.
func decisionIDs(snap *flow.Snapshot[State]) map[string]bool {
	ids := map[string]bool{}
	for _, d := range snap.Values.Decisions {
		ids[d.ID] = true
	}
	for _, ts := range snap.Tasks {
		for _, raw := range ts.Answers {
			var a struct {
				ID string `json:"decision_id"`
			}
			if json.Unmarshal(raw, &a) == nil && a.ID != "" {
				ids[a.ID] = true
			}
		}
	}
	return ids
}

// disagreement is what a refusal of task t says instead of pointing at
// show, which refuses an inconsistent task: that its two files disagree,
// and, as the hint, the operation that lists and explains it (verify). ""
// when the head agrees with the business file, t is a batch, or a read
// fails (the caller's hint stands then).
func (s *Service) disagreement(ctx context.Context, t runs.TaskRecord) (string, Hint) {
	if t.Kind == runs.KindBatch {
		return "", Hint{}
	}
	snap, err := headOrNil(s.cmd.graph.State(ctx, t.ID))
	if err != nil {
		return "", Hint{}
	}
	var ie *InconsistentError
	if !errors.As(s.cmd.reconcile(ctx, t.ID, snap), &ie) {
		return "", Hint{}
	}
	verify := Hint{Do: DoVerify, After: "lists every such task and what to do"}
	if ie.Server {
		return fmt.Sprintf("its two schemas disagree: the schema %s says %s, but the schema %s %s", CheckpointsSchema, ie.Checkpoints, BusinessSchema, ie.Business), verify
	}
	return fmt.Sprintf("its two files disagree: checkpoints.sqlite says %s, but business.sqlite %s", ie.Checkpoints, ie.Business), verify
}
