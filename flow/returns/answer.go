package returns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// fitsRecord checks an answer to a task whose run is missing (its record
// was committed, its checkpoints were not) against the question the record
// shows: the kind of answer, and the draft it names. Errors as plan's:
// ErrInvalid for a wrong kind or draft, ErrConflict when the record shows
// no question.
func (r *runner) fitsRecord(ctx context.Context, t runs.TaskRecord, o ResumeOptions) error {
	if !o.HasReason && o.Action == "" {
		return nil
	}
	kind := map[string]string{StageDraftReady: KindApproval, StageNeedReason: KindNeedReason}[t.Stage]
	if kind == "" {
		return fmt.Errorf("task %s has no question pending; run `assistant resume %s` to continue it, then answer the question it asks: %w", t.ID, ShellQuote(t.ID), ErrConflict)
	}
	if err := wrongKind(t.ID, kind, o); err != nil || o.DraftID == "" {
		return err
	}
	d, err := r.desk.DraftByTask(ctx, t.ID)
	if err != nil && !errors.Is(err, business.ErrNotFound) {
		return err
	}
	return wrongDraft(t.ID, o.DraftID, d.ID)
}

// recordedAnswer reports whether the answer in o is the one the task has
// recorded already: applied to the state, or saved at the head by a process
// that died before applying it (the snapshot's task answers, which a
// continued run replays). An answer that contradicts the recorded one is
// ErrConflict.
func recordedAnswer(task string, snap *flow.Snapshot[State], o ResumeOptions) (bool, error) {
	action, reason := savedAnswers(snap)
	switch {
	case o.Action != "" && action != "":
		if o.Action != action {
			return false, fmt.Errorf("task %s was already answered %q; the answer %q is refused: %w", task, action, o.Action, ErrConflict)
		}
		return true, nil
	case o.reasonAnswer() && reason != "":
		if strings.TrimSpace(o.Reason) != reason {
			return false, fmt.Errorf("task %s was already given the reason %q; the reason %q is refused: %w", task, reason, o.Reason, ErrConflict)
		}
		return true, nil
	case o.reasonAnswer() && snap.Values.Reason != "" && strings.TrimSpace(o.Reason) == snap.Values.Reason:
		return true, nil
	}
	return false, nil
}

// endedAnswer checks o against a task whose run has ended (snap.Done()),
// by the rule of a waiting task: --draft and --version must name the
// task's last draft (boundToEnded: a superseded one is ErrConflict, stale;
// one the task never had ErrInvalid). Then a plain resume, or the answer
// the run recorded (the same decision, with the same reason for an edit
// and the same comment for a revise: a retry of a command whose reply was
// lost), shows the outcome; any other answer is ErrConflict with a line
// saying what the task ended as. Approve on a submitted task stands too:
// the application it asks for exists.
func (r *runner) endedAnswer(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) error {
	st := snap.Values
	v := view(t, snap)
	if err := r.boundToEnded(ctx, t.ID, st.Draft, endedAs(v), o); err != nil {
		return err
	}
	if !o.answering() {
		return nil
	}
	if err := r.endedInterrupt(ctx, t.ID, snap, o); err != nil {
		return err
	}
	action, _ := savedAnswers(snap)
	var same bool
	answer := o.Action
	switch {
	case o.Action != "":
		same = o.Action == action && sameWords(o, lastOf(st.Decisions, action))
		same = same || (o.Action == ActionApprove && v.Status == StatusDone && v.Result != nil)
	default:
		answer = fmt.Sprintf("--reason %q", o.Reason)
		same = strings.TrimSpace(o.Reason) != "" && strings.TrimSpace(o.Reason) == st.Reason
	}
	if same {
		return nil
	}
	return fmt.Errorf("task %s ended as %s; the answer %s changes nothing: %w", t.ID, endedAs(v), answer, ErrConflict)
}

// endedInterrupt checks the --interrupt of o, an answer to a task whose
// run has ended (any end: done, cancelled, failed), against the questions
// its run asked and the answers saved to them, from every checkpoint of
// the thread (or the head snap's, when the history holds none): a
// question someone else answered, or that o.User answered otherwise, is
// ErrConflict saying who answered it and how; an id the task never asked
// is ErrInvalid. nil without --interrupt, for o.User's own answer given
// again (a retry: the caller's rule of an ended task applies), and for a
// question the run asked and nobody answered. Nothing is written.
// Errors: those, and storage errors.
func (r *runner) endedInterrupt(ctx context.Context, task string, snap *flow.Snapshot[State], o ResumeOptions) error {
	if o.InterruptID == "" {
		return nil
	}
	asked, answers, err := r.askedAnswered(ctx, task, snap)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	a, answered := answers[o.InterruptID]
	if !answered && !asked[o.InterruptID] {
		return fmt.Errorf("%w: task %s never asked interrupt %q; run `assistant history %s` to see its questions", ErrInvalid, task, o.InterruptID, ShellQuote(task))
	}
	if !answered || a.Action == "" {
		return nil // unanswered, or a reason question: the caller's rule
	}
	if a.By == o.User && a.Action == o.Action && sameWords(o, Decision{Reason: a.Reason, Comment: a.Comment}) {
		return nil
	}
	by, when := a.By, ""
	if by == "" {
		by = "someone"
	}
	if !a.At.IsZero() {
		when = " at " + a.At.UTC().Format(time.RFC3339)
	}
	given := o.Action
	if given == "" {
		given = fmt.Sprintf("--reason %q", o.Reason)
	}
	return fmt.Errorf("task %s: interrupt %s was answered already (%s by %s%s); the answer %s changes nothing; run `assistant show %s` to see how the task ended: %w", task, o.InterruptID, a.Action, by, when, given, ShellQuote(task), ErrConflict)
}

// askedAnswered returns the ids of the questions the run of task asked
// and the approval answers saved to them (by interrupt id), read from the
// pending writes of every checkpoint of its thread; a thread whose
// checkpoints are gone (pruned, or lost) gives the questions snap still
// shows. Errors: storage errors.
func (r *runner) askedAnswered(ctx context.Context, task string, snap *flow.Snapshot[State]) (map[string]bool, map[string]ApprovalAnswer, error) {
	asked, answers := map[string]bool{}, map[string]ApprovalAnswer{}
	if snap != nil {
		for _, in := range snap.Interrupts {
			asked[in.ID] = true
		}
	}
	err := r.eachCheckpointWrites(ctx, task, func(writes []flow.Write) bool {
		for _, w := range writes {
			switch w.Kind {
			case flow.WriteInterrupt, flow.WriteSubgraphInterrupt, flow.WriteResume:
				asked[flow.InterruptID(w.TaskID, w.Idx)] = true
			}
			if id, a, ok := resumeAnswer(w); ok {
				answers[id] = a
			}
		}
		return false
	})
	if err != nil {
		return nil, nil, err
	}
	return asked, answers, nil
}

// eachCheckpointWrites calls fn with the pending writes of each of task's
// checkpoints, newest first, until fn returns true. Errors: storage errors.
func (r *runner) eachCheckpointWrites(ctx context.Context, task string, fn func([]flow.Write) bool) error {
	cps, err := r.cps.List(ctx, task, flow.ListOptions{}) // newest first
	if err != nil {
		return err
	}
	for _, c := range cps {
		cp, err := r.cps.Get(ctx, task, c.ID)
		if err != nil {
			return err
		}
		if cp != nil && fn(cp.PendingWrites) {
			return nil
		}
	}
	return nil
}

// resumeAnswer is the answer w saves, when w is a resume write that decodes
// as one: its question's interrupt id and the answer; ok false otherwise.
func resumeAnswer(w flow.Write) (id string, a ApprovalAnswer, ok bool) {
	if w.Kind != flow.WriteResume || json.Unmarshal(w.Value, &a) != nil {
		return "", ApprovalAnswer{}, false
	}
	return flow.InterruptID(w.TaskID, w.Idx), a, true
}

// businessName names the business store in a message to a person: the
// file business.sqlite, or on PostgreSQL the schema business.
func (r *runner) businessName() string {
	if r.onServer() {
		return "the schema " + BusinessSchema
	}
	return BusinessFile
}

// boundToEnded checks --draft and --version of o against last, the draft
// of a task whose run has ended as ended (nil: it ended with none), as
// boundTo does on a waiting task: the last draft (or no --draft or
// --version) passes; an older version of the task's draft is ErrConflict
// (stale, saying how the task ended: no version can be answered any
// more); any other draft or version, which the task never had, is
// ErrInvalid.
func (r *runner) boundToEnded(ctx context.Context, task string, last *DraftRef, ended string, o ResumeOptions) error {
	if o.DraftID == "" && o.Version == 0 {
		return nil
	}
	given := fmt.Sprintf("--version %d", o.Version)
	if o.DraftID != "" {
		given = "--draft " + o.DraftID
	}
	if last == nil {
		return fmt.Errorf("%w: %s is not a draft of task %s (it ended with none); run `assistant show %s`", ErrInvalid, given, task, ShellQuote(task))
	}
	q := ApprovalQuestion{DraftID: last.ID, Version: VersionOf(last)}
	err := r.boundTo(ctx, task, q, o)
	switch {
	case errors.Is(err, ErrInvalid):
		return fmt.Errorf("%w: %s is not the draft of task %s, nor one it had: it ended with version %d (%s); run `assistant show %s`", ErrInvalid, given, task, q.Version, q.DraftID, ShellQuote(task))
	case errors.Is(err, ErrConflict):
		return fmt.Errorf("task %s: %s, superseded by version %d (%s): the answer is stale and changes nothing, and the task ended as %s, so no version can be answered any more: %w", task, given, q.Version, q.DraftID, ended, ErrConflict)
	}
	return err
}

// lastOf returns the latest decision of the trail with action; the
// zero Decision when there is none.
func lastOf(trail []Decision, action string) Decision {
	for i := len(trail) - 1; i >= 0; i-- {
		if trail[i].Action == action {
			return trail[i]
		}
	}
	return Decision{}
}

// sameWords reports whether o carries the words decision d recorded: the
// reason of an edit, the comment of a revise (compared trimmed, as they
// are stored); other actions carry none.
func sameWords(o ResumeOptions, d Decision) bool {
	switch o.Action {
	case ActionEdit:
		return strings.TrimSpace(o.Reason) == d.Reason
	case ActionRevise:
		return strings.TrimSpace(o.Comment) == d.Comment
	}
	return true
}

// endedAs names how a finished run ended: its status, with the error code
// of a failed one ("failed (draft_expired)").
func endedAs(v *View) string {
	if v.Status == StatusFailed && v.Error != nil && v.Error.Code != "" {
		return fmt.Sprintf("%s (%s)", v.Status, v.Error.Code)
	}
	return v.Status
}

// savedAnswers returns the decision and the reason the task has recorded:
// the state's decision, overridden by answers saved at the head and not yet
// applied; "" for none.
func savedAnswers(snap *flow.Snapshot[State]) (action, reason string) {
	action = snap.Values.Decision
	for _, ts := range snap.Tasks {
		for _, raw := range ts.Answers {
			switch ts.Node {
			case NodeReview, NodeReview2:
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
	return action, reason
}

// plan checks o against the task's head and returns the command that
// answers or continues its run, and a note for the person when it chose
// which question an answer goes to. Errors (nothing changed): ErrInvalid
// for an answer of the wrong kind or draft, ErrConflict for an answer that
// contradicts the decision already recorded, for an answer bound to a
// superseded draft version (stale), for a second answer of one person to
// the approvals of one draft, or for an answer to a run that asks no
// question.
func (r *runner) plan(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o ResumeOptions) (flow.Command, string, error) {
	if len(snap.Interrupts) == 0 {
		// A run stopped part-way (crash, stop, breakpoint). An answer given
		// now must be one the run has recorded already (applied, or saved
		// as a pending write by the process that died): it can only be
		// re-affirmed. Any other answer would answer a question nobody saw.
		if o.answering() {
			// Who gave the answer first: another person's answer, or
			// another answer, is refused saying who answered what.
			if err := r.carriedBy(ctx, t.ID, o); err != nil {
				return flow.Command{}, "", err
			}
			recorded, err := recordedAnswer(t.ID, snap, o)
			if err != nil {
				return flow.Command{}, "", err
			}
			if !recorded {
				return flow.Command{}, "", fmt.Errorf("task %s has no question pending: its run stopped part-way, and the answer given was not recorded; run `assistant resume %s` to continue it, then answer the question it asks: %w", t.ID, ShellQuote(t.ID), ErrConflict)
			}
		}
		return flow.Command{}, "", nil
	}
	if !o.answering() {
		in := snap.Interrupts[0]
		return flow.Command{}, "", fmt.Errorf("%w: task %s is waiting for an answer (%s); %s", ErrInvalid, t.ID, kindOf(in.Value), hintFor(t.ID, kindOf(in.Value)))
	}
	if retried(snap, o) {
		return flow.Command{}, "", errAnswerSaved
	}
	approvals := openApprovals(snap.Interrupts)
	if o.Action != "" && snap.Values.Approvals >= 2 {
		if err := inFlight(t.ID, snap, o); err != nil {
			return flow.Command{}, "", err
		}
	}
	if o.InterruptID != "" && !slices.ContainsFunc(snap.Interrupts, func(in flow.PendingInterrupt) bool { return in.ID == o.InterruptID }) {
		// A question no longer open: answered already (a retry of a
		// command whose reply was lost, or someone else's answer), or
		// unknown (pick's ErrInvalid below).
		if err := r.answeredQuestion(ctx, t.ID, snap, o); err != nil {
			return flow.Command{}, "", err
		}
	}
	var in flow.PendingInterrupt
	var err error
	if o.InterruptID == "" && o.Action != "" && len(approvals) > 1 {
		// Two approval questions open: the first one (none of them is
		// answered yet; an answered one is no longer open).
		in = approvals[0]
	} else if in, err = pick(snap.Interrupts, o.InterruptID); err != nil {
		return flow.Command{}, "", fmt.Errorf("%w: task %s: %v", ErrInvalid, t.ID, err)
	}
	answer, err := r.answerFor(ctx, t.ID, in, snap.Values, o)
	if err != nil {
		return flow.Command{}, "", err
	}
	cmd := flow.Command{ResumeMap: map[string]any{in.ID: answer}}
	a, ok := answer.(ApprovalAnswer)
	if !ok || snap.Values.Approvals < 2 {
		return cmd, "", nil
	}
	var ahead []business.Decision
	if a.Action == ActionApprove {
		if ahead, err = r.aheadApprovals(ctx, snap); err != nil {
			return flow.Command{}, "", fmt.Errorf("resume %s: %w", t.ID, err)
		}
	}
	carried := ""
	if i := slices.IndexFunc(ahead, func(d business.Decision) bool { return d.By == o.User }); i >= 0 {
		// o.User's approval the trail holds and the head lacks (its
		// command was killed after recording it, before saving it):
		// this approve carries it out, under its own decision id, so
		// the trail keeps it once.
		d := ahead[i]
		ahead = slices.Delete(ahead, i, i+1)
		a = carriedAnswer(d)
		cmd.ResumeMap[in.ID] = a
		carried = fmt.Sprintf(" (the approval %s gave at %s, recorded in %s)", d.By, d.At.UTC().Format(time.RFC3339), r.businessName())
	} else if err := r.secondAnswer(ctx, t.ID, a.DraftID, o); err != nil {
		return flow.Command{}, "", err
	}
	if a.Action != ActionApprove {
		// One cancel (edit, revise) ends the round: it answers every open
		// approval question of the draft, recorded once in the trail.
		for _, q := range approvals {
			cmd.ResumeMap[q.ID] = answer
		}
		return cmd, fmt.Sprintf("%s answers every open approval question of draft %s", a.Action, a.DraftID), nil
	}
	asked := approvalSlot(in.Value)
	note := fmt.Sprintf("approved as approver %d of %d (interrupt %s)%s", asked.Approver, asked.Approvals, in.ID, carried)
	// Another person's approval the trail holds and the head lacks counts
	// as given: it answers another open question now.
	for _, q := range approvals {
		if len(ahead) == 0 {
			break
		}
		if _, answered := cmd.ResumeMap[q.ID]; answered {
			continue
		}
		d := ahead[0]
		ahead = ahead[1:]
		cmd.ResumeMap[q.ID] = carriedAnswer(d)
		note += fmt.Sprintf("; %s's approval of %s, recorded in %s, counts as approver %d (interrupt %s)", d.By, d.At.UTC().Format(time.RFC3339), r.businessName(), approvalSlot(q.Value).Approver, q.ID)
	}
	return cmd, note, nil
}

// carriedAnswer is the approval answer that carries out d, an approval the
// decision trail holds: under d's own id, by d's approver, at d's time.
func carriedAnswer(d business.Decision) ApprovalAnswer {
	return ApprovalAnswer{Action: ActionApprove, DraftID: d.DraftID, By: d.By, At: d.At, DecisionID: d.ID}
}

// roundAnswer is an answer saved at a head to one of its approval
// questions: the question's id, the answer, and whether its task has run
// with it (done: its update waits for the other approval).
type roundAnswer struct {
	interrupt string
	answer    ApprovalAnswer
	done      bool
}

// roundAnswers returns the answers saved at the head snap to the approval
// questions of the superstep due (review, review_2), those its tasks ran
// with included (the snapshot carries only the answers not used yet), in
// the order they were saved. It reads the head checkpoint once. Errors:
// storage errors.
func (r *runner) roundAnswers(ctx context.Context, snap *flow.Snapshot[State]) ([]roundAnswer, error) {
	done := map[string]bool{}
	for _, ts := range snap.Tasks {
		if ts.Node == NodeReview || ts.Node == NodeReview2 {
			done[ts.ID] = ts.Done
		}
	}
	if len(done) == 0 {
		return nil, nil
	}
	cp, err := r.cps.Get(ctx, snap.ThreadID, snap.CheckpointID)
	if err != nil || cp == nil {
		return nil, err
	}
	var out []roundAnswer
	for _, w := range cp.PendingWrites {
		d, ok := done[w.TaskID]
		id, a, saved := resumeAnswer(w)
		if !ok || !saved {
			continue
		}
		out = append(out, roundAnswer{interrupt: id, answer: a, done: d})
	}
	return out, nil
}

// answeredQuestion checks o, whose --interrupt names a question the head
// snap no longer has open, against the answer saved to it in this round
// (roundAnswers): o.User's own answer given again, the same action, is a
// retry of a command whose reply was lost (a *savedAnswer: it changes
// nothing, exit 0); any other answer to it is ErrConflict naming who
// answered it and how. nil when no answer of the round was given to
// that question (an unknown id: the caller refuses it as ErrInvalid).
func (r *runner) answeredQuestion(ctx context.Context, task string, snap *flow.Snapshot[State], o ResumeOptions) error {
	ras, err := r.roundAnswers(ctx, snap)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	for _, ra := range ras {
		if ra.interrupt != o.InterruptID {
			continue
		}
		a := ra.answer
		when := ""
		if !a.At.IsZero() {
			when = " at " + a.At.UTC().Format(time.RFC3339)
		}
		if a.By == o.User && a.Action == o.Action && sameWords(o, Decision{Reason: a.Reason, Comment: a.Comment}) {
			return &savedAnswer{note: fmt.Sprintf("%s answered %s to interrupt %s already%s; that answer stands and counts once", o.User, a.Action, o.InterruptID, when)}
		}
		by := a.By
		if by == "" {
			by = "someone"
		}
		hint := fmt.Sprintf("run `assistant show %s` to see what is still asked", ShellQuote(task))
		if o.Action != ActionApprove {
			hint = fmt.Sprintf("a %s answers every open approval question: give it without --interrupt", o.Action)
		}
		return fmt.Errorf("task %s: interrupt %s was answered already (%s by %s%s); the answer %s changes nothing; %s: %w", task, o.InterruptID, a.Action, by, when, o.Action, hint, ErrConflict)
	}
	return nil
}

// aheadApprovals returns the approvals of the draft the head snap asks
// about (a task that needs two) that the business file's decision trail
// holds and the head neither holds nor has saved: recorded by a command
// killed after it recorded the answer and before it saved it (the trail
// is written first, recordAnswers), or whose checkpoint was lost. Each
// counts as given and is carried out by the next approve (plan). One per
// person, oldest first. Reads the trail, and the head checkpoint only
// when the trail holds an approval the snapshot does not show. Errors:
// storage errors.
func (r *runner) aheadApprovals(ctx context.Context, snap *flow.Snapshot[State]) ([]business.Decision, error) {
	st := snap.Values
	if st.Approvals < 2 || st.Draft == nil {
		return nil, nil
	}
	ds, err := r.desk.Decisions(ctx, snap.ThreadID)
	if err != nil {
		return nil, err
	}
	known := decisionIDs(snap)
	var ahead []business.Decision
	for _, d := range ds {
		if d.Action == ActionApprove && d.DraftID == st.Draft.ID && !known[d.ID] {
			ahead = append(ahead, d)
		}
	}
	if len(ahead) == 0 {
		return nil, nil
	}
	ras, err := r.roundAnswers(ctx, snap)
	if err != nil {
		return nil, err
	}
	for _, ra := range ras {
		known[ra.answer.DecisionID] = true
	}
	out, by := ahead[:0], map[string]bool{}
	for _, d := range ahead {
		if !known[d.ID] && !by[d.By] {
			by[d.By] = true
			out = append(out, d)
		}
	}
	return out, nil
}

// recordAnswers adds to the business file's decision trail, durably, each
// answer cmd gives that the node asked takes (trailOf), before the
// command saves cmd at the head: an answer saved at a head is in the trail
// already, whatever kills the command after, so show, history, list and
// the card count it as the run does. The node records it again under the
// same decision id, which the trail keeps once. The approval of a task
// that needs one is left to submit, which records it in the commit that
// makes the application (docs/performance.md). Errors: storage errors.
func (r *runner) recordAnswers(ctx context.Context, task string, st State, cmd flow.Command) error {
	seen := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(cmd.ResumeMap)) {
		d, ok := trailOf(st, cmd.ResumeMap[id])
		if !ok || seen[d.ID] {
			continue
		}
		seen[d.ID] = true
		if err := r.desk.RecordDecision(ctx, trailEntry(task, normalized(d))); err != nil {
			return fmt.Errorf("resume %s: %w", task, err)
		}
	}
	return nil
}

// trailOf is the decision the node asked with v (a ReasonAnswer or
// ApprovalAnswer), in state st, records when it takes it, as askReason
// and decided build it; false when the node would not record it: an
// answer it refuses (a blank reason, an edit without a valid reason, a
// draft not the state's), one that names nobody, or the approval of a
// task that needs one (submit records it).
func trailOf(st State, v any) (Decision, bool) {
	switch a := v.(type) {
	case ReasonAnswer:
		r := strings.TrimSpace(a.Reason)
		if a.By == "" || a.DecisionID == "" || ValidReason(r) != nil {
			return Decision{}, false
		}
		d := Decision{ID: a.DecisionID, By: a.By, Action: ActionReason, At: a.At, Reason: r}
		if st.Draft != nil {
			d.DraftID, d.Version = st.Draft.ID, VersionOf(st.Draft)
		}
		return d, true
	case ApprovalAnswer:
		if a.By == "" || a.DecisionID == "" || st.Draft == nil || a.DraftID != st.Draft.ID || !slices.Contains(Actions, a.Action) ||
			(a.Action == ActionApprove && st.Approvals < 2) ||
			(a.Action == ActionEdit && ValidReason(strings.TrimSpace(a.Reason)) != nil) {
			return Decision{}, false
		}
		d := Decision{ID: a.DecisionID, By: a.By, Action: a.Action, DraftID: st.Draft.ID, Version: VersionOf(st.Draft), At: a.At}
		switch a.Action {
		case ActionEdit:
			d.Reason = strings.TrimSpace(a.Reason)
		case ActionRevise:
			d.Comment = strings.TrimSpace(a.Comment)
		}
		return d, true
	}
	return Decision{}, false
}

// errAnswerSaved: the answer given is one this user gave already, saved at
// the head and not yet used (its command was killed before it reported),
// or the edit or revise the task took last (retried): a retry, which
// changes nothing and shows the task (Resume: settled).
var errAnswerSaved = errors.New("answer saved already")

// retried reports whether o repeats the edit or revise that snap, a
// waiting task's head, shows applied last: the last decision of the trail is
// that action by o.User with the same reason (edit) or comment (revise),
// bound to the draft and version o names (if any), and the task waits on
// what it led to: the next draft version at approval (edit), or the
// need_reason question carrying the comment (revise). Giving it again is
// a retry of a command whose reply was lost, not a new edit: one more
// version would count towards business.MaxDraftVersions. An edit of the
// new version names it (--version or --draft).
func retried(snap *flow.Snapshot[State], o ResumeOptions) bool {
	st := snap.Values
	if (o.Action != ActionEdit && o.Action != ActionRevise) || len(st.Decisions) == 0 {
		return false
	}
	d := st.Decisions[len(st.Decisions)-1]
	if d.Action != o.Action || d.By != o.User || !sameWords(o, d) ||
		(o.Version != 0 && o.Version != d.Version) || (o.DraftID != "" && o.DraftID != d.DraftID) {
		return false
	}
	asks := func(kind string) bool {
		return slices.ContainsFunc(snap.Interrupts, func(in flow.PendingInterrupt) bool { return kindOf(in.Value) == kind })
	}
	if o.Action == ActionEdit {
		return asks(KindApproval) && VersionOf(st.Draft) == d.Version+1
	}
	return asks(KindNeedReason) && st.Comment == d.Comment
}

// inFlight checks o against the approval answers saved at the head whose
// task has not run with them yet (a command killed part-way; the task
// runs when the other approval is given): the same answer by the same
// user again is errAnswerSaved (a *savedAnswer), their approve of the
// other question (named by --interrupt) ErrConflict, a cancel, edit or revise
// after their approve is taken as anyone's, another answer by them
// ErrConflict.
func inFlight(task string, snap *flow.Snapshot[State], o ResumeOptions) error {
	for _, ts := range snap.Tasks {
		if ts.Done || (ts.Node != NodeReview && ts.Node != NodeReview2) {
			continue
		}
		for _, raw := range ts.Answers {
			var a ApprovalAnswer
			if json.Unmarshal(raw, &a) != nil || a.By != o.User {
				continue
			}
			switch {
			case a.Action == ActionApprove && o.Action == ActionApprove && o.InterruptID != "" &&
				slices.ContainsFunc(snap.Interrupts, func(in flow.PendingInterrupt) bool { return in.ID == o.InterruptID }):
				return fmt.Errorf("task %s: %s has approved it already (saved, waiting for the other approval); the other approval must come from another person: %w", task, o.User, ErrConflict)
			case a.Action == o.Action:
				return &savedAnswer{note: fmt.Sprintf("%s answered %s already (saved, waiting for the other approval); that answer stands and counts once", o.User, a.Action)}
			case a.Action == ActionApprove && o.Action != ActionApprove:
				// A cancel, edit or revise after one's own approval
				// answers the open questions, as anyone's does.
				continue
			}
			return fmt.Errorf("task %s: %s answered %s already (saved, waiting for the other approval); the answer %s is refused: %w", task, o.User, a.Action, o.Action, ErrConflict)
		}
	}
	return nil
}

// openApprovals returns the open approval questions, in the order asked.
func openApprovals(open []flow.PendingInterrupt) []flow.PendingInterrupt {
	var out []flow.PendingInterrupt
	for _, in := range open {
		if kindOf(in.Value) == KindApproval {
			out = append(out, in)
		}
	}
	return out
}

// approvalSlot decodes which approval of how many a question asks.
func approvalSlot(v json.RawMessage) approvalAsked {
	var q approvalAsked
	_ = json.Unmarshal(v, &q)
	return q
}

// secondAnswer checks an answer o to an approval question of draftID
// against the approvals o.User gave it already: two approvals need two
// people. The same approve again, without --interrupt, is a retry of a
// command whose reply was lost (a *savedAnswer: it changes nothing and
// counts once); an approve of the other question named by --interrupt is
// ErrConflict. A cancel, edit or revise by the first approver is taken:
// it answers every open question of the draft, as anyone's does. The
// business file's trail holds the answers of a round not yet merged into
// the state.
func (r *runner) secondAnswer(ctx context.Context, task, draftID string, o ResumeOptions) error {
	if o.Action != ActionApprove {
		return nil
	}
	ds, err := r.desk.Decisions(ctx, task)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	for _, d := range ds {
		if d.DraftID != draftID || d.By != o.User || d.Action != ActionApprove {
			continue
		}
		if o.InterruptID == "" {
			return &savedAnswer{note: fmt.Sprintf("%s approved draft %s already (at %s); that approval stands and counts once: the other approval must come from another person",
				o.User, draftID, d.At.UTC().Format(time.RFC3339))}
		}
		return fmt.Errorf("task %s: %s has approved draft %s already; the other approval must come from another person: %w", task, o.User, draftID, ErrConflict)
	}
	return nil
}

// savedAnswer is errAnswerSaved with the line for the person that says
// what was kept (View.Note).
type savedAnswer struct{ note string }

func (e *savedAnswer) Error() string { return errAnswerSaved.Error() + ": " + e.note }

// Is makes errors.Is(err, errAnswerSaved) true.
func (e *savedAnswer) Is(target error) bool { return target == errAnswerSaved }

// savedNote is the line a *savedAnswer in err carries; "" for none.
func savedNote(err error) string {
	var s *savedAnswer
	if errors.As(err, &s) {
		return s.note
	}
	return ""
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
// st, the state the question was asked in, as answered by o.User now; an
// answer of the wrong kind or draft is ErrInvalid, one bound to a
// superseded version ErrConflict, and nothing is written.
func (r *runner) answerFor(ctx context.Context, task string, in flow.PendingInterrupt, st State, o ResumeOptions) (any, error) {
	kind := kindOf(in.Value)
	if err := wrongKind(task, kind, o); err != nil {
		return nil, err
	}
	id := o.DecisionID
	if id == "" {
		var err error
		if id, err = newDecisionID(); err != nil {
			return nil, err
		}
	}
	at := r.svc.now().UTC()
	switch kind {
	case KindNeedReason:
		return ReasonAnswer{Reason: o.Reason, By: o.User, At: at, DecisionID: id}, nil
	case KindApproval:
		var q ApprovalQuestion
		if err := json.Unmarshal(approvalView(in.Value, st), &q); err != nil {
			return nil, fmt.Errorf("decode approval question of %s: %w", task, err)
		}
		if err := r.boundTo(ctx, task, q, o); err != nil {
			return nil, err
		}
		a := ApprovalAnswer{Action: o.Action, DraftID: q.DraftID, By: o.User, At: at, DecisionID: id}
		switch o.Action {
		case ActionEdit:
			a.Reason = strings.TrimSpace(o.Reason)
		case ActionRevise:
			a.Comment = strings.TrimSpace(o.Comment)
		}
		return a, nil
	}
	return nil, fmt.Errorf("%w: task %s waits on an interrupt of unknown kind %q", ErrInvalid, task, kindOf(in.Value))
}

// boundTo checks --draft and --version against q, the approval question
// asked: an older version of the task's draft is ErrConflict (stale: a
// newer version replaced it), any other mismatch ErrInvalid.
func (r *runner) boundTo(ctx context.Context, task string, q ApprovalQuestion, o ResumeOptions) error {
	if o.DraftID != "" && o.DraftID != q.DraftID {
		d, err := r.desk.Draft(ctx, o.DraftID)
		if err == nil && d.TaskID == task && d.Version < q.Version {
			return stale(task, fmt.Sprintf("--draft %s is version %d", o.DraftID, d.Version), q)
		}
		return wrongDraft(task, o.DraftID, q.DraftID)
	}
	switch {
	case o.Version == 0 || o.Version == q.Version:
		return nil
	case o.Version < q.Version:
		return stale(task, fmt.Sprintf("--version %d", o.Version), q)
	}
	return fmt.Errorf("%w: --version %d: the draft of task %s waiting for approval is version %d; run `assistant show %s`", ErrInvalid, o.Version, task, q.Version, ShellQuote(task))
}

// stale is the error (ErrConflict) of an answer bound to a superseded
// draft version.
func stale(task, given string, q ApprovalQuestion) error {
	return fmt.Errorf("task %s: %s, superseded by version %d (%s): the answer is stale and changes nothing: %w; run `assistant show %s` and answer version %d", task, given, q.Version, q.DraftID, ErrConflict, ShellQuote(task), q.Version)
}

// newDecisionID returns a new decision id: "dec_" and a time-ordered
// UUIDv7.
func newDecisionID() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("decision id: %w", err)
	}
	return "dec_" + u.String(), nil
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
	case kind == KindNeedReason && !o.reasonAnswer():
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
	return fmt.Errorf("%w: --draft %s is not the draft waiting for approval (%s); run `assistant show %s`", ErrInvalid, given, pending, ShellQuote(task))
}

func hintFor(task, kind string) string {
	if kind == KindNeedReason {
		return fmt.Sprintf("run `assistant resume %s --reason \"...\"`", ShellQuote(task))
	}
	return fmt.Sprintf("run `assistant resume %s --action approve` (or cancel, edit --reason R, revise --comment C)", ShellQuote(task))
}

// standing returns the answer the business file's decision trail holds
// for the question the head snap asks, which the head neither holds nor
// has saved to replay (the checkpoint that applied it was lost: a power
// loss, an older checkpoints.sqlite): an edit or revise of the draft the
// approval question asks about, or a reason given at a need_reason
// question of that draft. That answer stands and alone carries the task
// on. nil when there is none, or snap asks nothing. Approvals are left to
// the round's own checks (secondAnswer), a cancel to truth, which reads
// it as the task's end. Reads the trail once. Errors: storage errors.
func standing(ctx context.Context, desk *business.Store, task string, snap *flow.Snapshot[State]) (*business.Decision, error) {
	if snap == nil || !snap.Waiting() {
		return nil, nil
	}
	ds, err := desk.Decisions(ctx, task)
	if err != nil {
		return nil, err
	}
	known := decisionIDs(snap)
	draft, asks := "", map[string]bool{}
	if snap.Values.Draft != nil {
		draft = snap.Values.Draft.ID
	}
	for _, in := range snap.Interrupts {
		asks[kindOf(in.Value)] = true
	}
	for i := range ds {
		d := &ds[i]
		if known[d.ID] || d.DraftID != draft {
			continue
		}
		if ((d.Action == ActionEdit || d.Action == ActionRevise) && asks[KindApproval]) ||
			(d.Action == ActionReason && asks[KindNeedReason]) {
			return d, nil
		}
	}
	return nil, nil
}

// StandingCommand is the command (`assistant resume …`, plain: the CLI
// gives it its global flags) that carries out the answer d the trail
// holds for task, word for word: a reason, an edit with its reason, a
// revise with its comment.
func StandingCommand(task string, d DecisionView) string {
	switch d.Action {
	case ActionReason:
		return fmt.Sprintf("assistant resume %s --reason %s", ShellQuote(task), ShellQuote(d.Reason))
	case ActionEdit:
		return fmt.Sprintf("assistant resume %s --action edit --reason %s", ShellQuote(task), ShellQuote(d.Reason))
	}
	return fmt.Sprintf("assistant resume %s --action %s --comment %s", ShellQuote(task), ShellQuote(d.Action), ShellQuote(d.Comment))
}

// standingView is d as printed.
func standingView(d *business.Decision) *DecisionView {
	v := decisionView(d.By, d.Action, d.DraftID, d.Version, d.At, d.Comment, d.Reason)
	return &v
}

// trailAhead checks an answer o to the question the head snap asks against
// the answer the decision trail holds for it (standing), which was given
// and stands. The same answer again carries it out under that decision's
// id, so the trail keeps it once (o's DecisionID is set); any other answer
// is ErrConflict naming it and the command that carries it out, and
// nothing is written.
func (r *runner) trailAhead(ctx context.Context, t runs.TaskRecord, snap *flow.Snapshot[State], o *ResumeOptions) error {
	if !o.answering() {
		return nil
	}
	d, err := standing(ctx, r.desk, t.ID, snap)
	if err != nil {
		return fmt.Errorf("resume %s: %w", t.ID, err)
	}
	if d == nil {
		return nil
	}
	var same bool
	if d.Action == ActionReason {
		same = o.reasonAnswer() && strings.TrimSpace(o.Reason) == d.Reason
	} else {
		same = o.Action == d.Action && sameWords(*o, Decision{Reason: d.Reason, Comment: d.Comment})
	}
	if same {
		o.DecisionID = d.ID
		return nil
	}
	return fmt.Errorf("task %s was answered %s already (by %s at %s, recorded in %s; the checkpoint that applied it was lost): the answer given is refused and changes nothing; that answer stands and only it carries the task on: `%s`: %w",
		t.ID, d.Action, d.By, d.At.UTC().Format(time.RFC3339), r.businessName(), StandingCommand(t.ID, *standingView(d)), ErrConflict)
}

// carriedBy checks o, an answer to task's run that stopped part-way with
// no question pending, against who gave the answers the run carries: those
// saved to the questions of the newest checkpoint that has any (one round:
// both approvals of a draft, the cancel that answered them, a reason).
// nil (the caller's rule goes on: recordedAnswer continues the run for
// the same answer and refuses another) when o.User gave one of them and,
// with --interrupt naming one of them, that one. From anyone else, or
// naming another person's question, it is ErrConflict: one line saying
// who answered what and offering `assistant resume T`, which anyone who
// may decide the task may run (the caller checked that o.User may). nil
// too when the checkpoints hold no answer or one saved without its
// answerer (pruned, or older). Nothing is written. Errors: those, and
// storage errors.
func (r *runner) carriedBy(ctx context.Context, task string, o ResumeOptions) error {
	ids, answers, err := r.lastAnswers(ctx, task)
	if err != nil {
		return fmt.Errorf("resume %s: %w", task, err)
	}
	if len(ids) == 0 {
		return nil
	}
	for _, id := range ids {
		if answers[id].By == "" {
			return nil // an answer saved without its answerer: not judged
		}
	}
	// o.User's own answer: the same one is a retry; another one is
	// refused by recordedAnswer as before, naming the answer recorded.
	mine := func(id string) bool { return answers[id].By == o.User }
	if _, named := answers[o.InterruptID]; named {
		if mine(o.InterruptID) {
			return nil
		}
	} else if slices.ContainsFunc(ids, mine) {
		return nil
	}
	said := func(id string) string {
		a := answers[id]
		what := a.Action
		if what == "" {
			what = fmt.Sprintf("reason %q", a.Reason)
		}
		line := what + " by " + a.By
		if !a.At.IsZero() {
			line += " at " + a.At.UTC().Format(time.RFC3339)
		}
		return line
	}
	given := o.Action
	if given == "" {
		given = fmt.Sprintf("--reason %q", o.Reason)
	}
	if _, ok := answers[o.InterruptID]; ok {
		return fmt.Errorf("task %s: interrupt %s was answered already (%s), and its run stopped part-way with no question pending; the answer %s by %s changes nothing; run `assistant resume %s` to continue it: %w", task, o.InterruptID, said(o.InterruptID), given, o.User, ShellQuote(task), ErrConflict)
	}
	var who []string
	for _, id := range ids {
		who = append(who, fmt.Sprintf("interrupt %s: %s", id, said(id)))
	}
	return fmt.Errorf("task %s has no question pending: its run stopped part-way after its questions were answered (%s); the answer %s by %s changes nothing; run `assistant resume %s` to continue it: %w", task, strings.Join(who, "; "), given, o.User, ShellQuote(task), ErrConflict)
}

// lastAnswers returns the answers saved to the questions of task's newest
// checkpoint that holds any (by interrupt id, and the ids in the order
// saved): the round of answers its run carries. None when no checkpoint
// holds one. Errors: storage errors.
func (r *runner) lastAnswers(ctx context.Context, task string) ([]string, map[string]ApprovalAnswer, error) {
	var ids []string
	var answers map[string]ApprovalAnswer
	err := r.eachCheckpointWrites(ctx, task, func(writes []flow.Write) bool {
		ids, answers = nil, map[string]ApprovalAnswer{}
		for _, w := range writes {
			id, a, ok := resumeAnswer(w)
			if !ok {
				continue
			}
			if _, seen := answers[id]; !seen {
				ids = append(ids, id)
			}
			answers[id] = a
		}
		return len(ids) > 0
	})
	if err != nil || len(ids) == 0 {
		return nil, nil, err
	}
	return ids, answers, nil
}
