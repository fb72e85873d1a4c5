package returns

import (
	"context"
	"errors"
	"fmt"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

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
		r: &runner{svc: svc, desk: desk, cps: cps, graph: g}}, nil
}

// check runs the cross-file checks into rep.
func (v *verifier) check(ctx context.Context, rep *VerifyReport) error {
	// The runs first: a business row a checkpoint names is committed before
	// the checkpoint, so rows read after the runs hold every one of them.
	rs, err := v.readRuns(ctx)
	if err != nil {
		return err
	}
	Fault("verify:before-records")
	tasks, err := v.runs.ListTasks(ctx, "", "")
	if err != nil {
		return err
	}
	records := make(map[string]runs.TaskRecord, len(tasks))
	for _, t := range tasks {
		records[t.ID] = t
	}
	checked := make(map[string]bool, len(rs.threads))
	for _, id := range rs.threads {
		checked[id] = true
		if err := v.checkNow(ctx, rep, rs, id, records); err != nil {
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
		if !checked[t.ID] {
			if err := v.checkNow(ctx, rep, rs, t.ID, records); err != nil {
				return err
			}
		}
	}
	return v.checkApplications(ctx, rep)
}

// checkNow is the check of task id (checkRun, or recordWithoutRun when
// the checkpoint file held no run of it), its findings added to rep as
// they are now. The runs and the records are read one after the other,
// so a live holder that ended and let go in between would be found
// disagreeing with itself; a check that finds something therefore reads
// the task's head and record again (lookAgain) and, when either moved,
// checks anew, at most holderRereads times in all. A process that is
// gone writes nothing more, so a finding of an unchanged look stands.
func (v *verifier) checkNow(ctx context.Context, rep *VerifyReport, rs runsRead, id string, records map[string]runs.TaskRecord) error {
	for look := 1; ; look++ {
		var found VerifyReport
		if _, ok := rs.heads[id]; !ok && rs.undecodable[id] == nil {
			if t, ok := records[id]; ok {
				v.recordWithoutRun(&found, t)
			}
		} else if err := v.checkRun(ctx, &found, rs, id, records); err != nil {
			return err
		}
		if len(found.Findings) == 0 || look == holderRereads {
			rep.Findings = append(rep.Findings, found.Findings...)
			return nil
		}
		moved, err := v.lookAgain(ctx, rs, id, records)
		if err != nil {
			return err
		}
		if !moved {
			rep.Findings = append(rep.Findings, found.Findings...)
			return nil
		}
	}
}

// lookAgain reads the head and the record of task id again into rs and
// records and reports whether either moved: another head (or one where
// there was none), or a record that does not hold the same state under
// the same lease (sameHolding), or one that came or went. Errors: storage
// errors.
func (v *verifier) lookAgain(ctx context.Context, rs runsRead, id string, records map[string]runs.TaskRecord) (bool, error) {
	moved := false
	snap, err := v.graph.State(ctx, id)
	var de *flow.StateDecodeError
	switch {
	case errors.As(err, &de):
		_, had := rs.heads[id]
		moved = had || rs.undecodable[id] == nil
		delete(rs.heads, id)
		rs.undecodable[id] = err
	case errors.Is(err, flow.ErrThreadNotFound):
		_, had := rs.heads[id]
		moved = had
		delete(rs.heads, id)
	case err != nil:
		return false, err
	default:
		old, had := rs.heads[id]
		moved = !had || old.CheckpointID != snap.CheckpointID
		rs.heads[id] = snap
		delete(rs.undecodable, id)
	}
	t, err := v.runs.Task(ctx, id)
	old, had := records[id]
	switch {
	case errors.Is(err, runs.ErrNotFound):
		moved = moved || had
		delete(records, id)
	case err != nil:
		return false, err
	default:
		moved = moved || !had || !sameHolding(old, t)
		records[id] = t
	}
	return moved, nil
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
			Hint: Hint{Do: DoHistory, Task: id, After: "shows the stored state; a build that knows its format can go on with it"}})
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
			Problem: fmt.Sprintf("application %s: %s", p.Application.ID, p.Problem), Hint: fixRestore})
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
		Problem: fmt.Sprintf("%s holds its run (stage %s), %s has no record of the task", v.r.checkpointsName(), stage, v.r.businessName()),
		Hint:    fixRestore})
}

// recordWithoutRun reports a task record whose run the checkpoint file does
// not hold: killed before its first checkpoint, or an older checkpoint
// file. The flow runs it again from its recorded input, reusing what the
// business file holds (its draft, its application).
func (v *verifier) recordWithoutRun(rep *VerifyReport, t runs.TaskRecord) {
	if v.svc.holderAlive(t.Lease) {
		return // a live process is running it now
	}
	fix := Hint{Do: DoResume, Task: t.ID, After: "runs it again from its recorded input and reuses its draft and application"}
	switch {
	case t.Kind == runs.KindBatch:
		fix.After = "runs the batch again; rows already handled are skipped"
	case recordEnded(t):
		fix = recordedEndFix(t, v.r.businessName())
	}
	rep.Findings = append(rep.Findings, Finding{Severity: SeverityWarning, Task: t.ID, owner: t.User,
		Problem: fmt.Sprintf("%s records it (%s, stage %q), %s holds no run of it", v.r.businessName(), t.Status, t.Stage, v.r.checkpointsName()),
		Hint:    fix})
}

// task checks one return task that has both a record and a run.
func (v *verifier) task(ctx context.Context, rep *VerifyReport, t runs.TaskRecord, snap *flow.Snapshot[State]) error {
	st := snap.Values
	if st.User != t.User || st.Order != t.OrderID {
		rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, Task: t.ID, owner: t.User,
			Problem: fmt.Sprintf("%s holds a run of user %s for order %s, %s a task of user %s for order %s", v.r.checkpointsName(), st.User, st.Order, v.r.businessName(), t.User, t.OrderID),
			Hint:    fixRestore})
		return nil
	}
	// The run as every command reads it: the head, ended as the business
	// file records it (truth).
	now, err := v.r.truth(ctx, t, snap)
	var ie *InconsistentError
	if errors.As(err, &ie) {
		rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, Task: t.ID, owner: t.User,
			Problem: fmt.Sprintf("%s says %s, but %s %s", v.r.checkpointsName(), ie.Checkpoints, v.r.businessName(), ie.Business), Hint: fixRestore})
		return nil
	}
	if err != nil {
		return err
	}
	if t.Stage == StageSubmitted || (t.Status == StatusDone && t.Kind != runs.KindBatch) {
		_, err := v.desk.ApplicationByTask(ctx, t.ID)
		if errors.Is(err, business.ErrNotFound) {
			rep.Findings = append(rep.Findings, Finding{Severity: SeverityError, Task: t.ID, owner: t.User,
				Problem: fmt.Sprintf("its record in %s says %s/%s, but %s holds no application of it", v.r.businessName(), t.Status, t.Stage, v.r.businessName()),
				Hint:    fixRestore})
			return nil
		}
		if err != nil {
			return err
		}
	}
	stands, err := v.standing(ctx, rep, t, now)
	if err != nil {
		return err
	}
	v.recordAndRun(rep, t, view(t, snap), view(t, now), stands)
	return nil
}

// standing reports an answer the decision trail holds for the question
// the head snap asks, whose checkpoint was lost (an edit, revise or
// reason: standing): the task waits for that answer given again, the fix.
// It reports whether it found one. Errors: storage errors.
func (v *verifier) standing(ctx context.Context, rep *VerifyReport, t runs.TaskRecord, snap *flow.Snapshot[State]) (bool, error) {
	if v.svc.holderAlive(t.Lease) || recordEnded(t) {
		// A task whose record ended has no answer left to carry out:
		// recordAndRun says so (nothing to do).
		return false, nil
	}
	d, err := standing(ctx, v.desk, t.ID, snap)
	if err != nil || d == nil {
		return false, err
	}
	rep.Findings = append(rep.Findings, Finding{Severity: SeverityWarning, Task: t.ID, owner: t.User,
		Problem: fmt.Sprintf("%s holds the answer %s by %s at %s that its run in %s lacks (its checkpoint was lost)", v.r.businessName(), d.Action, d.By, d.At.UTC().Format(time.RFC3339), v.r.checkpointsName()),
		Hint:    fixThen(StandingHint(t.ID, *standingView(d)), "carries it out (the answer stands; any other is refused)")})
	return true, nil
}

// recordAndRun reports a record whose status is not its run's, when no
// live process holds the task. head is the view of the run's head in the
// checkpoint file, now the same run as every command reads it (truth: a
// head that has not ended while the business file records its end is
// read ended so). Two kinds:
//
//   - the record ended and the head did not (an older checkpoints.sqlite,
//     or a power loss that took the last checkpoints): nothing to do, the
//     recorded end is the task's (recordedEndFix);
//   - the record is behind the run (a process killed after its last
//     checkpoint, or a server killed between a group's business and
//     checkpoint commits, whose application the business file holds):
//     the next resume or recover of the task sets the record right; one
//     whose run waits is answered, unless an answer stands (stands: the
//     standing answer's own finding names the fix).
func (v *verifier) recordAndRun(rep *VerifyReport, t runs.TaskRecord, head, now *View, stands bool) {
	if v.svc.holderAlive(t.Lease) {
		return
	}
	if recordEnded(t) {
		if head.Status != t.Status {
			rep.Findings = append(rep.Findings, Finding{Severity: SeverityWarning, Task: t.ID, owner: t.User,
				Problem: fmt.Sprintf("its record says %s, the end every command reports; its checkpoints in %s stop before it, at %s (stage %s)", t.Status, v.r.checkpointsName(), head.Status, head.Stage),
				Hint:    recordedEndFix(t, v.r.businessName())})
		}
		return
	}
	if now.Status == t.Status || (t.Status == StatusInterrupted && now.Status == StatusRunning) {
		return
	}
	problem := fmt.Sprintf("its record says %s, its run %s (stage %s)", t.Status, now.Status, now.Stage)
	if now.Status != head.Status {
		problem += fmt.Sprintf(", as %s holds it; its checkpoints stop at %s (stage %s)", v.r.businessName(), head.Status, head.Stage)
	}
	fix := Hint{Do: DoResume, Task: t.ID, After: "sets the record right"}
	if now.Status == StatusWaiting {
		if stands {
			// The standing answer's finding names the one answer that
			// carries the task on; any other is refused.
			return
		}
		fix = Hint{Before: "answer its question (", Do: DoShow, Task: t.ID, After: fmt.Sprintf("): the answer is checked against %s, which keeps what it holds", v.r.businessName())}
	}
	rep.Findings = append(rep.Findings, Finding{Severity: SeverityWarning, Task: t.ID, owner: t.User, Problem: problem, Hint: fix})
}

// recordedEndFix is the fix of a task whose record ended while its run in
// the checkpoint file did not (an older checkpoints.sqlite): nothing to
// do, every command reports the recorded end and runs nothing (truth).
// business names the business store (runner.businessName).
func recordedEndFix(t runs.TaskRecord, business string) Hint {
	return Hint{Before: fmt.Sprintf("nothing to do: %s is the truth, so every command reports the task %s and none runs it again (", business, t.Status), Do: DoShow, Task: t.ID, After: ")"}
}

// fixThen is fix with words after it.
func fixThen(fix Hint, words string) Hint {
	fix.After = words
	return fix
}
