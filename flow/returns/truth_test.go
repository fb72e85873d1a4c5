package returns_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow/returns"
)

// TestPointOfActionReadsTheBusinessFile: before cancel and submit, and when
// a lookup refuses an order, the flow looks the task's application up in
// the business file, which is the truth for side effects.
func TestPointOfActionReadsTheBusinessFile(t *testing.T) {
	t.Run("CancelAfterLostSubmitIsSubmitted", func(t *testing.T) {
		// The application committed, its checkpoint was lost (power loss):
		// the head still asks for approval.
		svc, b := setup(t)
		v := mustStart(t, svc, "t", "A3003", "size")
		a, _, err := svc.Desk().Submit(b.ctx, v.Draft.DraftID, user, b.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		got := mustResume(t, svc, cancel("t"))
		wantView(t, got, returns.StatusDone, returns.StageSubmitted)
		if got.Result == nil || got.Result.ApplicationID != a.ID || !got.Result.Reused {
			t.Fatalf("result %+v, want %s reused", got.Result, a.ID)
		}
		wantRecord(t, svc, "t", returns.StatusDone, returns.StageSubmitted)
	})

	t.Run("CancelWithoutApplicationIsCancelled", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "t", "A3003", "size")
		wantView(t, mustResume(t, svc, cancel("t")), returns.StatusCancelled, returns.StageCancelled)
	})

	t.Run("StartAgainWithLostRunIsSubmitted", func(t *testing.T) {
		// An older checkpoints.sqlite without the task's run: start runs
		// it again, and its own application must not fail it with
		// open_application.
		svc, b := setup(t)
		mustStart(t, svc, "t", "A3003", "size")
		done := mustResume(t, svc, approve("t"))
		svc.Close()
		older, _ := setupWith(t, b.dir, checkpoints.NewMemory())
		got := mustStart(t, older, "t", "A3003", "size")
		wantView(t, got, returns.StatusDone, returns.StageSubmitted)
		if got.Result == nil || got.Result.ApplicationID != done.Result.ApplicationID || !got.Result.Reused {
			t.Fatalf("result %+v, want %s reused", got.Result, done.Result.ApplicationID)
		}
		if got.Draft == nil || got.Draft.DraftID != done.Draft.DraftID {
			t.Fatalf("draft %+v, want %s", got.Draft, done.Draft.DraftID)
		}
		if n, _ := older.Desk().CountApplications(b.ctx, done.Draft.DraftID); n != 1 {
			t.Fatalf("applications of the draft = %d, want 1", n)
		}
	})
}

// TestSubmitChecksEligibilityAgain: facts that change while a draft waits
// for approval end the request failed with the business code.
func TestSubmitChecksEligibilityAgain(t *testing.T) {
	tests := []struct {
		name    string
		wait    time.Duration
		want    string // stage
		code    string
		message string
	}{
		{"WindowStillOpen", 30 * time.Minute, returns.StageSubmitted, "", ""},
		{"WindowClosedWhileWaiting", 2 * time.Hour, returns.StageFailed, business.ReasonReturnWindowClosed, "window closed while the draft waited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := setup(t)
			// Delivered one hour short of the 30-day window.
			delivered := b.clock.Now().Add(-business.ReturnWindow + time.Hour).Format(time.RFC3339)
			csv := fmt.Sprintf("order_id,user,item,delivered_at,final_sale\nW1,%s,Lamp,%s,false\n", user, delivered)
			if _, err := svc.ImportOrders(b.ctx, strings.NewReader(csv)); err != nil {
				t.Fatal(err)
			}
			v, err := svc.Start(b.ctx, returns.StartOptions{Task: "t", User: user, Order: "W1", Reason: "size", TTL: 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
			b.clock.Advance(tt.wait)
			got := mustResume(t, svc, approve("t"))
			if got.Stage != tt.want {
				t.Fatalf("stage %s, want %s (%+v)", got.Stage, tt.want, got.Error)
			}
			n, _ := svc.Desk().CountApplications(b.ctx, v.Draft.DraftID)
			if tt.code == "" {
				if n != 1 {
					t.Fatalf("applications = %d, want 1", n)
				}
				return
			}
			if got.Error == nil || got.Error.Code != tt.code || !strings.Contains(got.Error.Message, tt.message) {
				t.Fatalf("error %+v, want %s mentioning %q", got.Error, tt.code, tt.message)
			}
			if n != 0 {
				t.Fatalf("applications = %d, want 0", n)
			}
			wantRecord(t, svc, "t", returns.StatusFailed, returns.StageFailed)
		})
	}
}

// TestCheckpointTheBusinessFileContradicts: a head that names a draft or an
// application the business file does not hold is never shown, answered or
// run from; the error names the task and both files, and nothing is
// written.
func TestCheckpointTheBusinessFileContradicts(t *testing.T) {
	tests := []struct {
		name string
		// make leaves task t in the state under test, as an older
		// business.sqlite (or a lost -wal) would.
		make func(t *testing.T, svc *returns.Service, b *bundle)
		// says is in the error: what business.sqlite says.
		says string
	}{
		{"SubmittedApplicationMissing", func(t *testing.T, svc *returns.Service, b *bundle) {
			mustStart(t, svc, "t", "A3003", "size")
			mustResume(t, svc, approve("t"))
			execDesk(t, svc, `DELETE FROM applications WHERE draft_id IN (SELECT draft_id FROM drafts WHERE task_id = 't')`)
		}, "has no application app_"},
		{"DraftMissing", func(t *testing.T, svc *returns.Service, b *bundle) {
			mustStart(t, svc, "t", "A3003", "size")
			execDesk(t, svc, `DELETE FROM drafts WHERE task_id = 't'`)
		}, "has no draft d_"},
		{"CancelledWithApplication", func(t *testing.T, svc *returns.Service, b *bundle) {
			v := mustStart(t, svc, "t", "A3003", "size")
			mustResume(t, svc, cancel("t"))
			if _, _, err := svc.Desk().Submit(b.ctx, v.Draft.DraftID, user, b.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}, "holds its application app_"},
		{"RecordMissing", func(t *testing.T, svc *returns.Service, b *bundle) {
			mustStart(t, svc, "t", "A3003", "size")
			execDesk(t, svc, `DELETE FROM steps WHERE task_id = 't'`, `DELETE FROM tasks WHERE task_id = 't'`)
		}, "has no record of the task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := setupSQLite(t)
			tt.make(t, svc, b)
			before := deskDump(t, svc)
			ops := map[string]func() error{
				"show": func() error { _, err := svc.Show(b.ctx, "t", user); return err },
				"approve": func() error {
					_, err := svc.Resume(b.ctx, approve("t"))
					return err
				},
				"cancel": func() error {
					_, err := svc.Resume(b.ctx, cancel("t"))
					return err
				},
				"continue": func() error {
					_, err := svc.Resume(b.ctx, returns.ResumeOptions{Task: "t", User: user})
					return err
				},
				"start": func() error {
					_, err := svc.Start(b.ctx, returns.StartOptions{Task: "t", User: user, Order: "A3003", Reason: "size"})
					return err
				},
			}
			for name, op := range ops {
				err := op()
				wantErr(t, err, returns.ErrInconsistent)
				for _, want := range []string{"task t is inconsistent", tt.says, "nothing was written"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %q lacks %q", name, err, want)
					}
				}
				// What to do: verify lists every such task; a backup,
				// restored, sets it right.
				if h, _ := returns.HintOf(err); h.Do != returns.DoVerify || h.Then == nil || h.Then.Do != returns.DoBackup {
					t.Errorf("%s: hint %+v, want verify, then backup", name, h)
				}
				if after := deskDump(t, svc); after != before {
					t.Fatalf("%s wrote to business.sqlite:\nbefore %s\nafter  %s", name, before, after)
				}
			}
			// Another user's view of the task is unchanged: unknown.
			if _, err := svc.Show(b.ctx, "t", otherUser); !errors.Is(err, returns.ErrNotFound) {
				t.Errorf("show as %s: %v, want ErrNotFound", otherUser, err)
			}
			if tt.name == "RecordMissing" {
				return // orders list reads the records; verify finds this one
			}
			// orders list does not call the order returnable.
			lines, err := svc.ListOrders(b.ctx, user)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range lines {
				if l.ID == "A3003" && l.Returnable == "" {
					t.Errorf("orders list: A3003 returnable")
				}
			}
		})
	}
}

// execDesk runs statements on the business file, as an older copy of it
// would lack rows.
func execDesk(tb testing.TB, svc *returns.Service, stmts ...string) {
	tb.Helper()
	for _, q := range stmts {
		if _, err := svc.Desk().DB().Exec(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}

// deskDump returns the task records, drafts and applications of the
// business file as text, to show that nothing was written.
func deskDump(tb testing.TB, svc *returns.Service) string {
	tb.Helper()
	var out strings.Builder
	for _, q := range []string{
		`SELECT task_id || status || stage || updated_at || coalesce(lease_owner, '') FROM tasks ORDER BY task_id`,
		`SELECT draft_id || task_id FROM drafts ORDER BY draft_id`,
		`SELECT application_id || draft_id FROM applications ORDER BY application_id`,
		`SELECT count(*) FROM steps`,
	} {
		rows, err := svc.Desk().DB().Query(q)
		if err != nil {
			tb.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				tb.Fatal(err)
			}
			out.WriteString(s + ";")
		}
		rows.Close()
	}
	return out.String()
}
