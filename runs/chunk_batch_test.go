package runs

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// TestChunkReads: the set-based reads of a decide chunk give what the
// one-task reads give: TasksIn the records Task reads (unknown tasks left
// out), StepTallies the counts of StepCounts and FailedSteps of each task.
func TestChunkReads(t *testing.T) {
	t.Parallel()
	forStores(t, testChunkReads)
}

func testChunkReads(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	for _, id := range []string{"a", "b", "c"} {
		if err := s.CreateTask(ctx, TaskRecord{ID: id, User: "u", Status: "waiting"}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []TimelineStep{
		{Task: "a", Seq: 1, Node: "lookup", Attempt: 1, Status: StepDone},
		{Task: "a", Seq: 2, Node: "prepare", Attempt: 1, Status: StepFailed, Error: "boom"},
		{Task: "a", Seq: 3, Node: "prepare", Attempt: 2, Status: StepRunning},
		{Task: "a", Seq: 4, Node: "review", Attempt: 1, Status: StepFailed, Error: MsgInterrupted},
		{Task: "b", Seq: 1, Node: "prepare", Attempt: 1, Status: StepFailed, Error: "boom"},
		{Task: "b", Seq: 2, Node: "prepare", Attempt: 2, Status: StepDone},
		{Task: "b", Seq: 3, Node: "review", Attempt: 1, Status: StepWaiting},
	}
	for _, st := range steps {
		st.StartedAt, st.EndedAt = t0, t0
		if st.Status == StepRunning {
			st.EndedAt = time.Time{}
		}
		if err := s.AddStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	ids := []string{"a", "b", "c", "nobody"}
	recs, err := s.TasksIn(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := recs["nobody"]; ok || len(recs) != 3 {
		t.Fatalf("TasksIn: %d records %v; want a, b and c", len(recs), recs)
	}
	tallies, err := s.StepTallies(ctx, ids[:3])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:3] {
		one, err := s.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(recs[id], one) {
			t.Errorf("TasksIn %s = %+v; Task reads %+v", id, recs[id], one)
		}
		top, attempts, err := s.StepCounts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		failed, err := s.FailedSteps(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := StepTally{Top: top, Attempts: attempts, Failed: failed}
		if got := tallies[id]; !reflect.DeepEqual(got, want) {
			t.Errorf("StepTallies %s = %+v; StepCounts and FailedSteps read %+v", id, got, want)
		}
	}
	if got := tallies["a"].Failed["prepare"]; got != 2 {
		t.Errorf("a's failed prepare attempts = %d, want 2 (failed, then left running)", got)
	}
}

// TestAcquireRead: the one-statement lease take of a decide chunk takes a
// lease the record shows free and is still current, as AcquireLease does
// (epoch raised, running); a record that shows a holder, or one the task
// has moved on from (another epoch or status), takes nothing and writes
// nothing.
func TestAcquireRead(t *testing.T) {
	t.Parallel()
	forStores(t, testAcquireRead)
}

func testAcquireRead(t *testing.T, kind storeKind) {
	ctx := context.Background()
	s, _ := newSeededOn(t, kind)
	if err := s.CreateTask(ctx, TaskRecord{ID: "a", User: "u", Status: "waiting"}); err != nil {
		t.Fatal(err)
	}
	me := Lease{Owner: "me", PID: 7, Host: "h", Until: t0.Add(time.Minute)}
	read, err := s.Task(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	stale := read
	stale.Lease.Epoch++
	other := read
	other.Status = "done"
	held := read
	held.Lease.Owner = "someone"
	for name, rec := range map[string]TaskRecord{"stale epoch": stale, "other status": other, "held": held} {
		if _, ok, err := s.AcquireRead(ctx, rec, me, t0); err != nil || ok {
			t.Fatalf("AcquireRead of a record %s = %v, %v; want nothing taken", name, ok, err)
		}
		if now, _ := s.Task(ctx, "a"); !reflect.DeepEqual(now, read) {
			t.Fatalf("AcquireRead of a record %s wrote %+v", name, now)
		}
	}
	got, ok, err := s.AcquireRead(ctx, read, me, t0)
	if err != nil || !ok || got.Epoch != read.Lease.Epoch+1 || got.PrevStatus != "waiting" {
		t.Fatalf("AcquireRead of a free lease = %+v, %v, %v; want epoch %d, from waiting", got, ok, err, read.Lease.Epoch+1)
	}
	now, err := s.Task(ctx, "a")
	if err != nil || now.Status != "running" || now.Lease.Owner != "me" || now.Lease.Epoch != got.Epoch {
		t.Fatalf("after AcquireRead: %+v, %v; want running, held by me at epoch %d", now, err, got.Epoch)
	}
	if _, ok, _ := s.AcquireRead(ctx, read, me, t0); ok {
		t.Fatal("AcquireRead of the same record again took the lease twice")
	}
}
