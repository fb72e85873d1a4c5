package returns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"assistant/business"
	"assistant/flow"
	"assistant/runs"
)

// Approvers and their scope (docs/approvals.md "Approvers"): a user may decide a
// return task — show it, answer its questions, read its history — when
// they own it or hold a grant from its owner. Only the owner grants or
// revokes their own scope. Anyone else is told the task is unknown,
// exactly as for a task id nobody uses.

// decidable returns the record of task id if user may decide it: the
// owner, or a grantee of the owner for a return task (a batch is its
// owner's alone). Errors as Service.task: ErrInvalid, ErrNotFound (the
// same for another user's task without a grant), storage errors.
func (s *Service) decidable(ctx context.Context, id, user string) (runs.TaskRecord, error) {
	if err := ValidTaskID(id); err != nil {
		return runs.TaskRecord{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	t, ok, err := mayDecide(ctx, s.runs, s.desk, id, user)
	if errors.Is(err, runs.ErrNotFound) || (err == nil && !ok) {
		return runs.TaskRecord{}, s.unknownTask(ctx, id, user, err)
	}
	if err != nil {
		return runs.TaskRecord{}, err // mayDecide names the task
	}
	return t, nil
}

// mayDecide reads task id's record from rs and reports whether user may
// decide it (owner, or a grantee of the owner for a return task, read
// from desk). Errors: runs.ErrNotFound, storage errors; each names the
// task once ("task ID: …"), so a caller adds no "task ID" of its own.
func mayDecide(ctx context.Context, rs *runs.Store, desk *business.Store, id, user string) (runs.TaskRecord, bool, error) {
	t, err := rs.Task(ctx, id)
	if err != nil {
		return runs.TaskRecord{}, false, err
	}
	return mayDecideRecord(ctx, desk, t, user)
}

// mayDecideRecord is mayDecide of the record t, read already.
func mayDecideRecord(ctx context.Context, desk *business.Store, t runs.TaskRecord, user string) (runs.TaskRecord, bool, error) {
	if t.User == user {
		return t, true, nil
	}
	if t.Kind != runs.KindReturn {
		return runs.TaskRecord{}, false, nil
	}
	ok, err := desk.MayDecide(ctx, t.User, user)
	if err != nil {
		return runs.TaskRecord{}, false, fmt.Errorf("task %s: who may decide it: %w", t.ID, err)
	}
	if !ok {
		return runs.TaskRecord{}, false, nil
	}
	return t, true, nil
}

// answerOnly answers (or continues) return task o.Task as o.User through
// r's stores and policy: the answer path of a row of a bulk decision, with
// the checks Service.Resume makes (Service.decidable). o.User must own the
// task or hold a grant from its owner (ErrNotFound otherwise, as for an
// unknown task); the user's own batch is ErrInvalid, as resume says. It
// does not read the decision trail back for the view (v.Decisions is left
// as the run's state has it): a row reports only the stage, and its answer
// is recorded in the trail by the node that takes it, in the chunk's
// commit. Errors as Resume.
func (r *runner) answerOnly(ctx context.Context, o ResumeOptions) (*View, error) {
	if err := checkResume(o); err != nil {
		return nil, err
	}
	if err := ValidTaskID(o.Task); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	t, ok, err := r.mayDecide(ctx, o.Task, o.User)
	if err == nil && ok && t.Kind == runs.KindBatch && o.answering() {
		// The user's own batch or decide run: an answer to it is refused
		// as resume refuses it (invalid_input), not as an unknown task.
		return nil, answerToBatch(t.ID)
	}
	if errors.Is(err, runs.ErrNotFound) {
		// A run of the user's that the business file has no record of is
		// inconsistent, as resume says (Service.unknownTask).
		if err := r.orphanRun(ctx, o.Task, o.User); err != nil {
			return nil, err
		}
	}
	if errors.Is(err, runs.ErrNotFound) || (err == nil && (!ok || t.Kind != runs.KindReturn)) {
		return nil, taskNotFound(o.Task, o.User)
	}
	if err != nil {
		return nil, err // mayDecide names the task
	}
	v, err := r.resume(ctx, t, o)
	return v.markExpired(r.svc.now()), err
}

// mayDecide is mayDecide over r's stores, with the record of a task the
// chunk read ahead (runner.ahead) taken from there, once.
func (r *runner) mayDecide(ctx context.Context, id, user string) (runs.TaskRecord, bool, error) {
	t, read := r.ahead.take(id)
	if !read {
		return mayDecide(ctx, r.runs, r.desk, id, user)
	}
	if t == nil {
		return runs.TaskRecord{}, false, fmt.Errorf("task %s: %w", id, runs.ErrNotFound)
	}
	return mayDecideRecord(ctx, r.desk, *t, user)
}

// withTrail sets v.Decisions from the business file's trail, which holds
// the answers of an approval round not yet merged into the state (the
// first of two approvals). v may be nil.
func (s *Service) withTrail(ctx context.Context, v *View) (*View, error) {
	return trail(ctx, s.desk, v)
}

func trail(ctx context.Context, desk *business.Store, v *View) (*View, error) {
	if v == nil || v.Batch != nil {
		return v, nil
	}
	// Read after the run, whose context a signal or a stop may have ended:
	// the view of where it stopped still carries its trail.
	ds, err := desk.Decisions(context.WithoutCancel(ctx), v.Task)
	if err != nil {
		return nil, err
	}
	return withDecisions(v, ds), nil
}

// withDecisions sets v.Decisions from ds, its task's trail, and returns v.
func withDecisions(v *View, ds []business.Decision) *View {
	v.Decisions = make([]DecisionView, 0, len(ds))
	for _, d := range ds {
		dv := decisionView(d.By, d.Action, d.DraftID, d.Version, d.At, d.Comment, d.Reason)
		dv.NotCounted = d.NotCounted
		v.Decisions = append(v.Decisions, dv)
	}
	return v
}

// GrantOptions are the input of Grant and Revoke: User (the current user)
// lets Grantee decide the tasks of For, which must be User ("" means
// User).
type GrantOptions struct {
	User    string
	Grantee string
	For     string
}

// GrantResult is what grant and revoke print.
type GrantResult struct {
	SchemaVersion Schema    `json:"schema_version"`
	Owner         string    `json:"owner"`
	Grantee       string    `json:"grantee"`
	Change        string    `json:"change"` // grant or revoke
	Changed       bool      `json:"changed"`
	By            string    `json:"by"`
	At            time.Time `json:"at"` // UTC, ms
}

// Approvers is what `approvers list` prints: the grants the user gave or
// holds, and every recorded change of them.
type Approvers struct {
	SchemaVersion Schema                 `json:"schema_version"`
	User          string                 `json:"user"`
	Grants        []business.Grant       `json:"grants"`
	Changes       []business.GrantChange `json:"changes"`
}

// NoApprovers is the Approvers of user where nothing was granted (no data
// dir yet).
func NoApprovers(user string) *Approvers {
	return &Approvers{User: user, Grants: []business.Grant{}, Changes: []business.GrantChange{}}
}

// ValidUser returns nil when name may name a user (the person a command
// runs as, an approver, an owner): the rule of task ids
// (ValidTaskID), as a user name is printed in commands and cards as a
// task id is; it refuses, among others, a character that prints as
// nothing or as a blank (termtext.Invisible): such a name would print as
// another, or as nothing. Case is kept: Alice and alice are two users. The error names the rule, with
// name Go-quoted.
func ValidUser(name string) error {
	if err := ValidTaskID(name); err != nil {
		return errors.New(strings.Replace(err.Error(), "task id", "user name", 1))
	}
	return nil
}

// CheckGrant checks GrantOptions without touching any file (For defaulted
// to User); errors match ErrInvalid: a bad user name, a For that is not
// the current user (a user grants only their own scope), a grant to
// oneself.
func CheckGrant(o GrantOptions) (GrantOptions, error) {
	if o.For == "" {
		o.For = o.User
	}
	for _, u := range []struct {
		what any // words, or the Input
		name string
	}{{"user", o.User}, {"approver", o.Grantee}, {InputFor, o.For}} {
		if err := ValidUser(u.name); err != nil {
			return o, errorf(Hint{}, "%w: %s: %v", ErrInvalid, u.what, err)
		}
	}
	if o.For != o.User {
		return o, errorf(Hint{Before: "run it with", With: []InputValue{{InputUser, o.For}}},
			"%w: %s %s: only %s may grant or revoke approvers of their tasks", ErrInvalid, InputFor, o.For, o.For)
	}
	if o.Grantee == o.For {
		// Said for grant and revoke alike: an owner is never an approver
		// of their own tasks, so there is nothing to grant or revoke.
		return o, fmt.Errorf("%w: %s owns the tasks already and decides them without a grant; approvers are other users", ErrInvalid, o.Grantee)
	}
	return o, nil
}

// Grant lets o.Grantee decide o.For's tasks (CheckGrant), recorded with
// who and when; granting again changes nothing (Changed false).
func (s *Service) Grant(ctx context.Context, o GrantOptions) (*GrantResult, error) {
	return s.changeGrant(ctx, o, business.ChangeGrant)
}

// Revoke ends o.Grantee's grant from o.For (CheckGrant), recorded with who
// and when; revoking a grant that does not exist changes nothing (Changed
// false). Answers already given stay in the trail.
func (s *Service) Revoke(ctx context.Context, o GrantOptions) (*GrantResult, error) {
	return s.changeGrant(ctx, o, business.ChangeRevoke)
}

func (s *Service) changeGrant(ctx context.Context, o GrantOptions, change string) (*GrantResult, error) {
	o, err := CheckGrant(o)
	if err != nil {
		return nil, err
	}
	now := s.now()
	do := s.desk.GrantApprover
	if change == business.ChangeRevoke {
		do = s.desk.RevokeApprover
	}
	changed, err := do(ctx, o.For, o.Grantee, o.User, now)
	if err != nil {
		return nil, err
	}
	return &GrantResult{Owner: o.For, Grantee: o.Grantee, Change: change, Changed: changed, By: o.User, At: now}, nil
}

// ListApprovers returns the grants user gave or holds and their recorded
// changes. It writes nothing.
func (s *Service) ListApprovers(ctx context.Context, user string) (*Approvers, error) {
	g, err := s.desk.Grants(ctx, user)
	if err != nil {
		return nil, err
	}
	c, err := s.desk.GrantChanges(ctx, user)
	if err != nil {
		return nil, err
	}
	return &Approvers{User: user, Grants: g, Changes: c}, nil
}

// awaitingMe returns the return tasks o.User may decide now, oldest first:
// their own and those of every owner who granted them, waiting for an
// answer, not expired, and not already answered by them (the first of two
// approvals). Owner is set on another owner's task.
func (s *Service) awaitingMe(ctx context.Context, o ListOptions) ([]TaskSummary, error) {
	owners, err := s.desk.OwnersGranting(ctx, o.User)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	owners = append([]string{o.User}, owners...)
	now := s.now()
	var out []TaskSummary
	for _, owner := range owners {
		// A task recorded running whose process is gone may wait for an
		// answer all the same (asShown), as show says.
		tasks, err := s.recordsShownAs(ctx, owner, StatusWaiting)
		if err != nil {
			return nil, err
		}
		// An answer the trail holds whose checkpoint was lost leaves the
		// record a question ahead of the head (asAsked), as in ListTasks.
		decided, err := s.desk.DecidedWaiting(ctx, owner)
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		for _, t := range tasks {
			if !o.After.before(t.CreatedAt, t.ID) {
				continue
			}
			if t = s.asShown(ctx, t); t.Kind != runs.KindReturn || t.Status != StatusWaiting {
				continue
			}
			if decided[t.ID] {
				t = s.asAsked(ctx, t)
			}
			ok, err := s.mayAnswerNow(ctx, t, o.User, now)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			sum := s.summary(t, false)
			if owner != o.User {
				sum.Owner = owner
			}
			out = append(out, sum)
		}
	}
	slices.SortStableFunc(out, func(a, b TaskSummary) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Task, b.Task)
	})
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	if out == nil {
		out = []TaskSummary{}
	}
	return out, nil
}

// mayAnswerNow reports whether user can answer waiting task t at now: its
// draft has not expired, its head agrees with the business file (consistent:
// an answer to a task whose two files disagree is refused), and, at an
// approval, user's approve of its current draft could be carried out now
// (approveRefused: not a second approval of theirs, not one the submit
// would not count).
func (s *Service) mayAnswerNow(ctx context.Context, t runs.TaskRecord, user string, now time.Time) (bool, error) {
	expired, err := s.expiredNow(ctx, t, now)
	if err != nil || expired || t.Status != StatusWaiting {
		return false, err
	}
	if ok, err := s.consistent(ctx, t); err != nil || !ok {
		return false, err
	}
	if t.Stage != StageDraftReady {
		return true, nil
	}
	d, err := s.desk.DraftByTask(ctx, t.ID)
	if errors.Is(err, business.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("list: %w", err)
	}
	// Their first of two approvals, still counted, or an approval the
	// submit would not count (the requester's own of a task that needs
	// two): the task does not wait for them. A lost edit or revise stands
	// (asAsked).
	why, err := s.recordApproveRefused(ctx, t.ID, t.User, d, user)
	return why == "" && err == nil, err
}

// consistent reports whether the head of return task t agrees with the
// business file (reconcile), as every answer to it is checked first; a
// head that cannot be decoded is left to the answer to report. Errors:
// storage errors.
func (s *Service) consistent(ctx context.Context, t runs.TaskRecord) (bool, error) {
	snap, err := headOrNil(s.cmd.graph.State(ctx, t.ID))
	var de *flow.StateDecodeError
	if errors.As(err, &de) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("list: %w", err)
	}
	err = s.cmd.reconcile(ctx, t.ID, snap)
	switch {
	case errors.Is(err, ErrInconsistent):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("list: %w", err)
	}
	return true, nil
}
