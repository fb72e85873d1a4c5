package returns_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"assistant/business"
	"assistant/flow/returns"
)

func TestStart(t *testing.T) {
	t.Run("WithReasonWaitsAtApproval", func(t *testing.T) {
		svc, b := setup(t)
		v := mustStart(t, svc, "r1", "A3003", "  too small  ")
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		if v.Kind == nil || *v.Kind != returns.KindApproval || len(v.Interrupts) != 1 || v.Interrupts[0].Node != returns.NodeReview {
			t.Fatalf("kind %v, interrupts %+v; want one approval question at review", v.Kind, v.Interrupts)
		}
		if v.Draft == nil || v.Draft.Reason != "too small" || !v.Draft.ExpiresAt.Equal(b.clock.Now().Add(business.DefaultDraftTTL)) {
			t.Fatalf("draft %+v; want reason trimmed, expiring after the default TTL", v.Draft)
		}
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("WithoutReasonAsksForOne", func(t *testing.T) {
		svc, _ := setup(t)
		v := mustStart(t, svc, "r1", "A3003", "")
		wantView(t, v, returns.StatusWaiting, returns.StageNeedReason)
		if *v.Kind != returns.KindNeedReason || v.Draft != nil || v.Next[0] != returns.NodeAskReason {
			t.Fatalf("kind %s, draft %+v, next %v; want a reason asked before any draft", *v.Kind, v.Draft, v.Next)
		}
	})

	t.Run("DraftTTLIsKept", func(t *testing.T) {
		svc, b := setup(t)
		v, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3001", Reason: "size", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if !v.Draft.ExpiresAt.Equal(b.clock.Now().Add(time.Minute)) {
			t.Fatalf("draft expires at %s, want a minute from now", v.Draft.ExpiresAt)
		}
	})

	t.Run("InvalidInputWritesNothing", func(t *testing.T) {
		for name, o := range map[string]returns.StartOptions{
			"EmptyTask":        {Task: "", User: user, Order: "A3001"},
			"TaskWithSpace":    {Task: "r 1", User: user, Order: "A3001"},
			"OrderWithSlash":   {Task: "r1", User: user, Order: "A/3001"},
			"BlankUser":        {Task: "r1", User: "  ", Order: "A3001"},
			"ControlInReason":  {Task: "r1", User: user, Order: "A3001", Reason: "size\x07"},
			"ReasonTooLong":    {Task: "r1", User: user, Order: "A3001", Reason: strings.Repeat("x", returns.MaxReasonRunes+1)},
			"DraftTTLTooShort": {Task: "r1", User: user, Order: "A3001", TTL: time.Millisecond},
			"DraftTTLTooLong":  {Task: "r1", User: user, Order: "A3001", TTL: returns.MaxDraftTTL + time.Second},
		} {
			t.Run(name, func(t *testing.T) {
				svc, b := setup(t)
				_, err := svc.Start(b.ctx, o)
				wantErr(t, err, returns.ErrInvalid)
				wantNoTask(t, svc, b, "r1")
			})
		}
	})

	t.Run("UnknownOrderIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		_, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "Z9999", Reason: "size"})
		wantErr(t, err, returns.ErrNotFound)
		wantNoTask(t, svc, b, "r1")
	})

	t.Run("OtherUsersOrderIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		_, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "B4001", Reason: "size"})
		wantErr(t, err, returns.ErrNotFound)
		wantNoTask(t, svc, b, "r1")
	})

	t.Run("SameInputAgainReturnsSameView", func(t *testing.T) {
		svc, _ := setup(t)
		first := mustStart(t, svc, "r1", "A3003", "size")
		again := mustStart(t, svc, "r1", "A3003", " size ")
		if again.Draft.DraftID != first.Draft.DraftID || again.Interrupts[0].ID != first.Interrupts[0].ID || again.Status != first.Status {
			t.Fatalf("again %+v, want the first view %+v", again, first)
		}
	})

	t.Run("SameInputAfterItEndedReturnsItsEnd", func(t *testing.T) {
		svc, _ := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		done := mustResume(t, svc, approve("r1"))
		again := mustStart(t, svc, "r1", "A3003", "size")
		wantView(t, again, returns.StatusDone, returns.StageSubmitted)
		if again.Result.ApplicationID != done.Result.ApplicationID {
			t.Fatalf("application %s, want %s", again.Result.ApplicationID, done.Result.ApplicationID)
		}
	})

	t.Run("OtherInputIsConflict", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "colour"})
		wantErr(t, err, returns.ErrConflict)
		_, err = svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3001", Reason: "size"})
		wantErr(t, err, returns.ErrConflict)
	})

	t.Run("OtherDraftTTLIsConflict", func(t *testing.T) {
		for name, tc := range map[string]struct{ first, again time.Duration }{
			"DefaultThenMinute": {0, time.Minute},
			"MinuteThenDefault": {time.Minute, 0},
			"MinuteThenHour":    {time.Minute, time.Hour},
		} {
			t.Run(name, func(t *testing.T) {
				svc, b := setup(t)
				o := returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", TTL: tc.first}
				first, err := svc.Start(b.ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				o.TTL = tc.again
				_, err = svc.Start(b.ctx, o)
				wantErr(t, err, returns.ErrConflict)
				o.TTL = tc.first
				again, err := svc.Start(b.ctx, o)
				if err != nil || !again.Draft.ExpiresAt.Equal(first.Draft.ExpiresAt) {
					t.Fatalf("same input again: %v, %+v; want the first window %s", err, again, first.Draft.ExpiresAt)
				}
			})
		}
	})

	t.Run("DefaultDraftTTLGivenOrNotIsTheSameInput", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", TTL: business.DefaultDraftTTL})
		if err != nil {
			t.Fatalf("start with --draft-ttl equal to the default: %v", err)
		}
	})

	t.Run("SubSecondDraftTTLIsRefused", func(t *testing.T) {
		for _, ttl := range []time.Duration{1999 * time.Millisecond, time.Minute + time.Nanosecond, 1500 * time.Millisecond} {
			svc, b := setup(t)
			_, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", TTL: ttl})
			wantErr(t, err, returns.ErrInvalid)
			wantNoTask(t, svc, b, "r1")
		}
		if err := returns.ValidDraftTTL(2 * time.Second); err != nil {
			t.Fatalf("2s: %v", err)
		}
	})

	t.Run("OldRecordWithoutTTLInFingerprintStillMatches", func(t *testing.T) {
		// A task recorded before the validity joined the input hashed
		// user, order and reason only, whatever its --draft-ttl; its
		// validity is in the task record.
		for name, ttl := range map[string]time.Duration{"Default": business.DefaultDraftTTL, "Minute": time.Minute} {
			t.Run(name, func(t *testing.T) {
				svc, b := setup(t)
				o := returns.StartOptions{Task: "r1", User: user, Order: "A3003", Reason: "size", TTL: ttl}
				if _, err := svc.Start(b.ctx, o); err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256([]byte(user + "\x00A3003\x00size"))
				if _, err := svc.Desk().DB().ExecContext(b.ctx, `UPDATE tasks SET fingerprint = ? WHERE task_id = 'r1'`, hex.EncodeToString(sum[:16])); err != nil {
					t.Fatal(err)
				}
				if _, err := svc.Start(b.ctx, o); err != nil {
					t.Fatalf("same input as the old record: %v", err)
				}
				o.TTL = 2 * time.Hour
				_, err := svc.Start(b.ctx, o)
				wantErr(t, err, returns.ErrConflict)
			})
		}
	})

	t.Run("OtherUsersTaskIDIsConflict", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Start(b.ctx, returns.StartOptions{Task: "r1", User: otherUser, Order: "B4001", Reason: "size"})
		wantErr(t, err, returns.ErrConflict)
	})

	t.Run("IneligibleOrderFailsWithItsCode", func(t *testing.T) {
		for order, code := range map[string]string{
			"A3005": business.ReasonReturnWindowClosed,
			"A3010": business.ReasonReturnWindowClosed,
			"A3006": business.ReasonNotDelivered,
			"A3007": business.ReasonFinalSale,
			"A3009": business.ReasonOpenApplication,
		} {
			t.Run(order, func(t *testing.T) {
				svc, _ := setup(t)
				v := mustStart(t, svc, "r1", order, "size")
				wantView(t, v, returns.StatusFailed, returns.StageFailed)
				if v.Error == nil || v.Error.Code != code || v.Draft != nil || len(v.Interrupts) != 0 {
					t.Fatalf("error %+v, draft %+v; want %s and no draft", v.Error, v.Draft, code)
				}
				wantRecord(t, svc, "r1", returns.StatusFailed, returns.StageFailed)
			})
		}
	})

	t.Run("WindowClosesWithTheClock", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3008", "chipped") // delivered 29 days ago
		b.clock.Advance(2 * 24 * time.Hour)
		v := mustStart(t, svc, "r2", "A3008", "chipped")
		if v.Error == nil || v.Error.Code != business.ReasonReturnWindowClosed {
			t.Fatalf("error %+v, want %s", v.Error, business.ReasonReturnWindowClosed)
		}
	})

	t.Run("AgainAfterCrashBeforeFirstCheckpointRunsIt", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", "")
		v := mustStart(t, svc, "r1", "A3003", "size")
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("AgainAfterCrashMidRunContinuesIt", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodePrepare)
		v := mustStart(t, svc, "r1", "A3003", "size")
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("AgainWhileAnotherProcessRunsItShowsProgress", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.liveLease(), "r1", "A3003", "size", returns.NodePrepare)
		v := mustStart(t, svc, "r1", "A3003", "size")
		wantView(t, v, returns.StatusRunning, "")
		if v.Holder == nil || !v.Holder.Alive || v.Holder.Host != "elsewhere" {
			t.Fatalf("holder %+v, want the live process elsewhere", v.Holder)
		}
		wantRecord(t, svc, "r1", returns.StatusRunning, "")
	})

	t.Run("AgainWhenRecordLagsRepairsIt", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", returns.NodeSubmit)
		v := mustStart(t, svc, "r1", "A3003", "size")
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		wantRecord(t, svc, "r1", returns.StatusWaiting, returns.StageDraftReady)
	})
}
