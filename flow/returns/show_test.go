package returns_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
)

func TestShow(t *testing.T) {
	t.Run("WaitingTaskHasNoHolder", func(t *testing.T) {
		svc, b := setup(t)
		started := mustStart(t, svc, "r1", "A3003", "size")
		v, err := svc.Show(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
		if v.Holder != nil || v.Draft.DraftID != started.Draft.DraftID {
			t.Fatalf("holder %+v, draft %+v; want no holder and the started draft", v.Holder, v.Draft)
		}
	})

	t.Run("RunningTaskNamesItsHolder", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "dead", "A3003", "size", returns.NodePrepare)
		b.leftRunning(t, svc, b.liveLease(), "live", "A3001", "size", returns.NodePrepare)
		for task, alive := range map[string]bool{"dead": false, "live": true} {
			v, err := svc.Show(b.ctx, task, user)
			if err != nil {
				t.Fatal(err)
			}
			wantView(t, v, returns.StatusRunning, "")
			if v.Holder == nil || v.Holder.Alive != alive || len(v.Next) != 1 || v.Next[0] != returns.NodePrepare {
				t.Fatalf("%s: holder %+v, next %v; want alive %t, prepare next", task, v.Holder, v.Next, alive)
			}
		}
	})

	t.Run("TaskWithoutRunIsRunning", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", "")
		v, err := svc.Show(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusRunning, "")
		if v.Holder == nil || v.Holder.PID != deadPID || v.Holder.Alive {
			t.Fatalf("holder %+v, want the dead process", v.Holder)
		}
	})

	t.Run("OtherUsersTaskIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.Show(b.ctx, "r1", otherUser)
		wantErr(t, err, returns.ErrNotFound)
	})

	t.Run("BadTaskIDIsInvalid", func(t *testing.T) {
		svc, b := setup(t)
		_, err := svc.Show(b.ctx, "..", user)
		wantErr(t, err, returns.ErrInvalid)
	})
}

func TestList(t *testing.T) {
	t.Run("FiltersByStatus", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "waits", "A3003", "size")
		b.clock.Advance(time.Second)
		mustStart(t, svc, "done", "A3001", "size")
		mustResume(t, svc, approve("done"))
		b.clock.Advance(time.Second)
		mustStart(t, svc, "fails", "A3007", "size")
		all, err := svc.List(b.ctx, user, "")
		if err != nil || len(all) != 3 || all[0].Task != "waits" {
			t.Fatalf("list %+v (%v), want the 3 tasks oldest first", all, err)
		}
		waiting, err := svc.List(b.ctx, user, returns.StatusWaiting)
		if err != nil || len(waiting) != 1 || waiting[0].Task != "waits" || waiting[0].Stage != returns.StageDraftReady || waiting[0].Order != "A3003" {
			t.Fatalf("waiting %+v (%v), want only waits", waiting, err)
		}
		others, err := svc.List(b.ctx, otherUser, "")
		if err != nil || len(others) != 0 {
			t.Fatalf("other user's list %+v (%v), want none", others, err)
		}
	})

	t.Run("UnknownStatusIsInvalid", func(t *testing.T) {
		svc, b := setup(t)
		_, err := svc.List(b.ctx, user, "sleeping")
		wantErr(t, err, returns.ErrInvalid)
		for _, s := range append([]string{""}, returns.Statuses...) {
			if err := returns.CheckStatus(s); err != nil {
				t.Errorf("CheckStatus(%q): %v", s, err)
			}
		}
	})
}

// TestListStates: an expired draft is a state of the list
// 3), --status takes several, --batch keeps a batch's rows, --limit the
// first N.
func TestListStates(t *testing.T) {
	names := func(ts []returns.TaskSummary) []string {
		out := []string{}
		for _, s := range ts {
			out = append(out, s.Task+"="+s.Status)
		}
		return out
	}
	// fresh waits with a draft valid for an hour, old with one that
	// expires after a minute, done was approved, fails was refused.
	setupTasks := func(t *testing.T) (*returns.Service, *bundle) {
		svc, b := setup(t)
		if _, err := svc.Start(b.ctx, returns.StartOptions{Task: "old", User: user, Order: "A3003", Reason: "size", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Second)
		if _, err := svc.Start(b.ctx, returns.StartOptions{Task: "fresh", User: user, Order: "A3004", Reason: "size", TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Second)
		mustStart(t, svc, "done", "A3001", "size")
		mustResume(t, svc, approve("done"))
		b.clock.Advance(time.Second)
		mustStart(t, svc, "fails", "A3007", "size")
		return svc, b
	}
	for _, tc := range []struct {
		name    string
		advance time.Duration
		o       returns.ListOptions
		want    string
	}{
		{name: "BeforeExpiryAllWait", o: returns.ListOptions{}, want: "old=waiting fresh=waiting done=done fails=failed"},
		{name: "ExpiredShowsAsFailed", advance: time.Minute, want: "old=failed fresh=waiting done=done fails=failed"},
		{name: "WaitingLeavesExpiredOut", advance: time.Minute, o: returns.ListOptions{Statuses: []string{returns.StatusWaiting}}, want: "fresh=waiting"},
		{name: "ExpiredSelectsThem", advance: time.Minute, o: returns.ListOptions{Statuses: []string{returns.StatusExpired}}, want: "old=failed"},
		{name: "SeveralStatuses", advance: time.Minute, o: returns.ListOptions{Statuses: []string{returns.StatusExpired, returns.StatusFailed}}, want: "old=failed fails=failed"},
		{name: "OneRecordStatus", advance: time.Minute, o: returns.ListOptions{Statuses: []string{returns.StatusDone}}, want: "done=done"},
		{name: "Limit", advance: time.Minute, o: returns.ListOptions{Limit: 2}, want: "old=failed fresh=waiting"},
		{name: "LimitAfterFilter", advance: time.Minute, o: returns.ListOptions{Statuses: []string{returns.StatusWaiting, returns.StatusDone}, Limit: 1}, want: "fresh=waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, b := setupTasks(t)
			b.clock.Advance(tc.advance)
			tc.o.User = user
			got, err := svc.ListTasks(b.ctx, tc.o)
			if err != nil || strings.Join(names(got), " ") != tc.want {
				t.Fatalf("list %v (%v), want %s", names(got), err, tc.want)
			}
			// Show names the status list does: failed once the draft
			// expired, while the record still waits for recover.
			want := returns.StatusWaiting
			if tc.advance > 0 {
				want = returns.StatusFailed
			}
			v, err := svc.Show(b.ctx, "old", user)
			if err != nil || v.Draft.Expired != (tc.advance > 0) || v.Status != want {
				t.Fatalf("show old: %+v (%v); want %s with expired %v", v, err, want, tc.advance > 0)
			}
		})
	}

	t.Run("Batch", func(t *testing.T) {
		svc, b := setup(t)
		startBatch(t, svc, b)
		mustStart(t, svc, "alone", "A3001", "size")
		got, err := svc.ListTasks(b.ctx, returns.ListOptions{User: user, Batch: "bt", Statuses: []string{returns.StatusWaiting}})
		// The tasks its rows name: b6 and b7 were started before the
		// batch, b6 with other input (a conflict row), and still wait.
		if err != nil || strings.Join(names(got), " ") != "b1=waiting b2=waiting b6=waiting b7=waiting" {
			t.Fatalf("waiting rows of bt: %v (%v), want b1 b2 b6 b7", names(got), err)
		}
		all, _ := svc.ListTasks(b.ctx, returns.ListOptions{User: user, Batch: "bt"})
		for _, s := range all {
			if s.Task == "alone" || s.Task == "bt" {
				t.Fatalf("rows of bt: %v, want only its rows", names(all))
			}
		}
		_, err = svc.ListTasks(b.ctx, returns.ListOptions{User: user, Batch: "nope"})
		wantErr(t, err, returns.ErrNotFound)
		_, err = svc.ListTasks(b.ctx, returns.ListOptions{User: otherUser, Batch: "bt"})
		wantErr(t, err, returns.ErrNotFound)
		_, err = svc.ListTasks(b.ctx, returns.ListOptions{User: user, Batch: "alone"})
		wantErr(t, err, returns.ErrInvalid)
	})

	t.Run("BadOptionsAreInvalid", func(t *testing.T) {
		svc, b := setup(t)
		for _, o := range []returns.ListOptions{{Statuses: []string{"sleeping"}}, {Limit: -1}, {Batch: "a b"}} {
			o.User = user
			_, err := svc.ListTasks(b.ctx, o)
			wantErr(t, err, returns.ErrInvalid)
		}
		got, err := returns.ParseStatuses([]string{"waiting,expired", "failed", "waiting"})
		if err != nil || strings.Join(got, ",") != "waiting,expired,failed" {
			t.Fatalf("ParseStatuses: %v (%v)", got, err)
		}
		for _, bad := range [][]string{{"waiting,"}, {"sleeping"}, {""}} {
			if _, err := returns.ParseStatuses(bad); !errors.Is(err, returns.ErrInvalid) || !strings.Contains(err.Error(), "expired") {
				t.Fatalf("ParseStatuses(%q): %v, want ErrInvalid naming the statuses", bad, err)
			}
		}
	})
}
