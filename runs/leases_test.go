package runs

import (
	"assistant/internal/sqlstore"
	"assistant/internal/testkit"

	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"assistant/business"
)

func TestCreateLeasedTask(t *testing.T) {
	t.Parallel()
	forStores(t, testCreateLeasedTask)
}

func testCreateLeasedTask(t *testing.T, kind storeKind) {
	ctx := context.Background()
	in := TaskRecord{ID: "return-25", User: "demo-user", OrderID: "A3003", Reason: "size", Fingerprint: "fp", Stage: "lookup"}

	t.Run("RecordsRunningTaskHeldAtEpochOne", func(t *testing.T) {
		s, _ := newSeededOn(t, kind) // clock fixed at t0
		if err := s.CreateLeasedTask(ctx, in, KindReturn, 5*time.Minute, holder); err != nil {
			t.Fatal(err)
		}
		want := in
		want.Status, want.Kind, want.CreatedAt, want.UpdatedAt = "running", KindReturn, t0, t0
		want.Lease = holder
		want.Lease.Epoch = 1
		if got := mustTask(t, s, "return-25"); got != want {
			t.Errorf("Task = %+v, want %+v", got, want)
		}
	})

	t.Run("StartsRunningWhateverStatusIsGiven", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		done := in
		done.Status = "done"
		if err := s.CreateLeasedTask(ctx, done, KindReturn, time.Minute, holder); err != nil {
			t.Fatal(err)
		}
		if got := mustTask(t, s, "return-25").Status; got != "running" {
			t.Errorf("status = %s, want running", got)
		}
	})

	t.Run("KeepsGivenCreatedAt", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		at := in
		at.CreatedAt = t0.Add(-time.Hour)
		if err := s.CreateLeasedTask(ctx, at, KindReturn, time.Minute, holder); err != nil {
			t.Fatal(err)
		}
		got := mustTask(t, s, "return-25")
		if !got.CreatedAt.Equal(at.CreatedAt) || !got.UpdatedAt.Equal(at.CreatedAt) {
			t.Errorf("created %v updated %v, want both %v", got.CreatedAt, got.UpdatedAt, at.CreatedAt)
		}
	})

	t.Run("RecordsKind", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if err := s.CreateLeasedTask(ctx, in, KindBatch, time.Minute, holder); err != nil {
			t.Fatal(err)
		}
		if got := mustTask(t, s, "return-25").Kind; got != KindBatch {
			t.Errorf("Task.Kind = %s, want %s", got, KindBatch)
		}
		if _, kind, err := s.TaskLease(ctx, "return-25"); err != nil || kind != KindBatch {
			t.Errorf("TaskLease kind = %q (%v), want %s", kind, err, KindBatch)
		}
	})

	ttls := []struct {
		name     string
		ttl      time.Duration
		wantRead time.Duration
	}{
		{"WholeSeconds", 90 * time.Second, 90 * time.Second},
		{"FractionIsDropped", 90*time.Second + 999*time.Millisecond, 90 * time.Second},
		{"Zero", 0, 0},
	}
	for _, tt := range ttls {
		t.Run("DraftTTLReadsBack"+tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			if err := s.CreateLeasedTask(ctx, in, KindReturn, tt.ttl, holder); err != nil {
				t.Fatal(err)
			}
			got, err := s.DraftTTL(ctx, "return-25")
			if err != nil || got != tt.wantRead {
				t.Errorf("DraftTTL = %v (%v), want %v", got, err, tt.wantRead)
			}
		})
	}

	t.Run("DraftTTLOfUnknownTaskIsNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if _, err := s.DraftTTL(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("DraftTTL: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("DuplicateIsErrTaskExistsAndKeepsTheFirst", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if err := s.CreateLeasedTask(ctx, in, KindReturn, time.Minute, holder); err != nil {
			t.Fatal(err)
		}
		before := mustTask(t, s, "return-25")
		other := in
		other.User = "other-user"
		err := s.CreateLeasedTask(ctx, other, KindBatch, time.Minute, Lease{Owner: "o2", Until: t0.Add(time.Hour)})
		if !errors.Is(err, ErrTaskExists) {
			t.Errorf("second CreateLeasedTask: err = %v, want ErrTaskExists", err)
		}
		if got := mustTask(t, s, "return-25"); got != before {
			t.Errorf("Task = %+v, want the first %+v", got, before)
		}
	})

	t.Run("MissingIDOrUserIsErrorAndRecordsNothing", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		for _, rec := range []TaskRecord{{User: "demo-user", OrderID: "A3003"}, {ID: "return-25", OrderID: "A3003"}} {
			if err := s.CreateLeasedTask(ctx, rec, KindReturn, time.Minute, holder); err == nil {
				t.Errorf("CreateLeasedTask(%+v) succeeded", rec)
			}
		}
		if tasks, err := s.ListTasks(ctx, "", ""); err != nil || len(tasks) != 0 {
			t.Errorf("ListTasks = %v (%v), want none", tasks, err)
		}
	})
}

func TestTaskLease(t *testing.T) {
	t.Parallel()
	forStores(t, testTaskLease)
}

func testTaskLease(t *testing.T, kind storeKind) {
	ctx := context.Background()

	t.Run("ReadsHolderAndKind", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		l, kind, err := s.TaskLease(ctx, "return-25")
		if err != nil {
			t.Fatal(err)
		}
		if l.Owner != holder.Owner || l.PID != holder.PID || l.Host != holder.Host || !l.Until.Equal(holder.Until) {
			t.Errorf("TaskLease = %+v, want holder %+v", l, holder)
		}
		if kind != KindReturn {
			t.Errorf("kind = %s, want %s", kind, KindReturn)
		}
	})

	t.Run("ReadsEpochAsTaskDoes", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		me := Lease{Owner: "o2", PID: 202, Host: "host-b", Until: t0.Add(2 * time.Minute)}
		if _, err := s.AcquireLease(ctx, "return-25", me, t0, dead); err != nil {
			t.Fatal(err)
		}
		l, _, err := s.TaskLease(ctx, "return-25")
		if err != nil {
			t.Fatal(err)
		}
		if task := mustTask(t, s, "return-25"); l.Epoch != 2 || task.Lease.Epoch != 2 {
			t.Errorf("epoch: TaskLease %d, Task %d, want 2 for both", l.Epoch, task.Lease.Epoch)
		}
	})

	t.Run("ReleasedLeaseHasNoHolder", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		if err := s.ReleaseLease(ctx, "return-25", "o1", "waiting", "draft_ready"); err != nil {
			t.Fatal(err)
		}
		l, _, err := s.TaskLease(ctx, "return-25")
		if err != nil {
			t.Fatal(err)
		}
		if l.Owner != "" || l.PID != 0 || l.Host != "" || !l.Until.IsZero() {
			t.Errorf("TaskLease = %+v, want no holder", l)
		}
		if got, want := mustTask(t, s, "return-25").Lease, (Lease{Epoch: 1}); got != want {
			t.Errorf("Task.Lease = %+v, want %+v", got, want)
		}
	})

	t.Run("UnknownTaskIsNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if _, _, err := s.TaskLease(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("TaskLease: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Task(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Task: err = %v, want ErrNotFound", err)
		}
	})
}

func TestAcquireLease(t *testing.T) {
	t.Parallel()
	forStores(t, testAcquireLease)
}

func testAcquireLease(t *testing.T, kind storeKind) {
	ctx := context.Background()
	me := Lease{Owner: "o2", PID: 202, Host: "host-b", Until: t0.Add(2 * time.Minute)}
	again := holder
	again.Until = t0.Add(3 * time.Minute)

	// Each case starts from task return-25 created at t0 held by holder
	// (epoch 1), then runs setup.
	taken := []struct {
		name      string
		setup     func(t *testing.T, s *Store)
		me        Lease
		now       time.Time
		gone      func(Lease) Liveness
		wantPrev  string
		wantEpoch int64
	}{
		{
			name: "FreeTaskIsTaken",
			setup: func(t *testing.T, s *Store) {
				if err := s.ReleaseLease(ctx, "return-25", "o1", "waiting", "draft_ready"); err != nil {
					t.Fatal(err)
				}
			},
			me: me, now: t0, gone: unknown, wantPrev: "waiting", wantEpoch: 2,
		},
		{name: "LeaseLapsingNowIsTakenOver", me: me, now: holder.Until, gone: unknown, wantPrev: "running", wantEpoch: 2},
		{name: "LapsedLeaseIsTakenOver", me: me, now: holder.Until.Add(time.Hour), gone: unknown, wantPrev: "running", wantEpoch: 2},
		{name: "GoneHolderIsTakenOverBeforeExpiry", me: me, now: t0, gone: dead, wantPrev: "running", wantEpoch: 2},
		{name: "SameOwnerReacquiresWhileLive", me: again, now: t0, gone: unknown, wantPrev: "running", wantEpoch: 2},
		{
			name: "StoppedTaskRunsAgain",
			setup: func(t *testing.T, s *Store) {
				if err := s.RequestStop(ctx, "return-25"); err != nil {
					t.Fatal(err)
				}
			},
			me: me, now: t0, gone: dead, wantPrev: "interrupted", wantEpoch: 2,
		},
	}
	for _, tt := range taken {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			acq, err := s.AcquireLease(ctx, "return-25", tt.me, tt.now, tt.gone)
			prev, epoch := acq.PrevStatus, acq.Epoch
			if err != nil {
				t.Fatal(err)
			}
			if prev != tt.wantPrev || epoch != tt.wantEpoch {
				t.Errorf("AcquireLease = (%s, %d), want (%s, %d)", prev, epoch, tt.wantPrev, tt.wantEpoch)
			}
			got := mustTask(t, s, "return-25")
			want := tt.me
			want.Epoch = tt.wantEpoch
			if got.Lease != want || got.Status != "running" || !got.UpdatedAt.Equal(tt.now) {
				t.Errorf("after AcquireLease: lease %+v, status %s, updated %v; want %+v, running, %v",
					got.Lease, got.Status, got.UpdatedAt, want, tt.now)
			}
		})
	}

	busy := []struct {
		name string
		now  time.Time
	}{
		{"LiveHolderIsBusy", t0},
		{"LiveHolderIsBusyUntilTheLastInstant", holder.Until.Add(-time.Nanosecond)},
	}
	for _, tt := range busy {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			before := mustTask(t, s, "return-25")
			_, err := s.AcquireLease(ctx, "return-25", me, tt.now, unknown)
			var held *LeaseHeldError
			if !errors.As(err, &held) || !errors.Is(err, ErrBusy) {
				t.Fatalf("AcquireLease at %v: err = %v, want *LeaseHeldError matching ErrBusy", tt.now, err)
			}
			wantHeld := holder
			wantHeld.Epoch = 1
			if held.Task != "return-25" || held.Lease != wantHeld {
				t.Errorf("LeaseHeldError = %+v, want task return-25 held by %+v", held, wantHeld)
			}
			if msg := err.Error(); !strings.Contains(msg, "pid 101") || !strings.Contains(msg, "host-a") {
				t.Errorf("message %q does not say who holds the task", msg)
			}
			if got := mustTask(t, s, "return-25"); got != before {
				t.Errorf("Task = %+v, want unchanged %+v", got, before)
			}
		})
	}

	t.Run("GoneIsAskedAboutTheHolder", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		var asked []Lease
		gone := func(l Lease) Liveness { asked = append(asked, l); return HolderUnknown }
		if _, err := s.AcquireLease(ctx, "return-25", me, t0, gone); !errors.Is(err, ErrBusy) {
			t.Fatalf("err = %v, want ErrBusy", err)
		}
		want := holder
		want.Epoch = 1
		if len(asked) != 1 || asked[0] != want {
			t.Errorf("gone asked about %+v, want once about %+v", asked, want)
		}
	})

	t.Run("EpochCountsEveryAcquisitionAndReleaseKeepsIt", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder) // epoch 1
		for i, l := range []Lease{me, holder, me} {
			prevOwner := mustTask(t, s, "return-25").Lease.Owner
			if err := s.ReleaseLease(ctx, "return-25", prevOwner, "waiting", ""); err != nil {
				t.Fatal(err)
			}
			if got, want := mustTask(t, s, "return-25").Lease.Epoch, int64(i+1); got != want {
				t.Errorf("epoch after release %d = %d, want %d", i+1, got, want)
			}
			got, err := s.AcquireLease(ctx, "return-25", l, t0, unknown)
			epoch := got.Epoch
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(i + 2); epoch != want || mustTask(t, s, "return-25").Lease.Epoch != want {
				t.Errorf("acquisition %d: epoch %d, want %d", i+1, epoch, want)
			}
		}
	})

	t.Run("ConcurrentTakersOneWinsTheOthersAreBusy", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		const takers = 8
		start := make(chan struct{})
		errs := make(chan error, takers)
		for i := range takers {
			go func() {
				<-start
				l := Lease{Owner: fmt.Sprintf("taker-%d", i), PID: 1000 + i, Host: "h", Until: t0.Add(time.Hour)}
				_, err := s.AcquireLease(ctx, "return-25", l, holder.Until, unknown) // holder lapsed
				errs <- err
			}()
		}
		close(start)
		won := 0
		for range takers {
			switch err := <-errs; {
			case err == nil:
				won++
			case !errors.Is(err, ErrBusy):
				t.Errorf("a losing taker got %v, want ErrBusy", err)
			}
		}
		if got := mustTask(t, s, "return-25").Lease.Epoch; won != 1 || got != 2 {
			t.Errorf("%d takers won, epoch %d; want 1 winner at epoch 2", won, got)
		}
	})

	t.Run("UnknownTaskIsNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if _, err := s.AcquireLease(ctx, "nope", me, t0, dead); !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	})
}

func TestRenewLease(t *testing.T) {
	t.Parallel()
	forStores(t, testRenewLease)
}

func testRenewLease(t *testing.T, kind storeKind) {
	ctx := context.Background()
	until := t0.Add(5 * time.Minute)
	tests := []struct {
		name    string
		setup   func(t *testing.T, s *Store)
		owner   string
		wantErr error
	}{
		{name: "HolderExtendsUntil", owner: "o1"},
		{
			name: "StoppedTaskIsConflict",
			setup: func(t *testing.T, s *Store) {
				if err := s.RequestStop(ctx, "return-25"); err != nil {
					t.Fatal(err)
				}
			},
			owner: "o1", wantErr: ErrConflict,
		},
		{name: "AnotherOwnerIsConflict", owner: "o2", wantErr: ErrConflict},
		{
			name: "TakenOverLeaseIsConflict",
			setup: func(t *testing.T, s *Store) {
				if _, err := s.AcquireLease(ctx, "return-25", Lease{Owner: "o2", Until: t0.Add(time.Hour)}, t0, dead); err != nil {
					t.Fatal(err)
				}
			},
			owner: "o1", wantErr: ErrConflict,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			before := mustTask(t, s, "return-25")
			err := s.RenewLease(ctx, "return-25", tt.owner, until)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("RenewLease: err = %v, want %v", err, tt.wantErr)
			}
			got := mustTask(t, s, "return-25")
			want := before
			if tt.wantErr == nil {
				want.Lease.Until = until
			}
			if got != want {
				t.Errorf("Task = %+v, want %+v", got, want)
			}
		})
	}
}

func TestReleaseLease(t *testing.T) {
	t.Parallel()
	forStores(t, testReleaseLease)
}

func testReleaseLease(t *testing.T, kind storeKind) {
	ctx := context.Background()
	later := t0.Add(time.Minute)
	releases := []struct {
		name    string
		release func(s *Store, ctx context.Context, taskID, owner, status, stage string) error
	}{
		{"ReleaseLease", (*Store).ReleaseLease},
		{"ReleaseLeaseSync", (*Store).ReleaseLeaseSync},
	}
	for _, r := range releases {
		t.Run(r.name, func(t *testing.T) {
			t.Run("HolderRecordsStatusAndLetsGoKeepingEpoch", func(t *testing.T) {
				s, desk := newSeededOn(t, kind)
				mustCreateLeased(t, s, "return-25", holder)
				if err := r.release(New(desk.Handle(), fixed(later)), ctx, "return-25", "o1", "waiting", "draft_ready"); err != nil {
					t.Fatal(err)
				}
				got := mustTask(t, s, "return-25")
				if got.Status != "waiting" || got.Stage != "draft_ready" || !got.UpdatedAt.Equal(later) {
					t.Errorf("status %s stage %s updated %v, want waiting draft_ready %v", got.Status, got.Stage, got.UpdatedAt, later)
				}
				if want := (Lease{Epoch: 1}); got.Lease != want {
					t.Errorf("Lease = %+v, want %+v", got.Lease, want)
				}
			})

			t.Run("AnotherOwnerIsConflictAndChangesNothing", func(t *testing.T) {
				s, desk := newSeededOn(t, kind)
				mustCreateLeased(t, s, "return-25", holder)
				before := mustTask(t, s, "return-25")
				err := r.release(New(desk.Handle(), fixed(later)), ctx, "return-25", "o2", "done", "submitted")
				if !errors.Is(err, ErrConflict) {
					t.Errorf("err = %v, want ErrConflict", err)
				}
				if got := mustTask(t, s, "return-25"); got != before {
					t.Errorf("Task = %+v, want unchanged %+v", got, before)
				}
			})

			t.Run("SecondReleaseIsConflict", func(t *testing.T) {
				s, _ := newSeededOn(t, kind)
				mustCreateLeased(t, s, "return-25", holder)
				if err := r.release(s, ctx, "return-25", "o1", "waiting", "draft_ready"); err != nil {
					t.Fatal(err)
				}
				if err := r.release(s, ctx, "return-25", "o1", "done", "submitted"); !errors.Is(err, ErrConflict) {
					t.Errorf("err = %v, want ErrConflict", err)
				}
				if got := mustTask(t, s, "return-25").Status; got != "waiting" {
					t.Errorf("status = %s, want waiting", got)
				}
			})
		})
	}
}

func TestRecordProgress(t *testing.T) {
	t.Parallel()
	forStores(t, testRecordProgress)
}

func testRecordProgress(t *testing.T, kind storeKind) {
	ctx := context.Background()
	later := t0.Add(time.Minute)

	t.Run("HolderRecordsStatusAndKeepsLease", func(t *testing.T) {
		s, desk := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		if err := New(desk.Handle(), fixed(later)).RecordProgress(ctx, "return-25", "o1", "waiting", "draft_ready"); err != nil {
			t.Fatal(err)
		}
		got := mustTask(t, s, "return-25")
		if got.Status != "waiting" || got.Stage != "draft_ready" || !got.UpdatedAt.Equal(later) {
			t.Errorf("status %s stage %s updated %v, want waiting draft_ready %v", got.Status, got.Stage, got.UpdatedAt, later)
		}
		want := holder
		want.Epoch = 1
		if got.Lease != want {
			t.Errorf("Lease = %+v, want kept %+v", got.Lease, want)
		}
	})

	t.Run("AnotherOwnerIsConflictAndChangesNothing", func(t *testing.T) {
		s, desk := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		before := mustTask(t, s, "return-25")
		err := New(desk.Handle(), fixed(later)).RecordProgress(ctx, "return-25", "o2", "waiting", "draft_ready")
		if !errors.Is(err, ErrConflict) {
			t.Errorf("err = %v, want ErrConflict", err)
		}
		if got := mustTask(t, s, "return-25"); got != before {
			t.Errorf("Task = %+v, want unchanged %+v", got, before)
		}
	})
}

func TestReleaseLeases(t *testing.T) {
	t.Parallel()
	forStores(t, testReleaseLeases)
}

func testReleaseLeases(t *testing.T, kind storeKind) {
	ctx := context.Background()
	o2 := Lease{Owner: "o2", PID: 202, Host: "host-b", Until: t0.Add(time.Minute)}

	t.Run("ReleasesOnlyOwnersListedTasksKeepingStatus", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "a", holder)
		mustCreateLeased(t, s, "b", holder)
		mustCreateLeased(t, s, "c", o2)
		mustCreateLeased(t, s, "d", holder)
		if err := s.RecordProgress(ctx, "a", "o1", "waiting", "draft_ready"); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseLeases(ctx, "o1", []string{"a", "b", "c", "nope"}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			task       string
			wantOwner  string
			wantStatus string
		}{
			{"a", "", "waiting"},
			{"b", "", "running"},
			{"c", "o2", "running"}, // listed but held by another owner
			{"d", "o1", "running"}, // o1's but not listed
		}
		for _, tt := range tests {
			got := mustTask(t, s, tt.task)
			if got.Lease.Owner != tt.wantOwner || got.Status != tt.wantStatus || got.Lease.Epoch != 1 {
				t.Errorf("task %s: owner %q status %s epoch %d, want owner %q status %s epoch 1",
					tt.task, got.Lease.Owner, got.Status, got.Lease.Epoch, tt.wantOwner, tt.wantStatus)
			}
			if tt.wantOwner == "" && got.Lease != (Lease{Epoch: 1}) {
				t.Errorf("task %s: released lease %+v, want no holder", tt.task, got.Lease)
			}
		}
	})

	none := []struct {
		name string
		ids  []string
	}{
		{"NilListChangesNothing", nil},
		{"EmptyListChangesNothing", []string{}},
	}
	for _, tt := range none {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "a", holder)
			if err := s.ReleaseLeases(ctx, "o1", tt.ids); err != nil {
				t.Fatalf("ReleaseLeases(%#v): %v", tt.ids, err)
			}
			if got := mustTask(t, s, "a").Lease.Owner; got != "o1" {
				t.Errorf("owner = %q, want o1", got)
			}
		})
	}
}

func TestRequestStop(t *testing.T) {
	t.Parallel()
	forStores(t, testRequestStop)
}

func testRequestStop(t *testing.T, kind storeKind) {
	ctx := context.Background()
	later := t0.Add(time.Minute)
	tests := []struct {
		name       string
		status     string // the task's status when the stop comes
		wantErr    error
		wantStatus string
	}{
		{"RunningTaskIsInterrupted", "running", nil, "interrupted"},
		{"FinishedTaskIsConflictAndStaysFinished", "done", ErrConflict, "done"},
		{"WaitingTaskIsConflict", "waiting", ErrConflict, "waiting"},
		{"SecondStopIsConflict", "interrupted", ErrConflict, "interrupted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, desk := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			if err := s.RecordProgress(ctx, "return-25", "o1", tt.status, "prepare"); err != nil {
				t.Fatal(err)
			}
			err := New(desk.Handle(), fixed(later)).RequestStop(ctx, "return-25")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("RequestStop: err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "is "+tt.status) {
				t.Errorf("message %q does not name status %s", err, tt.status)
			}
			got := mustTask(t, s, "return-25")
			if got.Status != tt.wantStatus || got.Stage != "prepare" || got.Lease.Owner != "o1" {
				t.Errorf("status %s stage %s owner %q, want %s prepare o1", got.Status, got.Stage, got.Lease.Owner, tt.wantStatus)
			}
			wantUpdated := t0 // a refused stop leaves the record as it was
			if tt.wantErr == nil {
				wantUpdated = later
			}
			if !got.UpdatedAt.Equal(wantUpdated) {
				t.Errorf("updated %v, want %v", got.UpdatedAt, wantUpdated)
			}
		})
	}

	t.Run("UnknownTaskIsNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if err := s.RequestStop(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	})
}

func TestSetProgressStatus(t *testing.T) {
	t.Parallel()
	forStores(t, testSetProgressStatus)
}

func testSetProgressStatus(t *testing.T, kind storeKind) {
	ctx := context.Background()
	tests := []struct {
		name       string
		from, to   string
		wantErr    error
		wantStatus string
	}{
		{"MovesFromTheGivenStatusKeepingStage", "waiting", "running", nil, "running"},
		{"OtherStatusIsConflict", "done", "running", ErrConflict, "waiting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			if err := s.ReleaseLease(ctx, "return-25", "o1", "waiting", "draft_ready"); err != nil {
				t.Fatal(err)
			}
			err := s.SetProgressStatus(ctx, "return-25", tt.from, tt.to)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "is waiting") {
				t.Errorf("message %q does not name status waiting", err)
			}
			if got := mustTask(t, s, "return-25"); got.Status != tt.wantStatus || got.Stage != "draft_ready" {
				t.Errorf("status %s stage %s, want %s draft_ready", got.Status, got.Stage, tt.wantStatus)
			}
		})
	}

	t.Run("UnknownTaskIsNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if err := s.SetProgressStatus(ctx, "nope", "waiting", "running"); !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	})
}

func TestSetKind(t *testing.T) {
	t.Parallel()
	forStores(t, testSetKind)
}

func testSetKind(t *testing.T, kind storeKind) {
	ctx := context.Background()

	t.Run("RecordsKind", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		if err := s.SetKind(ctx, "return-25", KindBatch); err != nil {
			t.Fatal(err)
		}
		if got := mustTask(t, s, "return-25").Kind; got != KindBatch {
			t.Errorf("kind = %s, want %s", got, KindBatch)
		}
	})

	t.Run("UnknownTaskIsError", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if err := s.SetKind(ctx, "nope", KindBatch); err == nil {
			t.Error("SetKind of an unknown task succeeded")
		}
	})
}

func TestStaleTasks(t *testing.T) {
	t.Parallel()
	forStores(t, testStaleTasks)
}

func testStaleTasks(t *testing.T, kind storeKind) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	live := Lease{Owner: "live", PID: 1, Host: "h", Until: now.Add(time.Minute)}
	deadOwner := Lease{Owner: "dead", PID: 2, Host: "h", Until: now.Add(time.Minute)}
	lapsed := Lease{Owner: "lapsed", PID: 3, Host: "h", Until: now} // Until == now is lapsed

	s, _ := newSeededOn(t, kind)
	// Created in id order so ListTasks' order (created_at, then id) is id order.
	mustCreateLeased(t, s, "01-no-holder", live)
	mustCreateLeased(t, s, "02-lapsed", lapsed)
	mustCreateLeased(t, s, "03-gone", deadOwner)
	mustCreateLeased(t, s, "04-live", live)
	mustCreateLeased(t, s, "05-waiting-no-holder", live)
	mustCreateLeased(t, s, "06-interrupted-lapsed", lapsed)
	if err := s.ReleaseLease(ctx, "01-no-holder", "live", "running", "lookup"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, "05-waiting-no-holder", "live", "waiting", "draft_ready"); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestStop(ctx, "06-interrupted-lapsed"); err != nil {
		t.Fatal(err)
	}
	gone := func(l Lease) Liveness {
		if l.Owner == "dead" {
			return HolderGone
		}
		return HolderUnknown
	}

	stale, err := s.StaleTasks(ctx, now, gone)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range stale {
		ids = append(ids, x.ID)
	}
	if want := []string{"01-no-holder", "02-lapsed", "03-gone"}; !slices.Equal(ids, want) {
		t.Errorf("StaleTasks = %v, want %v (a live holder and non-running tasks are never stale)", ids, want)
	}
}

func TestCountTasksReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("MissingFileCountsZeroAndIsNotCreated", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "business.sqlite")
		if n, err := CountTasksReadOnly(ctx, path); n != 0 || err != nil {
			t.Errorf("CountTasksReadOnly = %d (%v), want 0", n, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("file after count: %v, want it still missing", err)
		}
	})

	t.Run("EmptyFileCountsZero", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "business.sqlite")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if n, err := CountTasksReadOnly(ctx, path); n != 0 || err != nil {
			t.Errorf("CountTasksReadOnly = %d (%v), want 0", n, err)
		}
	})

	t.Run("CountsTasksWhileTheFileIsOpen", func(t *testing.T) {
		s, desk := newSeeded(t)
		for _, id := range []string{"a", "b", "c"} {
			mustCreateLeased(t, s, id, holder)
		}
		if n, err := CountTasksReadOnly(ctx, desk.Path()); n != 3 || err != nil {
			t.Errorf("CountTasksReadOnly = %d (%v), want 3", n, err)
		}
	})

	t.Run("CountsTasksOfAClosedFileLeavingItUnchanged", func(t *testing.T) {
		s, desk := newSeeded(t)
		for _, id := range []string{"a", "b", "c"} {
			mustCreateLeased(t, s, id, holder)
		}
		if err := desk.Close(); err != nil {
			t.Fatal(err)
		}
		path := desk.Path()
		sumBefore, entriesBefore := testkit.FileSHA256(t, path), dirNames(t, filepath.Dir(path))

		if n, err := CountTasksReadOnly(ctx, path); n != 3 || err != nil {
			t.Errorf("CountTasksReadOnly = %d (%v), want 3", n, err)
		}
		if sumAfter := testkit.FileSHA256(t, path); sumAfter != sumBefore {
			t.Errorf("file sha256 changed by the count: %s → %s", sumBefore, sumAfter)
		}
		if entriesAfter := dirNames(t, filepath.Dir(path)); !slices.Equal(entriesAfter, entriesBefore) {
			t.Errorf("directory changed by the count: %v → %v", entriesBefore, entriesAfter)
		}
	})
}

// dirNames returns the names in directory dir, sorted.
func dirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestTasksUpdatedBefore(t *testing.T) {
	t.Parallel()
	forStores(t, testTasksUpdatedBefore)
}

func testTasksUpdatedBefore(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	for _, in := range []TaskRecord{
		{ID: "done-old", Status: "done", UpdatedAt: t0},
		{ID: "failed-newer", Status: "failed", UpdatedAt: t0.Add(time.Second)},
		{ID: "done-at-cutoff", Status: "done", UpdatedAt: t0.Add(2 * time.Second)},
		{ID: "running-old", Status: "running", UpdatedAt: t0},
	} {
		in.User, in.OrderID, in.CreatedAt = "demo-user", "A3003", t0
		if err := s.CreateTask(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := t0.Add(2 * time.Second)
	tests := []struct {
		name     string
		statuses []string
		want     []string
	}{
		{"OnlyGivenStatusesUpdatedStrictlyBeforeOldestFirst", []string{"failed", "done"}, []string{"done-old", "failed-newer"}},
		{"OneStatus", []string{"running"}, []string{"running-old"}},
		{"NoStatusesIsNone", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks, err := s.TasksUpdatedBefore(ctx, tt.statuses, cutoff)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range tasks {
				ids = append(ids, x.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("TasksUpdatedBefore(%v) = %v, want %v", tt.statuses, ids, tt.want)
			}
		})
	}
}

func TestSync(t *testing.T) {
	t.Parallel()
	forStores(t, testSync)
}

func testSync(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, desk := newSeededOn(t, kind)
	mustCreateLeased(t, s, "return-25", holder)
	if err := s.Sync(ctx); err != nil {
		t.Errorf("Sync: %v", err)
	}
	err := desk.InTx(ctx, func(tx *business.Store) error {
		return New(tx.Handle(), nil).Sync(ctx) // does nothing: the commit of InTx is durable
	})
	if err != nil {
		t.Errorf("Sync inside InTx: %v", err)
	}
}

// TestClosedFile checks that every method reports a file it cannot use as
// an error, never as one of the answers a caller acts on (ErrNotFound,
// ErrConflict, ErrTaskExists, ErrBusy).
func TestClosedFile(t *testing.T) {
	t.Parallel()
	forStores(t, testClosedFile)
}

func testClosedFile(t *testing.T, kind storeKind) {
	ctx := context.Background()
	calls := []struct {
		name string
		call func(s *Store) error
	}{
		{"CreateTask", func(s *Store) error { return s.CreateTask(ctx, TaskRecord{ID: "x", User: "u"}) }},
		{"CreateLeasedTask", func(s *Store) error {
			return s.CreateLeasedTask(ctx, TaskRecord{ID: "x", User: "u"}, KindReturn, time.Minute, holder)
		}},
		{"Task", func(s *Store) error { _, err := s.Task(ctx, "return-25"); return err }},
		{"DraftTTL", func(s *Store) error { _, err := s.DraftTTL(ctx, "return-25"); return err }},
		{"TaskLease", func(s *Store) error { _, _, err := s.TaskLease(ctx, "return-25"); return err }},
		{"ListTasks", func(s *Store) error { _, err := s.ListTasks(ctx, "", ""); return err }},
		{"TasksUpdatedBefore", func(s *Store) error { _, err := s.TasksUpdatedBefore(ctx, []string{"done"}, t0); return err }},
		{"SetProgress", func(s *Store) error { return s.SetProgress(ctx, "return-25", "running", "done", "") }},
		{"AcquireLease", func(s *Store) error { _, err := s.AcquireLease(ctx, "return-25", holder, t0, dead); return err }},
		{"RenewLease", func(s *Store) error { return s.RenewLease(ctx, "return-25", "o1", t0) }},
		{"ReleaseLease", func(s *Store) error { return s.ReleaseLease(ctx, "return-25", "o1", "done", "") }},
		{"ReleaseLeaseSync", func(s *Store) error { return s.ReleaseLeaseSync(ctx, "return-25", "o1", "done", "") }},
		{"RecordProgress", func(s *Store) error { return s.RecordProgress(ctx, "return-25", "o1", "done", "") }},
		{"ReleaseLeases", func(s *Store) error { return s.ReleaseLeases(ctx, "o1", []string{"return-25"}) }},
		{"RequestStop", func(s *Store) error { return s.RequestStop(ctx, "return-25") }},
		{"SetKind", func(s *Store) error { return s.SetKind(ctx, "return-25", KindBatch) }},
		{"StaleTasks", func(s *Store) error { _, err := s.StaleTasks(ctx, t0, dead); return err }},
		{"StartStep", func(s *Store) error { _, err := s.StartStep(ctx, "return-25", "lookup", t0); return err }},
		{"LastStep", func(s *Store) error { _, err := s.LastStep(ctx, "return-25"); return err }},
		{"StepCounts", func(s *Store) error { _, _, err := s.StepCounts(ctx, "return-25"); return err }},
		{"AddStep", func(s *Store) error {
			return s.AddStep(ctx, TimelineStep{Task: "return-25", Seq: 9, Node: "n", Attempt: 1, Status: StepDone, StartedAt: t0})
		}},
		{"EndStep", func(s *Store) error { return s.EndStep(ctx, "return-25", 1, StepDone, "", t0) }},
		{"EndHeld", func(s *Store) error { return s.EndHeld(ctx, "return-25", "o1", 1, "failed", "final_sale", "x") }},
		{"FailRunningSteps", func(s *Store) error { _, err := s.FailRunningSteps(ctx, "return-25", "died", t0); return err }},
		{"Steps", func(s *Store) error { _, err := s.Steps(ctx, "return-25"); return err }},
		{"CreateBatch", func(s *Store) error { return s.CreateBatch(ctx, TaskRecord{ID: "b", User: "u"}, holder, nil) }},
		{"BatchRows", func(s *Store) error { _, err := s.BatchRows(ctx, "b", 0, 10); return err }},
		{"CountBatchRows", func(s *Store) error { _, err := s.CountBatchRows(ctx, "b"); return err }},
		{"Sync", func(s *Store) error { return s.Sync(ctx) }},
	}
	s, desk := newSeededOn(t, kind)
	mustCreateLeased(t, s, "return-25", holder)
	if err := desk.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.name == "Sync" && kind == pgStore {
			continue // nothing to do on a server: every commit is durable, so no error either
		}
		t.Run(c.name, func(t *testing.T) {
			err := c.call(s)
			if err == nil {
				t.Fatal("succeeded on a closed file")
			}
			for _, answer := range []error{ErrNotFound, ErrConflict, ErrTaskExists, ErrBusy} {
				if errors.Is(err, answer) {
					t.Errorf("err = %v, reported as %v", err, answer)
				}
			}
		})
	}
}

// TestRequestStopIsDurable: a stop is durable when RequestStop returns
// (one durable commit of its own), so Service.Stop needs no Sync after
// it, which a writer taking the lock right after the commit could make
// fail for a stop that is written.
func TestRequestStopIsDurable(t *testing.T) {
	ctx := context.Background()
	s, _ := newSeeded(t)
	mustCreateLeased(t, s, "return-25", holder)
	if err := s.RecordProgress(ctx, "return-25", "o1", "running", "prepare"); err != nil {
		t.Fatal(err)
	}
	before := sqlstore.Syncs()
	if err := s.RequestStop(ctx, "return-25"); err != nil {
		t.Fatal(err)
	}
	if got := sqlstore.Syncs() - before; got != 1 {
		t.Errorf("RequestStop made %d durable commits, want 1", got)
	}
	if got := mustTask(t, s, "return-25"); got.Status != "interrupted" {
		t.Errorf("status %s, want interrupted", got.Status)
	}
}
