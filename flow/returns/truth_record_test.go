package returns_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow/returns"
)

// TestRecordedEndIsFinal: a head that still asks its question while the
// business file records the task's end (a record ended, its application, a
// cancel in the trail) is read as ended that way; no answer changes the
// status or submits anything. Each case writes the business file as a
// newer one beside older checkpoints would hold it.
func TestRecordedEndIsFinal(t *testing.T) {
	tests := []struct {
		name string
		// record writes the end into the business file of task "t", which
		// waits for approval of draft.
		record func(t *testing.T, svc *returns.Service, b *bundle, draft string)
		answer returns.ResumeOptions
		// wantErr is the answer's error (nil: it reports the end).
		wantErr error
		status  string
		stage   string
	}{
		{"RecordCancelledRefusesApprove", setRecord(returns.StatusCancelled, returns.StageCancelled),
			approve("t"), returns.ErrConflict, returns.StatusCancelled, returns.StageCancelled},
		{"RecordCancelledRefusesEdit", setRecord(returns.StatusCancelled, returns.StageCancelled),
			edit("t", "other"), returns.ErrConflict, returns.StatusCancelled, returns.StageCancelled},
		{"RecordFailedRefusesEdit", setRecord(returns.StatusFailed, returns.StageFailed),
			edit("t", "other"), returns.ErrConflict, returns.StatusFailed, returns.StageFailed},
		{"RecordCancelledTakesCancel", setRecord(returns.StatusCancelled, returns.StageCancelled),
			cancel("t"), nil, returns.StatusCancelled, returns.StageCancelled},
		{"ApplicationEndsEditSubmitted", submitDraft,
			edit("t", "other"), nil, returns.StatusDone, returns.StageSubmitted},
		{"ApplicationEndsReviseSubmitted", submitDraft,
			returns.ResumeOptions{Task: "t", Action: returns.ActionRevise, Comment: "bigger"}, nil, returns.StatusDone, returns.StageSubmitted},
		{"TrailCancelRefusesApprove", trailCancel,
			approve("t"), returns.ErrConflict, returns.StatusCancelled, returns.StageCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := setup(t)
			v := mustStart(t, svc, "t", "A3003", "size")
			tt.record(t, svc, b, v.Draft.DraftID)

			shown, err := svc.Show(b.ctx, "t", user)
			if err != nil {
				t.Fatal(err)
			}
			wantView(t, shown, tt.status, tt.stage)
			if len(shown.Interrupts) != 0 || shown.Kind != nil {
				t.Errorf("show: interrupts %v, kind %v; want none", shown.Interrupts, shown.Kind)
			}

			o := tt.answer
			o.User = user
			got, err := svc.Resume(b.ctx, o)
			switch {
			case tt.wantErr != nil:
				wantErr(t, err, tt.wantErr)
				if !strings.Contains(err.Error(), "ended as "+tt.status) {
					t.Errorf("error %q does not say the task ended as %s", err, tt.status)
				}
			case err != nil:
				t.Fatalf("resume: %v", err)
			default:
				wantView(t, got, tt.status, tt.stage)
			}
			// A plain resume reports the end and sets a record that lags
			// behind it right (the trail's cancel: the record waits).
			wantView(t, mustResume(t, svc, returns.ResumeOptions{Task: "t"}), tt.status, tt.stage)
			wantRecord(t, svc, "t", tt.status, tt.stage)
			apps, _ := svc.Desk().CountApplications(b.ctx, v.Draft.DraftID)
			if want := map[bool]int{true: 1, false: 0}[tt.status == returns.StatusDone]; apps != want {
				t.Errorf("%d applications, want %d", apps, want)
			}
			if vs, _ := svc.Desk().DraftVersions(b.ctx, "t"); len(vs) != 1 {
				t.Errorf("%d draft versions, want 1 (no new draft for an ended task)", len(vs))
			}
		})
	}
}

// TestRecordedEndWithoutRun: a checkpoint store older than the task (no run
// of it) beside a record that ended: show and start report the end, resume
// runs nothing, an answer is refused.
func TestRecordedEndWithoutRun(t *testing.T) {
	svc, b := setup(t)
	mustStart(t, svc, "t", "A3003", "size")
	mustResume(t, svc, cancel("t"))
	svc.Close()
	older, _ := setupWith(t, b.dir, checkpoints.NewMemory())

	shown, err := older.Show(b.ctx, "t", user)
	if err != nil {
		t.Fatal(err)
	}
	wantView(t, shown, returns.StatusCancelled, returns.StageCancelled)
	wantView(t, mustStart(t, older, "t", "A3003", "size"), returns.StatusCancelled, returns.StageCancelled)
	wantView(t, mustResume(t, older, returns.ResumeOptions{Task: "t"}), returns.StatusCancelled, returns.StageCancelled)
	_, err = older.Resume(b.ctx, approve("t"))
	wantErr(t, err, returns.ErrConflict)
	wantRecord(t, older, "t", returns.StatusCancelled, returns.StageCancelled)
	if _, err := older.Desk().ApplicationByTask(b.ctx, "t"); !errors.Is(err, business.ErrNotFound) {
		t.Errorf("application of t: %v, want none", err)
	}
}

func edit(task, reason string) returns.ResumeOptions {
	return returns.ResumeOptions{Task: task, Action: returns.ActionEdit, Reason: reason, HasReason: true}
}

// setRecord returns a record step that writes status and stage into task
// t's record, as the command that ended it released it.
func setRecord(status, stage string) func(*testing.T, *returns.Service, *bundle, string) {
	return func(t *testing.T, svc *returns.Service, b *bundle, _ string) {
		t.Helper()
		if _, err := svc.Desk().DB().ExecContext(b.ctx, `UPDATE tasks SET status = ?, stage = ? WHERE task_id = 't'`, status, stage); err != nil {
			t.Fatal(err)
		}
	}
}

// submitDraft submits the draft in the business file only, as an approve
// whose checkpoints and release were lost.
func submitDraft(t *testing.T, svc *returns.Service, b *bundle, draft string) {
	t.Helper()
	if _, _, err := svc.Desk().Submit(b.ctx, draft, user, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
}

// trailCancel records a cancel of the draft in the trail only, as a
// cancel whose checkpoint and release were lost.
func trailCancel(t *testing.T, svc *returns.Service, b *bundle, draft string) {
	t.Helper()
	d := business.Decision{ID: "dec_lost", TaskID: "t", By: user, Action: returns.ActionCancel, DraftID: draft, Version: 1, At: b.clock.Now().Add(time.Second)}
	if err := svc.Desk().RecordDecision(b.ctx, d); err != nil {
		t.Fatal(err)
	}
}
