package returns_test

import (
	"testing"
	"time"

	"assistant/flow"
	"assistant/flow/returns"
)

func TestPrune(t *testing.T) {
	checkpointsOf := func(tb testing.TB, b *bundle, task string) int {
		tb.Helper()
		cps, err := b.cps.List(b.ctx, task, flow.ListOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		return len(cps)
	}

	t.Run("RemovesOldCheckpointsOfFinishedTasksOnly", func(t *testing.T) {
		svc, b := setupSQLite(t)
		mustStart(t, svc, "done", "A3003", "size")
		mustResume(t, svc, approve("done"))
		mustStart(t, svc, "parked", "A3001", "size")
		b.clock.Advance(2 * time.Hour)
		mustStart(t, svc, "recent", "A3002", "size")
		mustResume(t, svc, cancel("recent"))
		parked, recent := checkpointsOf(t, b, "parked"), checkpointsOf(t, b, "recent")

		r, err := svc.Prune(b.ctx, returns.PruneOptions{FinishedBefore: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Tasks) != 1 || r.Tasks[0].Task != "done" || r.Tasks[0].Status != returns.StatusDone || r.Rows == 0 || r.Bytes == 0 {
			t.Fatalf("report %+v, want only done pruned", r)
		}
		if n := checkpointsOf(t, b, "done"); n != returns.DefaultPruneKeep {
			t.Fatalf("done keeps %d checkpoints, want %d", n, returns.DefaultPruneKeep)
		}
		if checkpointsOf(t, b, "parked") != parked || checkpointsOf(t, b, "recent") != recent {
			t.Fatal("a waiting or recently finished task lost checkpoints")
		}
		v, err := svc.Show(b.ctx, "done", user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusDone, returns.StageSubmitted)

		again, err := svc.Prune(b.ctx, returns.PruneOptions{FinishedBefore: time.Hour})
		if err != nil || again.Rows != 0 {
			t.Fatalf("second prune %+v (%v), want nothing removed", again, err)
		}
	})

	t.Run("KeepsAsManyAsAsked", func(t *testing.T) {
		svc, b := setupSQLite(t)
		mustStart(t, svc, "done", "A3003", "size")
		mustResume(t, svc, approve("done"))
		b.clock.Advance(2 * time.Hour)
		if _, err := svc.Prune(b.ctx, returns.PruneOptions{FinishedBefore: time.Hour, Keep: 2}); err != nil {
			t.Fatal(err)
		}
		if n := checkpointsOf(t, b, "done"); n != 2 {
			t.Fatalf("done keeps %d checkpoints, want 2", n)
		}
	})

	t.Run("BadOptionsAreInvalid", func(t *testing.T) {
		svc, b := setupSQLite(t)
		for _, o := range []returns.PruneOptions{{}, {FinishedBefore: -time.Hour}, {FinishedBefore: time.Hour, Keep: -1}} {
			_, err := svc.Prune(b.ctx, o)
			wantErr(t, err, returns.ErrInvalid)
		}
	})

	t.Run("StoreThatCannotPruneIsInvalid", func(t *testing.T) {
		svc, b := setup(t) // checkpoints.Memory is no flow.Pruner
		_, err := svc.Prune(b.ctx, returns.PruneOptions{FinishedBefore: time.Hour})
		wantErr(t, err, returns.ErrInvalid)
	})
}

// TestPruneDryRun: a dry run reports what prune would remove (the same
// tasks and rows) and writes nothing.
func TestPruneDryRun(t *testing.T) {
	for _, keep := range []int{1, 2} {
		svc, b := setupSQLite(t)
		mustStart(t, svc, "done", "A3003", "size")
		mustResume(t, svc, approve("done"))
		mustStart(t, svc, "cancelled", "A3002", "size")
		mustResume(t, svc, cancel("cancelled"))
		mustStart(t, svc, "parked", "A3001", "size")
		b.clock.Advance(2 * time.Hour)
		before, err := b.cps.List(b.ctx, "done", flow.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dry, err := svc.Prune(b.ctx, returns.PruneOptions{FinishedBefore: time.Hour, Keep: keep, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		after, _ := b.cps.List(b.ctx, "done", flow.ListOptions{})
		if !dry.DryRun || len(after) != len(before) || dry.Rows == 0 || dry.Bytes == 0 {
			t.Fatalf("keep %d: dry run %+v, %d checkpoints after (%d before); want a report and nothing removed", keep, dry, len(after), len(before))
		}
		real, err := svc.Prune(b.ctx, returns.PruneOptions{FinishedBefore: time.Hour, Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		if real.DryRun || len(real.Tasks) != len(dry.Tasks) || real.Rows != dry.Rows {
			t.Fatalf("keep %d: prune %+v after the dry run %+v; want the rows the dry run named", keep, real, dry)
		}
		for i := range real.Tasks {
			if real.Tasks[i].Task != dry.Tasks[i].Task || real.Tasks[i].Rows != dry.Tasks[i].Rows {
				t.Fatalf("keep %d: task %+v, dry run said %+v", keep, real.Tasks[i], dry.Tasks[i])
			}
		}
	}
}
