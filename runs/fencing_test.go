package runs

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"assistant/business"
)

// The rules of leases and fencing over the run bookkeeping: a lease is taken over
// only from a holder that is gone (or lapsed while nothing tells), a stop is
// final for the run it stopped, a holder's writes are fenced by owner and
// epoch, and a node fails at most max times in a row.

// alive is the answer of a caller that sees the holder's process run.
func alive(Lease) Liveness { return HolderAlive }

// o2 is the lease of a second process, live until two minutes after t0.
var o2 = Lease{Owner: "o2", PID: 202, Host: "host-b", Until: t0.Add(2 * time.Minute)}

// atEpoch returns l with fencing epoch e.
func atEpoch(l Lease, e int64) Lease {
	l.Epoch = e
	return l
}

// mustAcquire makes me the holder of task id at now, failing the test when
// it cannot.
func mustAcquire(tb testing.TB, s *Store, id string, me Lease, now time.Time, check func(Lease) Liveness) Acquired {
	tb.Helper()
	a, err := s.AcquireLease(context.Background(), id, me, now, check)
	if err != nil {
		tb.Fatalf("acquire lease of %s for %s: %v", id, me.Owner, err)
	}
	return a
}

// mustStop requests an operator stop of task id, failing the test when it
// cannot.
func mustStop(tb testing.TB, s *Store, id string) {
	tb.Helper()
	if err := s.RequestStop(context.Background(), id); err != nil {
		tb.Fatalf("stop %s: %v", id, err)
	}
}

// mustRelease gives owner's lease of task id up with status and stage,
// failing the test when it cannot.
func mustRelease(tb testing.TB, s *Store, id, owner, status, stage string) {
	tb.Helper()
	if err := s.ReleaseLease(context.Background(), id, owner, status, stage); err != nil {
		tb.Fatalf("release %s by %s: %v", id, owner, err)
	}
}

// stepsOf reads the timeline of task id, failing the test when it cannot.
func stepsOf(tb testing.TB, s *Store, id string) []TimelineStep {
	tb.Helper()
	steps, err := s.Steps(context.Background(), id)
	if err != nil {
		tb.Fatalf("steps of %s: %v", id, err)
	}
	return steps
}

// ran is one node run already on a timeline: how it ended (StepRunning
// for a step its process left running) and with which message.
type ran struct {
	node, status, msg string
}

// repeat returns n runs of node that ended with status and msg.
func repeat(n int, node, status, msg string) []ran {
	out := make([]ran, n)
	for i := range out {
		out[i] = ran{node, status, msg}
	}
	return out
}

// mustRun records runs on task id's timeline in order, started and ended
// at t0, failing the test when it cannot.
func mustRun(tb testing.TB, s *Store, id string, runs ...[]ran) {
	tb.Helper()
	ctx := context.Background()
	for _, r := range slices.Concat(runs...) {
		seq, err := s.StartStep(ctx, id, r.node, t0)
		if err != nil {
			tb.Fatalf("start %s: %v", r.node, err)
		}
		if r.status == StepRunning {
			continue
		}
		if err := s.EndStep(ctx, id, seq, r.status, r.msg, t0); err != nil {
			tb.Fatalf("end step %d (%s): %v", seq, r.node, err)
		}
	}
}

func TestAcquireLeaseByLiveness(t *testing.T) {
	t.Parallel()
	forStores(t, testAcquireLeaseByLiveness)
}

func testAcquireLeaseByLiveness(t *testing.T, kind storeKind) {
	ctx := context.Background()
	live, lapsed := t0, holder.Until // Until == now is lapsed
	tests := []struct {
		name      string
		check     func(Lease) Liveness
		now       time.Time
		wantTaken bool
	}{
		{"AliveHolderOfALiveLeaseIsBusy", alive, live, false},
		{"AliveHolderOfALapsedLeaseIsBusy", alive, lapsed, false},
		{"AliveHolderHoursAfterExpiryIsBusy", alive, lapsed.Add(time.Hour), false},
		{"UnknownHolderOfALiveLeaseIsBusy", unknown, live, false},
		{"UnknownHolderOfALapsedLeaseIsTakenOver", unknown, lapsed, true},
		{"GoneHolderOfALiveLeaseIsTakenOver", dead, live, true},
		{"GoneHolderOfALapsedLeaseIsTakenOver", dead, lapsed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			before := mustTask(t, s, "return-25")

			acq, err := s.AcquireLease(ctx, "return-25", o2, tt.now, tt.check)

			if tt.wantTaken {
				if err != nil {
					t.Fatalf("AcquireLease: %v, want a takeover", err)
				}
				if want := (Acquired{PrevStatus: "running", Epoch: 2, TookOver: true}); acq != want {
					t.Errorf("Acquired = %+v, want %+v", acq, want)
				}
				if got := mustTask(t, s, "return-25").Lease; got != atEpoch(o2, 2) {
					t.Errorf("Lease = %+v, want %+v", got, atEpoch(o2, 2))
				}
				return
			}
			var held *LeaseHeldError
			if !errors.As(err, &held) || !errors.Is(err, ErrBusy) {
				t.Fatalf("AcquireLease: err = %v, want *LeaseHeldError matching ErrBusy", err)
			}
			if held.Task != "return-25" || held.Lease != atEpoch(holder, 1) {
				t.Errorf("LeaseHeldError = %+v, want task return-25 held by %+v", held, atEpoch(holder, 1))
			}
			if errors.Is(err, ErrConflict) {
				t.Errorf("err = %v matches ErrConflict; a held lease is ErrBusy only", err)
			}
			if acq != (Acquired{}) {
				t.Errorf("Acquired = %+v, want zero on refusal", acq)
			}
			if got := mustTask(t, s, "return-25"); got != before {
				t.Errorf("Task = %+v, want unchanged %+v", got, before)
			}
		})
	}
}

func TestAcquireLeaseTookOver(t *testing.T) {
	t.Parallel()
	forStores(t, testAcquireLeaseTookOver)
}

func testAcquireLeaseTookOver(t *testing.T, kind storeKind) {
	ctx := context.Background()
	again := holder
	again.Until = t0.Add(3 * time.Minute)
	tests := []struct {
		name  string
		setup func(t *testing.T, s *Store)
		me    Lease
		check func(Lease) Liveness
		want  Acquired
	}{
		{
			name:  "FreeLeaseIsNoTakeover",
			setup: func(t *testing.T, s *Store) { mustRelease(t, s, "return-25", "o1", "waiting", "draft_ready") },
			me:    o2, check: dead,
			want: Acquired{PrevStatus: "waiting", Epoch: 2},
		},
		{
			name: "SameOwnerIsNoTakeover",
			me:   again, check: dead,
			want: Acquired{PrevStatus: "running", Epoch: 2},
		},
		{
			name: "AnotherOwnersLeaseIsATakeover",
			me:   o2, check: dead,
			want: Acquired{PrevStatus: "running", Epoch: 2, TookOver: true},
		},
		{
			name:  "StoppedTaskStillHeldIsATakeover",
			setup: func(t *testing.T, s *Store) { mustStop(t, s, "return-25") },
			me:    o2, check: dead,
			want: Acquired{PrevStatus: "interrupted", Epoch: 2, TookOver: true},
		},
		{
			name: "StoppedTaskReleasedIsNoTakeover",
			setup: func(t *testing.T, s *Store) {
				mustStop(t, s, "return-25")
				mustRelease(t, s, "return-25", "o1", "interrupted", "prepare")
			},
			me: o2, check: dead,
			want: Acquired{PrevStatus: "interrupted", Epoch: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			acq, err := s.AcquireLease(ctx, "return-25", tt.me, t0, tt.check)
			if err != nil {
				t.Fatal(err)
			}
			if acq != tt.want {
				t.Errorf("Acquired = %+v, want %+v", acq, tt.want)
			}
			got := mustTask(t, s, "return-25")
			if got.Status != "running" || got.Lease != atEpoch(tt.me, tt.want.Epoch) {
				t.Errorf("status %s lease %+v, want running held by %+v", got.Status, got.Lease, atEpoch(tt.me, tt.want.Epoch))
			}
		})
	}

	// The check is a question about another owner's process: a free lease
	// or the caller's own has nobody to ask about.
	asks := []struct {
		name  string
		setup func(t *testing.T, s *Store)
		me    Lease
	}{
		{"FreeLease", func(t *testing.T, s *Store) { mustRelease(t, s, "return-25", "o1", "waiting", "") }, o2},
		{"SameOwner", nil, again},
	}
	for _, tt := range asks {
		t.Run("CheckIsNotAskedFor"+tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			if tt.setup != nil {
				tt.setup(t, s)
			}
			check := func(l Lease) Liveness {
				t.Errorf("check asked about %+v", l)
				return HolderAlive
			}
			if _, err := s.AcquireLease(ctx, "return-25", tt.me, t0, check); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAcquireLeaseRaisesEpochByOne(t *testing.T) {
	t.Parallel()
	forStores(t, testAcquireLeaseRaisesEpochByOne)
}

func testAcquireLeaseRaisesEpochByOne(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	mustCreateLeased(t, s, "return-25", holder) // epoch 1
	again := holder
	again.Until = t0.Add(3 * time.Minute)

	// One task through a sequence of acquisitions; each row runs on the
	// state the rows before it left.
	steps := []struct {
		name         string
		before       func(t *testing.T)
		me           Lease
		check        func(Lease) Liveness
		wantErr      error
		wantEpoch    int64 // the task's epoch afterwards
		wantTookOver bool
	}{
		{name: "SameOwnerReacquires", me: again, check: alive, wantEpoch: 2},
		{name: "AliveHolderRefusesAndKeepsEpoch", me: o2, check: alive, wantErr: ErrBusy, wantEpoch: 2},
		{name: "GoneHolderIsTakenOver", me: o2, check: dead, wantEpoch: 3, wantTookOver: true},
		{
			name:   "FreeLeaseIsTakenAfterARelease",
			before: func(t *testing.T) { mustRelease(t, s, "return-25", "o2", "waiting", "draft_ready") },
			me:     holder, check: alive, wantEpoch: 4,
		},
		{name: "UnknownLiveHolderRefusesAndKeepsEpoch", me: o2, check: unknown, wantErr: ErrBusy, wantEpoch: 4},
		{name: "FormerHolderTakesItBack", me: o2, check: dead, wantEpoch: 5, wantTookOver: true},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before(t)
		}
		acq, err := s.AcquireLease(ctx, "return-25", st.me, t0, st.check)
		if !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.wantErr)
		}
		if err == nil && (acq.Epoch != st.wantEpoch || acq.TookOver != st.wantTookOver) {
			t.Errorf("%s: Acquired = %+v, want epoch %d took over %t", st.name, acq, st.wantEpoch, st.wantTookOver)
		}
		if got := mustTask(t, s, "return-25").Lease.Epoch; got != st.wantEpoch {
			t.Errorf("%s: task epoch = %d, want %d", st.name, got, st.wantEpoch)
		}
	}
}

func TestStaleTasksByLiveness(t *testing.T) {
	t.Parallel()
	forStores(t, testStaleTasksByLiveness)
}

func testStaleTasksByLiveness(t *testing.T, kind storeKind) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	lease := func(owner string, until time.Time) Lease {
		return Lease{Owner: owner, PID: 7, Host: "h", Until: until}
	}
	// check answers by the owner's name, as a caller answers by pid.
	check := func(l Lease) Liveness {
		switch {
		case strings.HasPrefix(l.Owner, "alive"):
			return HolderAlive
		case strings.HasPrefix(l.Owner, "gone"):
			return HolderGone
		}
		return HolderUnknown
	}
	tests := []struct {
		id        string
		lease     Lease
		wantStale bool
	}{
		{"alive-live", lease("alive-1", now.Add(time.Minute)), false},
		{"alive-lapsed", lease("alive-2", now), false},
		{"alive-lapsed-long-ago", lease("alive-3", now.Add(-time.Hour)), false},
		{"unknown-live", lease("unknown-1", now.Add(time.Nanosecond)), false},
		{"unknown-lapsed", lease("unknown-2", now), true},
		{"gone-live", lease("gone-1", now.Add(time.Hour)), true},
		{"gone-lapsed", lease("gone-2", now.Add(-time.Minute)), true},
	}
	s, _ := newSeededOn(t, kind)
	for _, tt := range tests {
		mustCreateLeased(t, s, tt.id, tt.lease)
	}
	stale, err := s.StaleTasks(ctx, now, check)
	if err != nil {
		t.Fatal(err)
	}
	isStale := map[string]bool{}
	for _, x := range stale {
		isStale[x.ID] = true
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if isStale[tt.id] != tt.wantStale {
				t.Errorf("stale = %t, want %t", isStale[tt.id], tt.wantStale)
			}
			// recover acquires what StaleTasks returns: both apply one rule.
			_, err := s.AcquireLease(ctx, tt.id, Lease{Owner: "recover", Until: now.Add(time.Minute)}, now, check)
			if tt.wantStale && err != nil {
				t.Errorf("AcquireLease of a stale task: %v", err)
			}
			if !tt.wantStale && !errors.Is(err, ErrBusy) {
				t.Errorf("AcquireLease of a task StaleTasks left: err = %v, want ErrBusy", err)
			}
		})
	}

	t.Run("CheckIsNotAskedForATaskWithoutHolder", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustRelease(t, s, "return-25", "o1", "running", "lookup")
		asked := 0
		stale, err := s.StaleTasks(ctx, t0, func(Lease) Liveness { asked++; return HolderAlive })
		if err != nil {
			t.Fatal(err)
		}
		if len(stale) != 1 || stale[0].ID != "return-25" || asked != 0 {
			t.Errorf("StaleTasks = %v after %d checks, want [return-25] and no check", stale, asked)
		}
	})

	t.Run("StoppedTaskOfAGoneHolderIsNotStale", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustStop(t, s, "return-25")
		if stale, err := s.StaleTasks(ctx, t0, dead); err != nil || len(stale) != 0 {
			t.Errorf("StaleTasks = %v (%v), want none: recover does not resume a stop", stale, err)
		}
	})
}

func TestRenewLeaseSaysWhy(t *testing.T) {
	t.Parallel()
	forStores(t, testRenewLeaseSaysWhy)
}

func testRenewLeaseSaysWhy(t *testing.T, kind storeKind) {
	ctx := context.Background()
	until := t0.Add(5 * time.Minute)
	tests := []struct {
		name    string
		setup   func(t *testing.T, s *Store)
		owner   string
		wantErr error // nil, ErrStopped, ErrLeaseLost or ErrNotFound
	}{
		{name: "HolderOfARunningTaskRenews", owner: "o1"},
		{
			name:  "AfterAStopIsErrStopped",
			setup: func(t *testing.T, s *Store) { mustStop(t, s, "return-25") },
			owner: "o1", wantErr: ErrStopped,
		},
		{
			name: "HolderThatRecordedWaitingIsErrStopped",
			setup: func(t *testing.T, s *Store) {
				if err := s.RecordProgress(ctx, "return-25", "o1", "waiting", "draft_ready"); err != nil {
					t.Fatal(err)
				}
			},
			owner: "o1", wantErr: ErrStopped,
		},
		{
			name:  "AfterAnotherOwnersTakeoverIsErrLeaseLost",
			setup: func(t *testing.T, s *Store) { mustAcquire(t, s, "return-25", o2, t0, dead) },
			owner: "o1", wantErr: ErrLeaseLost,
		},
		{
			name: "AfterAStopAndATakeoverIsErrLeaseLost",
			setup: func(t *testing.T, s *Store) {
				mustStop(t, s, "return-25")
				mustAcquire(t, s, "return-25", o2, t0, dead)
			},
			owner: "o1", wantErr: ErrLeaseLost,
		},
		{
			name:  "AfterTheReleaseIsErrLeaseLost",
			setup: func(t *testing.T, s *Store) { mustRelease(t, s, "return-25", "o1", "running", "lookup") },
			owner: "o1", wantErr: ErrLeaseLost,
		},
		{name: "AnotherOwnerIsErrLeaseLost", owner: "o2", wantErr: ErrLeaseLost},
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
			if tt.wantErr != nil {
				if !errors.Is(err, ErrConflict) {
					t.Errorf("err = %v does not match ErrConflict", err)
				}
				other := ErrStopped
				if tt.wantErr == ErrStopped {
					other = ErrLeaseLost
				}
				if errors.Is(err, other) {
					t.Errorf("err = %v also matches %v", err, other)
				}
			}
			want := before
			if tt.wantErr == nil {
				want.Lease.Until = until
			}
			if got := mustTask(t, s, "return-25"); got != want {
				t.Errorf("Task = %+v, want %+v", got, want)
			}
		})
	}

	t.Run("UnknownTaskIsErrNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		err := s.RenewLease(ctx, "nope", "o1", until)
		if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			t.Errorf("err = %v, want ErrNotFound only", err)
		}
	})
}

func TestReleaseAfterStop(t *testing.T) {
	t.Parallel()
	forStores(t, testReleaseAfterStop)
}

func testReleaseAfterStop(t *testing.T, kind storeKind) {
	ctx := context.Background()
	later := t0.Add(time.Minute)
	releases := []struct {
		name      string
		release   func(s *Store, ctx context.Context, taskID, owner, status, stage string) error
		keepsHeld bool
	}{
		{"ReleaseLease", (*Store).ReleaseLease, false},
		{"ReleaseLeaseSync", (*Store).ReleaseLeaseSync, false},
		{"RecordProgress", (*Store).RecordProgress, true},
	}
	// Whatever status the stopped run reports, the stop stands.
	statuses := []string{"done", "failed", "waiting", "running", "cancelled"}
	for _, r := range releases {
		t.Run(r.name, func(t *testing.T) {
			for _, status := range statuses {
				t.Run("KeepsInterruptedOver_"+status+"_AndRecordsStage", func(t *testing.T) {
					s, desk := newSeededOn(t, kind)
					mustCreateLeased(t, s, "return-25", holder)
					mustStop(t, s, "return-25")

					if err := r.release(New(desk.Handle(), fixed(later)), ctx, "return-25", "o1", status, "submitted"); err != nil {
						t.Fatal(err)
					}

					got := mustTask(t, s, "return-25")
					if got.Status != "interrupted" || got.Stage != "submitted" || !got.UpdatedAt.Equal(later) {
						t.Errorf("status %s stage %s updated %v, want interrupted submitted %v", got.Status, got.Stage, got.UpdatedAt, later)
					}
					wantLease := Lease{Epoch: 1}
					if r.keepsHeld {
						wantLease = atEpoch(holder, 1)
					}
					if got.Lease != wantLease {
						t.Errorf("Lease = %+v, want %+v", got.Lease, wantLease)
					}
				})
			}

			t.Run("AnotherOwnerIsConflictAndChangesNothing", func(t *testing.T) {
				s, desk := newSeededOn(t, kind)
				mustCreateLeased(t, s, "return-25", holder)
				mustStop(t, s, "return-25")
				before := mustTask(t, s, "return-25")
				err := r.release(New(desk.Handle(), fixed(later)), ctx, "return-25", "o2", "done", "submitted")
				if !errors.Is(err, ErrConflict) {
					t.Errorf("err = %v, want ErrConflict", err)
				}
				if got := mustTask(t, s, "return-25"); got != before {
					t.Errorf("Task = %+v, want unchanged %+v", got, before)
				}
			})

			t.Run("StoppedHolderAfterATakeoverIsConflict", func(t *testing.T) {
				s, _ := newSeededOn(t, kind)
				mustCreateLeased(t, s, "return-25", holder)
				mustStop(t, s, "return-25")
				mustAcquire(t, s, "return-25", o2, t0, dead)
				before := mustTask(t, s, "return-25")
				if err := r.release(s, ctx, "return-25", "o1", "interrupted", "prepare"); !errors.Is(err, ErrConflict) {
					t.Errorf("err = %v, want ErrConflict", err)
				}
				if got := mustTask(t, s, "return-25"); got != before {
					t.Errorf("Task = %+v, want unchanged %+v", got, before)
				}
			})

			// A stop is final for the run it stopped, not for the task: the
			// run that resumes it reports its own status.
			t.Run("TheRunAfterTheStopRecordsItsStatus", func(t *testing.T) {
				s, _ := newSeededOn(t, kind)
				mustCreateLeased(t, s, "return-25", holder)
				mustStop(t, s, "return-25")
				mustRelease(t, s, "return-25", "o1", "done", "prepare")
				mustAcquire(t, s, "return-25", o2, t0, alive)
				if err := r.release(s, ctx, "return-25", "o2", "done", "submitted"); err != nil {
					t.Fatal(err)
				}
				if got := mustTask(t, s, "return-25"); got.Status != "done" || got.Stage != "submitted" {
					t.Errorf("status %s stage %s, want done submitted", got.Status, got.Stage)
				}
			})
		})
	}
}

func TestBeginSteps(t *testing.T) {
	t.Parallel()
	forStores(t, testBeginSteps)
}

func testBeginSteps(t *testing.T, kind storeKind) {
	ctx := context.Background()
	t1 := t0.Add(time.Second)
	held := atEpoch(holder, 1) // what mustCreateLeased gives o1

	t.Run("RecordsARunningStepPerNodeInOrder", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustRun(t, s, "return-25", []ran{{"lookup", StepDone, ""}, {"prepare", StepFailed, "boom"}})

		seqs, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"prepare", "confirm", "notify"}, Now: t1, Max: 5})
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{3, 4, 5}; !slices.Equal(seqs, want) {
			t.Errorf("seqs = %v, want %v", seqs, want)
		}
		want := []TimelineStep{
			{Task: "return-25", Seq: 3, Node: "prepare", Attempt: 2, Status: StepRunning, StartedAt: t1},
			{Task: "return-25", Seq: 4, Node: "confirm", Attempt: 1, Status: StepRunning, StartedAt: t1},
			{Task: "return-25", Seq: 5, Node: "notify", Attempt: 1, Status: StepRunning, StartedAt: t1},
		}
		if got := stepsOf(t, s, "return-25")[2:]; !slices.Equal(got, want) {
			t.Errorf("new steps = %+v, want %+v", got, want)
		}
	})

	t.Run("AttemptCountsEveryStepOfTheNodeInterruptedOnesToo", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustRun(t, s, "return-25", []ran{
			{"lookup", StepDone, ""},
			{"lookup", StepFailed, MsgInterrupted},
			{"lookup", StepWaiting, ""},
		})
		if _, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t1, Max: 5}); err != nil {
			t.Fatal(err)
		}
		if last := stepsOf(t, s, "return-25")[3]; last.Attempt != 4 || last.Seq != 4 {
			t.Errorf("new step = %+v, want seq 4 attempt 4", last)
		}
	})

	t.Run("NoNodesWritesNothing", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		seqs, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: nil, Now: t1, Max: 5})
		if err != nil || len(seqs) != 0 {
			t.Errorf("BeginSteps = %v (%v), want no seqs", seqs, err)
		}
		if got := stepsOf(t, s, "return-25"); len(got) != 0 {
			t.Errorf("Steps = %+v, want none", got)
		}
	})

	// Each case starts from return-25 held by o1 at epoch 1 with one done
	// step, runs setup, then begins a step as holder; nothing may be
	// written.
	refused := []struct {
		name    string
		setup   func(t *testing.T, s *Store)
		holder  Lease
		wantErr error // ErrStopped or ErrLeaseLost
	}{
		{
			name:   "StoppedTaskIsErrStopped",
			setup:  func(t *testing.T, s *Store) { mustStop(t, s, "return-25") },
			holder: held, wantErr: ErrStopped,
		},
		{
			name: "HolderThatRecordedWaitingIsErrStopped",
			setup: func(t *testing.T, s *Store) {
				if err := s.RecordProgress(ctx, "return-25", "o1", "waiting", "draft_ready"); err != nil {
					t.Fatal(err)
				}
			},
			holder: held, wantErr: ErrStopped,
		},
		{
			name:   "TakenOverTaskIsErrLeaseLost",
			setup:  func(t *testing.T, s *Store) { mustAcquire(t, s, "return-25", o2, t0, dead) },
			holder: held, wantErr: ErrLeaseLost,
		},
		{
			name:   "FormerOwnerAtTheNewEpochIsErrLeaseLost",
			setup:  func(t *testing.T, s *Store) { mustAcquire(t, s, "return-25", o2, t0, dead) },
			holder: atEpoch(holder, 2), wantErr: ErrLeaseLost,
		},
		{
			name: "StoppedThenTakenOverIsErrLeaseLost",
			setup: func(t *testing.T, s *Store) {
				mustStop(t, s, "return-25")
				mustAcquire(t, s, "return-25", o2, t0, dead)
			},
			holder: held, wantErr: ErrLeaseLost,
		},
		{
			name:   "ReleasedTaskIsErrLeaseLost",
			setup:  func(t *testing.T, s *Store) { mustRelease(t, s, "return-25", "o1", "running", "lookup") },
			holder: held, wantErr: ErrLeaseLost,
		},
		{name: "AnotherOwnerAtTheCurrentEpochIsErrLeaseLost", holder: atEpoch(o2, 1), wantErr: ErrLeaseLost},
		// The same owner at another epoch: a later lease of this owner
		// holds the task, and the run of the old one must stop writing.
		{
			name: "SameOwnerAtAnOldEpochIsLeaseLost",
			setup: func(t *testing.T, s *Store) {
				if a := mustAcquire(t, s, "return-25", holder, t0, alive); a.Epoch != 2 {
					t.Fatalf("reacquired at epoch %d, want 2", a.Epoch)
				}
			},
			holder: held, wantErr: ErrLeaseLost,
		},
		{name: "SameOwnerAtAFutureEpochIsLeaseLost", holder: atEpoch(holder, 2), wantErr: ErrLeaseLost},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			mustRun(t, s, "return-25", []ran{{"lookup", StepDone, ""}})
			if tt.setup != nil {
				tt.setup(t, s)
			}
			before := stepsOf(t, s, "return-25")

			seqs, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: tt.holder, Nodes: []string{"prepare", "confirm"}, Now: t1, Max: 5})

			if !errors.Is(err, tt.wantErr) || !errors.Is(err, ErrConflict) {
				t.Fatalf("BeginSteps: err = %v, want %v (an ErrConflict)", err, tt.wantErr)
			}
			other := ErrStopped
			if tt.wantErr == ErrStopped {
				other = ErrLeaseLost
			}
			if errors.Is(err, other) || errors.Is(err, ErrAttemptsExhausted) {
				t.Errorf("err = %v matches more than %v", err, tt.wantErr)
			}
			if seqs != nil {
				t.Errorf("seqs = %v, want none", seqs)
			}
			if got := stepsOf(t, s, "return-25"); !slices.Equal(got, before) {
				t.Errorf("Steps = %+v, want unchanged %+v", got, before)
			}
		})
	}

	t.Run("UnknownTaskIsErrNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		_, err := s.BeginSteps(ctx, "nope", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t1, Max: 5})
		if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			t.Errorf("err = %v, want ErrNotFound only", err)
		}
		if got := stepsOf(t, s, "nope"); len(got) != 0 {
			t.Errorf("Steps = %+v, want none", got)
		}
	})

	// A batch chunk runs its rows' steps inside the desk's transaction: a
	// refusal there undoes only its own savepoint.
	t.Run("RefusalInsideInTxLeavesTheTransactionUsable", func(t *testing.T) {
		s, desk := newSeededOn(t, kind)
		mustCreateLeased(t, s, "a", holder)
		mustCreateLeased(t, s, "b", o2)
		err := desk.InTx(ctx, func(tx *business.Store) error {
			rs := New(tx.Handle(), fixed(t0))
			if _, err := rs.BeginSteps(ctx, "b", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t1, Max: 5}); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("BeginSteps of b as o1: err = %v, want ErrLeaseLost", err)
			}
			_, err := rs.BeginSteps(ctx, "a", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t1, Max: 5})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := stepsOf(t, s, "a"), stepsOf(t, s, "b"); len(a) != 1 || len(b) != 0 {
			t.Errorf("steps: a %+v, b %+v; want one step of a and none of b", a, b)
		}
	})
}

func TestBeginStepsBoundsAttempts(t *testing.T) {
	t.Parallel()
	forStores(t, testBeginStepsBoundsAttempts)
}

func testBeginStepsBoundsAttempts(t *testing.T, kind storeKind) {
	ctx := context.Background()
	t1 := t0.Add(time.Second)
	held := atEpoch(holder, 1)

	// Each case records past on return-25's timeline, then begins one step
	// of node with max. wantAttempt 0 means refused.
	tests := []struct {
		name        string
		past        [][]ran
		node        string
		max         int
		wantAttempt int
	}{
		{name: "FirstRunIsAttemptOne", node: "lookup", max: 5, wantAttempt: 1},
		{name: "FourFailuresAllowAFifthTry", past: [][]ran{repeat(4, "lookup", StepFailed, "boom")}, node: "lookup", max: 5, wantAttempt: 5},
		{name: "FiveFailuresRefuseASixth", past: [][]ran{repeat(5, "lookup", StepFailed, "boom")}, node: "lookup", max: 5},
		{name: "SixFailuresRefuse", past: [][]ran{repeat(6, "lookup", StepFailed, "boom")}, node: "lookup", max: 5},
		{
			name: "ADoneStepResetsTheCount",
			past: [][]ran{repeat(4, "lookup", StepFailed, "boom"), {{"lookup", StepDone, ""}}, repeat(4, "lookup", StepFailed, "boom")},
			node: "lookup", max: 5, wantAttempt: 10,
		},
		{
			name: "FiveFailuresAfterADoneRefuse",
			past: [][]ran{repeat(4, "lookup", StepFailed, "boom"), {{"lookup", StepDone, ""}}, repeat(5, "lookup", StepFailed, "boom")},
			node: "lookup", max: 5,
		},
		{
			name: "AWaitingStepResetsTheCount",
			past: [][]ran{repeat(5, "lookup", StepFailed, "boom"), {{"lookup", StepWaiting, ""}}},
			node: "lookup", max: 5, wantAttempt: 7,
		},
		{
			name: "InterruptedFailuresDoNotCount",
			past: [][]ran{repeat(4, "lookup", StepFailed, "boom"), repeat(3, "lookup", StepFailed, MsgInterrupted)},
			node: "lookup", max: 5, wantAttempt: 8,
		},
		{
			name: "InterruptedFailuresDoNotResetTheCount",
			past: [][]ran{repeat(3, "lookup", StepFailed, "boom"), {{"lookup", StepFailed, MsgInterrupted}}, repeat(2, "lookup", StepFailed, "boom")},
			node: "lookup", max: 5,
		},
		{name: "ProcessGoneFailuresCount", past: [][]ran{repeat(5, "lookup", StepFailed, MsgProcessGone)}, node: "lookup", max: 5},
		{name: "StepsLeftRunningCount", past: [][]ran{repeat(5, "lookup", StepRunning, "")}, node: "lookup", max: 5},
		{
			name: "OtherNodesFailuresDoNotCount",
			past: [][]ran{repeat(5, "prepare", StepFailed, "boom"), repeat(4, "lookup", StepFailed, "boom")},
			node: "lookup", max: 5, wantAttempt: 5,
		},
		{
			name: "OtherNodesDoneDoesNotReset",
			past: [][]ran{repeat(3, "lookup", StepFailed, "boom"), {{"prepare", StepDone, ""}}, repeat(2, "lookup", StepFailed, "boom")},
			node: "lookup", max: 5,
		},
		{name: "MaxOneRefusesAfterOneFailure", past: [][]ran{{{"lookup", StepFailed, "boom"}}}, node: "lookup", max: 1},
		{name: "MaxZeroIsUnbounded", past: [][]ran{repeat(7, "lookup", StepFailed, "boom")}, node: "lookup", max: 0, wantAttempt: 8},
		{name: "NegativeMaxIsUnbounded", past: [][]ran{repeat(7, "lookup", StepFailed, "boom")}, node: "lookup", max: -1, wantAttempt: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			mustRun(t, s, "return-25", tt.past...)
			before := stepsOf(t, s, "return-25")

			seqs, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{tt.node}, Now: t1, Max: tt.max})

			if tt.wantAttempt == 0 {
				var ae *AttemptsError
				if !errors.As(err, &ae) || !errors.Is(err, ErrAttemptsExhausted) {
					t.Fatalf("BeginSteps: err = %v, want *AttemptsError matching ErrAttemptsExhausted", err)
				}
				if want := (AttemptsError{Task: "return-25", Node: tt.node, Max: tt.max}); *ae != want {
					t.Errorf("AttemptsError = %+v, want %+v", *ae, want)
				}
				if errors.Is(err, ErrConflict) {
					t.Errorf("err = %v matches ErrConflict", err)
				}
				if msg := err.Error(); !strings.Contains(msg, tt.node) || !strings.Contains(msg, "return-25") {
					t.Errorf("message %q names neither node %s nor the task", msg, tt.node)
				}
				if got := stepsOf(t, s, "return-25"); seqs != nil || !slices.Equal(got, before) {
					t.Errorf("seqs %v, Steps = %+v; want none written", seqs, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("BeginSteps: %v", err)
			}
			want := TimelineStep{Task: "return-25", Seq: len(before) + 1, Node: tt.node, Attempt: tt.wantAttempt, Status: StepRunning, StartedAt: t1}
			if got := stepsOf(t, s, "return-25"); !slices.Equal(seqs, []int{want.Seq}) || !slices.Equal(got, append(before, want)) {
				t.Errorf("seqs %v, last step %+v; want [%d], %+v", seqs, got[len(got)-1], want.Seq, want)
			}
		})
	}

	t.Run("AnExhaustedNodeWritesNoStepForTheOthers", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustRun(t, s, "return-25", repeat(5, "lookup", StepFailed, "boom"))
		before := stepsOf(t, s, "return-25")

		_, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"prepare", "lookup", "confirm"}, Now: t1, Max: 5})

		var ae *AttemptsError
		if !errors.As(err, &ae) || ae.Node != "lookup" {
			t.Fatalf("err = %v, want *AttemptsError for lookup", err)
		}
		if got := stepsOf(t, s, "return-25"); !slices.Equal(got, before) {
			t.Errorf("Steps = %+v, want unchanged %+v", got, before)
		}
	})

	// The lease is checked before the attempts: a stopped run hears of the
	// stop, not of its node.
	t.Run("AStopIsReportedBeforeExhaustion", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustRun(t, s, "return-25", repeat(5, "lookup", StepFailed, "boom"))
		mustStop(t, s, "return-25")
		_, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t1, Max: 5})
		if !errors.Is(err, ErrStopped) || errors.Is(err, ErrAttemptsExhausted) {
			t.Errorf("err = %v, want ErrStopped only", err)
		}
	})

	t.Run("FailingTheFifthTimeThroughTheAPIRefusesTheNext", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		for i := 1; i <= 5; i++ {
			seqs, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t1, Max: 5})
			if err != nil {
				t.Fatalf("try %d: %v", i, err)
			}
			if last := stepsOf(t, s, "return-25")[i-1]; last.Attempt != i {
				t.Errorf("try %d recorded attempt %d", i, last.Attempt)
			}
			if err := s.EndStep(ctx, "return-25", seqs[0], StepFailed, "boom", t1); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{"lookup"}, Now: t1, Max: 5}); !errors.Is(err, ErrAttemptsExhausted) {
			t.Errorf("sixth try: err = %v, want ErrAttemptsExhausted", err)
		}
	})
}

func TestFailedSteps(t *testing.T) {
	t.Parallel()
	forStores(t, testFailedSteps)
}

func testFailedSteps(t *testing.T, kind storeKind) {
	ctx := context.Background()
	held := atEpoch(holder, 1)
	nodes := []string{"lookup", "prepare", "confirm"}

	tests := []struct {
		name string
		past [][]ran
		want map[string]int
	}{
		{name: "EmptyTimelineIsNone", want: map[string]int{}},
		{name: "DoneStepsAreNone", past: [][]ran{{{"lookup", StepDone, ""}, {"prepare", StepWaiting, ""}}}, want: map[string]int{}},
		{
			name: "CountsFailuresInARowPerNode",
			past: [][]ran{
				repeat(2, "lookup", StepFailed, "boom"),
				{{"prepare", StepFailed, MsgProcessGone}},
				{{"lookup", StepDone, ""}},
				repeat(3, "lookup", StepFailed, "boom"),
				{{"confirm", StepRunning, ""}},
			},
			want: map[string]int{"lookup": 3, "prepare": 1, "confirm": 1},
		},
		{
			name: "InterruptedFailuresAreLeftOut",
			past: [][]ran{
				repeat(2, "lookup", StepFailed, "boom"),
				repeat(2, "lookup", StepFailed, MsgInterrupted),
				{{"prepare", StepFailed, MsgInterrupted}},
			},
			want: map[string]int{"lookup": 2},
		},
		{
			name: "AWaitingStepResets",
			past: [][]ran{repeat(5, "lookup", StepFailed, "boom"), {{"lookup", StepWaiting, ""}}, {{"lookup", StepFailed, "boom"}}},
			want: map[string]int{"lookup": 1},
		},
		{
			name: "FiveInARow",
			past: [][]ran{repeat(4, "lookup", StepFailed, "boom"), {{"lookup", StepRunning, ""}}},
			want: map[string]int{"lookup": 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSeededOn(t, kind)
			mustCreateLeased(t, s, "return-25", holder)
			mustRun(t, s, "return-25", tt.past...)

			got, err := s.FailedSteps(ctx, "return-25")
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("FailedSteps = %v, want %v", got, tt.want)
			}

			// BeginSteps counts the same: it refuses a node at max = its
			// count and allows it at one more.
			for _, node := range nodes {
				n := got[node]
				if n > 0 {
					if _, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{node}, Now: t0, Max: n}); !errors.Is(err, ErrAttemptsExhausted) {
						t.Errorf("BeginSteps(%s, max %d): err = %v, want ErrAttemptsExhausted", node, n, err)
					}
				}
				if _, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: held, Nodes: []string{node}, Now: t0, Max: n + 1}); err != nil {
					t.Errorf("BeginSteps(%s, max %d): %v", node, n+1, err)
				}
			}
			// Until it ends, the step just begun counts as failed: its
			// process may die in it.
			after, err := s.FailedSteps(ctx, "return-25")
			if err != nil {
				t.Fatal(err)
			}
			for _, node := range nodes {
				if after[node] != got[node]+1 {
					t.Errorf("FailedSteps[%s] after a begun step = %d, want %d", node, after[node], got[node]+1)
				}
			}
		})
	}

	t.Run("CountsOnlyTheTasksOwnSteps", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		mustCreateLeased(t, s, "return-25", holder)
		mustCreateLeased(t, s, "return-26", holder)
		mustRun(t, s, "return-26", repeat(3, "lookup", StepFailed, "boom"))
		mustRun(t, s, "return-25", []ran{{"lookup", StepFailed, "boom"}})
		got, err := s.FailedSteps(ctx, "return-25")
		if err != nil || !maps.Equal(got, map[string]int{"lookup": 1}) {
			t.Errorf("FailedSteps = %v (%v), want map[lookup:1]", got, err)
		}
	})

	t.Run("UnknownTaskIsNone", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		got, err := s.FailedSteps(ctx, "nope")
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("FailedSteps = %#v (%v), want an empty map", got, err)
		}
	})
}

// TestFencingOnAClosedFile checks that the fencing methods report a file
// they cannot use as an error, never as an answer a caller acts on.
func TestFencingOnAClosedFile(t *testing.T) {
	t.Parallel()
	forStores(t, testFencingOnAClosedFile)
}

func testFencingOnAClosedFile(t *testing.T, kind storeKind) {
	ctx := context.Background()
	calls := []struct {
		name string
		call func(s *Store) error
	}{
		{"BeginSteps", func(s *Store) error {
			_, err := s.BeginSteps(ctx, "return-25", Superstep{Holder: atEpoch(holder, 1), Nodes: []string{"lookup"}, Now: t0, Max: 5})
			return err
		}},
		{"FailedSteps", func(s *Store) error { _, err := s.FailedSteps(ctx, "return-25"); return err }},
		{"AcquireLease", func(s *Store) error { _, err := s.AcquireLease(ctx, "return-25", o2, t0, alive); return err }},
		{"RenewLease", func(s *Store) error { return s.RenewLease(ctx, "return-25", "o1", t0) }},
		{"StaleTasks", func(s *Store) error { _, err := s.StaleTasks(ctx, t0, alive); return err }},
	}
	s, desk := newSeededOn(t, kind)
	mustCreateLeased(t, s, "return-25", holder)
	if err := desk.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call(s)
			if err == nil {
				t.Fatal("succeeded on a closed file")
			}
			for _, answer := range []error{ErrNotFound, ErrConflict, ErrBusy, ErrStopped, ErrLeaseLost, ErrAttemptsExhausted} {
				if errors.Is(err, answer) {
					t.Errorf("err = %v, reported as %v", err, answer)
				}
			}
		})
	}
}
