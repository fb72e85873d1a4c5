package business

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"assistant/internal/sqlstore"
)

// Application is a submitted return request.
type Application struct {
	ID           string    `json:"application_id"`
	DraftID      string    `json:"draft_id"`
	OrderID      string    `json:"order_id"`
	User         string    `json:"user"`
	ReviewStatus string    `json:"review_status"`
	CreatedAt    time.Time `json:"created_at"` // UTC
}

// Submit submits draft draftID for user at now, in one transaction; see
// SubmitTx for the rules and errors.
func (s *Store) Submit(ctx context.Context, draftID, user string, now time.Time, checks ...SubmitCheck) (a Application, reused bool, err error) {
	// Durable at commit: the checkpoint written after submit names the
	// application, and no power loss may keep that and lose the application.
	var txErr error
	err = s.h.Durable(ctx, func(tx sqlstore.Querier) error {
		a, reused, txErr = s.SubmitTx(ctx, tx, draftID, user, now, checks...)
		var ue *UncountedError
		if errors.As(txErr, &ue) {
			// Refused, and the approvals that no longer count are marked
			// so in the trail, in this commit.
			if err := s.markUncounted(ctx, tx, ue); err != nil {
				txErr = err
				return err
			}
			return nil
		}
		if txErr == nil && reused {
			return sqlstore.ErrNothingWritten
		}
		return txErr
	})
	switch {
	case txErr != nil:
		return Application{}, false, txErr
	case err != nil:
		return Application{}, false, fmt.Errorf("submit draft %s: %w", draftID, err)
	}
	return a, reused, nil
}

// SubmitTx submits draft draftID for user at now inside the caller's
// transaction tx, which the caller commits (docs/design.md "The submit node"):
//
//   - an application for the draft already exists: it is returned with
//     reused=true, even if the draft has expired since (the draft id is the
//     idempotency key, applications.draft_id UNIQUE);
//   - else the draft must exist and belong to user (ErrNotFound otherwise,
//     also when an existing application belongs to another user) and be
//     the task's current version (ErrConflict for a superseded one);
//   - else every one of checks, the caller's rules judged again in tx
//     (SubmitCheck: the run still holds the task, ApprovalsCount: the
//     approvals still count), must pass: its error otherwise, no
//     application written (Submit and SubmitDecided then mark the
//     approvals of an *UncountedError in the trail, in their commit).
//     They come before the two rules below, so that a committed stop
//     wins over an expiry or an order that changed;
//   - else now must be before expires_at (ErrDraftExpired otherwise,
//     nothing written);
//   - else the draft's order must still be eligible at now (Eligibility:
//     delivered, within its return window, not final sale, no pending
//     application): *IneligibleError otherwise (matching ErrIneligible,
//     and ErrOpenApplication for a pending application), nothing written;
//   - else an application with review_status ReviewPending is inserted.
//
// tx should come from s.Handle().Begin (on SQLite, s.DB() will do): it
// takes the write lock first, so concurrent submitters of one draft
// (goroutines or processes) queue and the later ones see the first one's
// application.
func (s *Store) SubmitTx(ctx context.Context, tx sqlstore.Querier, draftID, user string, now time.Time, checks ...SubmitCheck) (Application, bool, error) {
	a, reused, d, err := s.submitCheck(ctx, tx, draftID, user, now, checks)
	if err != nil || reused {
		return a, reused, err
	}
	a, err = s.insertApplication(ctx, tx, d, now)
	if s.h.IsUniqueViolation(err) {
		// Only reachable from a caller's DEFERRED transaction that read before
		// another one committed; the caller retries in a new transaction and
		// then gets the existing application.
		return Application{}, false, fmt.Errorf("submit draft %s: %w", draftID, ErrConflict)
	}
	if err != nil {
		return Application{}, false, fmt.Errorf("submit draft %s: %w", draftID, err)
	}
	return a, false, nil
}

// SubmitCheck is a rule a submit's caller has the submit's transaction
// judge again, on q, after the draft's own checks and before the
// application is written: nil lets the submit go on; an error refuses it,
// is returned by the submit as it is, and nothing is written. It runs under
// the write lock (SQLite's file lock, PostgreSQL's write advisory lock), so
// what it reads stays true until the commit.
type SubmitCheck func(ctx context.Context, q sqlstore.Querier) error

// submitCheck is SubmitTx's reads, which write nothing: the draft's
// application when it has one (reused true), or the draft to submit, or
// SubmitTx's refusals and errors, checks' among them.
func (s *Store) submitCheck(ctx context.Context, tx sqlstore.Querier, draftID, user string, now time.Time, checks []SubmitCheck) (a Application, reused bool, d Draft, err error) {
	a, err = s.applicationOfDraft(ctx, tx, draftID)
	switch {
	case err == nil:
		if a.User != user {
			return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: %w", draftID, ErrNotFound)
		}
		return a, true, Draft{}, nil
	case !errors.Is(err, ErrNotFound):
		return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: %w", draftID, err)
	}

	d, ok := s.rows.draft(draftID)
	if !ok {
		if d, err = scanDraft(tx.QueryRowContext(ctx, s.q.draft, draftID)); err != nil {
			return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: %w", draftID, err)
		}
	}
	if d.User != user {
		return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: %w", draftID, ErrNotFound)
	}
	if d.Superseded {
		return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: version %d was superseded by a newer version: %w", draftID, d.Version, ErrConflict)
	}
	// The caller's checks come before the draft's own expiry and the
	// order's eligibility: a stop committed first (the run no longer
	// holds the task) refuses the submit before any refusal that would end
	// the run, so a stopped run changes no status again.
	for _, check := range checks {
		if err := check(ctx, tx); err != nil {
			return Application{}, false, Draft{}, err
		}
	}
	if !now.Before(d.ExpiresAt) {
		return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: expired at %s: %w",
			draftID, d.ExpiresAt.Format(time.RFC3339), ErrDraftExpired)
	}

	// The order is checked again, in this transaction: the draft may have
	// waited for approval long enough for the return window to close, and
	// one open application per order means a second task started for the
	// same order before the first submitted must not make a second one.
	o, err := s.orderIn(ctx, tx, d.OrderID, d.User)
	if err != nil {
		return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: order %s: %w", draftID, d.OrderID, err)
	}
	code, err := s.eligibilityTx(ctx, tx, o, now)
	if err != nil {
		return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: %w", draftID, err)
	}
	if code != "" {
		return Application{}, false, Draft{}, fmt.Errorf("submit draft %s: %w", draftID, &IneligibleError{Order: d.OrderID, Code: code})
	}
	return Application{}, false, d, nil
}

// insertApplication inserts the pending application of draft d, made at
// now, in tx, in one statement; the error is the database's, unwrapped.
func (s *Store) insertApplication(ctx context.Context, tx sqlstore.Querier, d Draft, now time.Time) (Application, error) {
	id, err := newID("app_")
	if err != nil {
		return Application{}, err
	}
	a := Application{
		ID:           id,
		DraftID:      d.ID,
		OrderID:      d.OrderID,
		User:         d.User,
		ReviewStatus: ReviewPending,
		CreatedAt:    storedTime(now),
	}
	s.orders.forgetOpen(a.OrderID, a.User) // PreloadOrders' is no longer true
	s.rows.forget(d.TaskID)                // nor PreloadTasks'
	_, err = tx.ExecContext(ctx, s.q.insertApplication,
		a.ID, a.DraftID, a.OrderID, a.User, a.ReviewStatus, formatTime(a.CreatedAt))
	if err != nil {
		return Application{}, err
	}
	return a, nil
}

// applicationOfDraft reads the application of draft draftID in tx,
// answered from PreloadTasks' rows when the draft is among them; none is
// ErrNotFound.
func (s *Store) applicationOfDraft(ctx context.Context, tx sqlstore.Querier, draftID string) (Application, error) {
	if a, known, found := s.rows.application(draftID); known {
		if !found {
			return Application{}, ErrNotFound
		}
		return a, nil
	}
	return scanApplication(tx.QueryRowContext(ctx, s.q.applicationOfDraft, draftID))
}

// ApplicationByDraft returns the application of draft draftID, or
// ErrNotFound. It does not check the user; the caller compares
// Application.User.
func (s *Store) ApplicationByDraft(ctx context.Context, draftID string) (Application, error) {
	a, err := scanApplication(s.h.Q().QueryRowContext(ctx, s.q.applicationOfDraft, draftID))
	if err != nil {
		return Application{}, fmt.Errorf("application of draft %s: %w", draftID, err)
	}
	return a, nil
}

// ApplicationByTask returns the application made from the draft of task
// taskID, or ErrNotFound when the task has no draft or its draft no
// application. It reads two unique indexes (drafts.task_id,
// applications.draft_id). It does not check the user; the caller compares
// Application.User.
func (s *Store) ApplicationByTask(ctx context.Context, taskID string) (Application, error) {
	if a, known, found := s.rows.applicationOfTask(taskID); known {
		if !found {
			return Application{}, fmt.Errorf("application of task %s: %w", taskID, ErrNotFound)
		}
		return a, nil
	}
	a, err := scanApplication(s.h.Q().QueryRowContext(ctx, s.q.applicationOfTask, taskID))
	if err != nil {
		return Application{}, fmt.Errorf("application of task %s: %w", taskID, err)
	}
	return a, nil
}

// SubmittedError reports a task that has an application already, found
// by the check NotSubmitted. It matches ErrConflict.
type SubmittedError struct {
	Task        string
	Application Application
}

// Error implements the error interface for *SubmittedError.
func (e *SubmittedError) Error() string {
	return fmt.Sprintf("task %s was submitted: application %s", e.Task, e.Application.ID)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *SubmittedError) Is(target error) bool { return target == ErrConflict }

// NotSubmitted returns the check that task taskID has no application yet,
// read in the caller's transaction q: an operator stop judges it in the
// transaction that writes the stop, so that a submit committed before the
// stop makes the stop too late, and no stop is written over it
// (docs/recovery.md "Operator stop"). Errors: *SubmittedError naming the
// application, or the database's.
func (s *Store) NotSubmitted(taskID string) func(ctx context.Context, q sqlstore.Querier) error {
	return func(ctx context.Context, q sqlstore.Querier) error {
		a, err := scanApplication(q.QueryRowContext(ctx, s.q.applicationOfTask, taskID))
		switch {
		case errors.Is(err, ErrNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("application of task %s: %w", taskID, err)
		}
		return &SubmittedError{Task: taskID, Application: a}
	}
}

// OrderApplication is an application with the task and the version of
// the draft it was made from.
type OrderApplication struct {
	Application
	TaskID       string `json:"task"`
	DraftVersion int    `json:"version"`
}

// OrderApplications returns every application of user's order orderID,
// oldest first, each with its draft's task and version; none is an empty
// slice. It does not check that the order exists (Order does).
func (s *Store) OrderApplications(ctx context.Context, orderID, user string) ([]OrderApplication, error) {
	out := []OrderApplication{}
	var task string
	var version int
	err := scanEach(ctx, s, s.q.orderApplications, []any{user, orderID},
		func(sc scanner) (Application, error) { return scanApplication(prefixed{prefixed{sc, &task}, &version}) },
		func(a Application) {
			out = append(out, OrderApplication{Application: a, TaskID: task, DraftVersion: version})
		})
	if err != nil {
		return nil, fmt.Errorf("applications of order %s: %w", orderID, err)
	}
	return out, nil
}

// Application returns the application applicationID, or ErrNotFound. It
// does not check the user; the caller compares Application.User.
func (s *Store) Application(ctx context.Context, applicationID string) (Application, error) {
	a, err := scanApplication(s.h.Q().QueryRowContext(ctx, s.q.application, applicationID))
	if err != nil {
		return Application{}, fmt.Errorf("application %s: %w", applicationID, err)
	}
	return a, nil
}

// CountApplications returns the number of applications of draft draftID, or
// of all drafts when draftID is "". With the UNIQUE draft_id it is 0 or 1 for
// one draft; tests and fault scripts use it to prove "never twice".
func (s *Store) CountApplications(ctx context.Context, draftID string) (int, error) {
	var n int
	var err error
	if draftID == "" {
		err = s.h.Q().QueryRowContext(ctx, s.q.countApplications).Scan(&n)
	} else {
		err = s.h.Q().QueryRowContext(ctx, s.q.countDraftApplications, draftID).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count applications: %w", err)
	}
	return n, nil
}

// scanApplication reads one row of an application's columns (queries);
// no row is ErrNotFound.
func scanApplication(sc scanner) (Application, error) {
	var (
		a       Application
		created string
	)
	err := sc.Scan(&a.ID, &a.DraftID, &a.OrderID, &a.User, &a.ReviewStatus, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Application{}, ErrNotFound
	}
	if err != nil {
		return Application{}, err
	}
	if a.CreatedAt, err = parseTime(created); err != nil {
		return Application{}, err
	}
	return a, nil
}

// HeldRows is what the business file holds of a draft and an application
// that a checkpoint names (Store.Held): who each belongs to, or nothing.
type HeldRows struct {
	// DraftFound, with the draft's task and user.
	DraftFound           bool
	DraftTask, DraftUser string
	// ApplicationFound, with the application's draft and user.
	ApplicationFound                  bool
	ApplicationDraft, ApplicationUser string
}

// Held reads, in one statement by primary key, the draft draftID and the
// application applicationID ("" for none asked): the check a checkpoint
// that names them must pass before it is used (flow/returns reconcile).
// The statement is the least one that answers: a checkpoint waiting for
// approval names only its draft.
func (s *Store) Held(ctx context.Context, draftID, applicationID string) (HeldRows, error) {
	var h HeldRows
	var err error
	switch {
	case applicationID == "":
		if d, ok := s.rows.draft(draftID); ok {
			return HeldRows{DraftFound: true, DraftTask: d.TaskID, DraftUser: d.User}, nil
		}
		err = s.h.Q().QueryRowContext(ctx, s.q.heldDraft, draftID).Scan(&h.DraftTask, &h.DraftUser)
		h.DraftFound = err == nil
	case draftID == "":
		err = s.h.Q().QueryRowContext(ctx, s.q.heldApplication, applicationID).Scan(&h.ApplicationDraft, &h.ApplicationUser)
		h.ApplicationFound = err == nil
	default:
		var appDraft, appUser sql.NullString
		err = s.h.Q().QueryRowContext(ctx, s.q.heldDraftAndApplication, draftID, applicationID).
			Scan(&h.DraftTask, &h.DraftUser, &appDraft, &appUser)
		h.DraftFound = err == nil
		h.ApplicationFound, h.ApplicationDraft, h.ApplicationUser = appDraft.Valid, appDraft.String, appUser.String
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return h, fmt.Errorf("draft %s, application %s: %w", draftID, applicationID, err)
	}
	return h, nil
}
