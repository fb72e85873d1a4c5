package returns_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"assistant/flow/returns"
	"assistant/runs"
)

// TestParseBatchFile adds to TestParseBatch (validate_test.go): the rows
// and fingerprint of a good file, and the refusals it does not list.
func TestParseBatchFile(t *testing.T) {
	t.Run("RowsAndFingerprint", func(t *testing.T) {
		const file = "task,order,reason\nb1,A3001, size \nb2,A3002,\n"
		rows, fp, err := returns.ParseBatch(strings.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		want := []runs.BatchRow{{RowNo: 1, Line: 2, TaskID: "b1", OrderID: "A3001", Reason: "size"}, {RowNo: 2, Line: 3, TaskID: "b2", OrderID: "A3002"}}
		if fmt.Sprint(rows) != fmt.Sprint(want) || len(fp) != 32 {
			t.Fatalf("rows %+v, fingerprint %q; want %+v and 16 hex bytes", rows, fp, want)
		}
		_, same, _ := returns.ParseBatch(strings.NewReader(file))
		_, other, _ := returns.ParseBatch(strings.NewReader(file + "b3,A3003,x\n"))
		if same != fp || other == fp {
			t.Fatalf("fingerprints %s, %s, %s: want the same file to match and another not", fp, same, other)
		}
	})

	t.Run("BadFileIsInvalid", func(t *testing.T) {
		const header = "task,order,reason\n"
		for name, file := range map[string]string{
			"Empty":           "",
			"TwoColumnHeader": "task,order\nb1,A3001\n",
			"BadOrderID":      header + "b1,A/3001,x\n",
			"ReasonTooLong":   header + "b1,A3001," + strings.Repeat("x", returns.MaxReasonRunes+1) + "\n",
			"BareQuote":       header + "b1,A\"3001,x\n",
		} {
			t.Run(name, func(t *testing.T) {
				_, _, err := returns.ParseBatch(strings.NewReader(file))
				wantErr(t, err, returns.ErrInvalid)
			})
		}
	})

	t.Run("NamesTheFirstTenBadLines", func(t *testing.T) {
		file := "task,order,reason\n" + strings.Repeat("a b,A3001,x\n", 12)
		_, _, err := returns.ParseBatch(strings.NewReader(file))
		wantErr(t, err, returns.ErrInvalid)
		if msg := err.Error(); !strings.Contains(msg, "line 2:") || !strings.Contains(msg, "line 11:") || strings.Contains(msg, "line 12:") || !strings.Contains(msg, "(and 2 more)") {
			t.Fatalf("error %q, want lines 2-11 named and 2 more counted", msg)
		}
	})
}

// batchFile is a batch with one row of every outcome; b6 and b7 are
// started before the batch runs (see startBatch).
const batchFile = `task,order,reason
b1,A3001,size
b2,A3002,
b3,A3005,late
b4,Z9999,unknown order
b5,B4001,another user's order
b6,A3003,colour
b7,A3004,broken
`

// startBatch starts b6 with other input than its row and b7 with the same,
// then runs batchFile as batch "bt" in chunks of two rows.
func startBatch(tb testing.TB, svc *returns.Service, b *bundle) (*returns.View, []int) {
	tb.Helper()
	mustStart(tb, svc, "b6", "A3003", "size")
	mustStart(tb, svc, "b7", "A3004", "broken")
	rows, fp, err := returns.ParseBatch(strings.NewReader(batchFile))
	if err != nil {
		tb.Fatal(err)
	}
	var progress []int
	svc.OnBatchProgress(func(done, total int) { progress = append(progress, done) })
	v, err := svc.StartBatch(b.ctx, returns.BatchOptions{Batch: "bt", User: user, Rows: rows, Fingerprint: fp, Chunk: 2})
	if err != nil {
		tb.Fatal(err)
	}
	return v, progress
}

var batchCounts = map[string]int{
	returns.StageDraftReady: 2, returns.StageNeedReason: 1, returns.StageFailed: 1, "not_found": 2, "conflict": 1,
}

func TestStartBatch(t *testing.T) {
	for name, setup := range map[string]func(testing.TB) (*returns.Service, *bundle){
		"SQLiteInChunks": setupSQLite, // flow.Bufferer: two commits per chunk
		"MemoryRowByRow": setup,
	} {
		t.Run(name, func(t *testing.T) {
			t.Run("RunsEveryRow", func(t *testing.T) {
				svc, b := setup(t)
				v, progress := startBatch(t, svc, b)
				wantView(t, v, returns.StatusDone, returns.StageBatchDone)
				if v.Batch.Position != 7 || v.Batch.Total != 7 || !maps.Equal(v.Batch.Counts, batchCounts) {
					t.Fatalf("batch %+v, want 7 of 7 rows counted as %v", v.Batch, batchCounts)
				}
				if fmt.Sprint(progress) != "[1 2 3 4 5 6 7]" {
					t.Fatalf("progress %v, want each row told", progress)
				}
				wantRecord(t, svc, "bt", returns.StatusDone, returns.StageBatchDone)
				wantRecord(t, svc, "b1", returns.StatusWaiting, returns.StageDraftReady)
				wantView(t, mustResume(t, svc, approve("b1")), returns.StatusDone, returns.StageSubmitted)
			})

			t.Run("SameBatchAgainShowsProgress", func(t *testing.T) {
				svc, b := setup(t)
				startBatch(t, svc, b)
				rows, fp, _ := returns.ParseBatch(strings.NewReader(batchFile))
				v, err := svc.StartBatch(b.ctx, returns.BatchOptions{Batch: "bt", User: user, Rows: rows, Fingerprint: fp})
				if err != nil {
					t.Fatal(err)
				}
				wantView(t, v, returns.StatusDone, returns.StageBatchDone)
				if !maps.Equal(v.Batch.Counts, batchCounts) {
					t.Fatalf("counts %v, want %v", v.Batch.Counts, batchCounts)
				}
			})

			t.Run("OtherFileOrUserIsConflict", func(t *testing.T) {
				svc, b := setup(t)
				startBatch(t, svc, b)
				rows, fp, _ := returns.ParseBatch(strings.NewReader("task,order,reason\nc1,A3008,x\n"))
				_, err := svc.StartBatch(b.ctx, returns.BatchOptions{Batch: "bt", User: user, Rows: rows, Fingerprint: fp})
				wantErr(t, err, returns.ErrConflict)
				_, err = svc.StartBatch(b.ctx, returns.BatchOptions{Batch: "bt", User: otherUser, Rows: rows, Fingerprint: fp})
				wantErr(t, err, returns.ErrConflict)
			})
		})
	}

	t.Run("BadBatchIDIsInvalid", func(t *testing.T) {
		svc, b := setup(t)
		rows, fp, _ := returns.ParseBatch(strings.NewReader(batchFile))
		_, err := svc.StartBatch(b.ctx, returns.BatchOptions{Batch: "b t", User: user, Rows: rows, Fingerprint: fp})
		wantErr(t, err, returns.ErrInvalid)
	})

	t.Run("ResumeOfBatchTakesNoAnswer", func(t *testing.T) {
		svc, b := setupSQLite(t)
		startBatch(t, svc, b)
		_, err := svc.Resume(b.ctx, returns.ResumeOptions{Task: "bt", User: user, Action: returns.ActionApprove})
		wantErr(t, err, returns.ErrInvalid)
		v := mustResume(t, svc, returns.ResumeOptions{Task: "bt"})
		wantView(t, v, returns.StatusDone, returns.StageBatchDone)
	})

	t.Run("ShowAndHistoryOfBatch", func(t *testing.T) {
		svc, b := setupSQLite(t)
		startBatch(t, svc, b)
		v, err := svc.Show(b.ctx, "bt", user)
		if err != nil || v.Batch == nil || v.Batch.Position != 7 || v.Order != "" {
			t.Fatalf("show %+v (%v), want the batch's progress", v, err)
		}
		h, err := svc.History(b.ctx, "bt", user)
		if err != nil {
			t.Fatal(err)
		}
		// Input, then one checkpoint per chunk of two rows.
		if h.Kind != runs.KindBatch || len(h.Checkpoints) != 5 || h.Checkpoints[0].DecodeError != "" {
			t.Fatalf("history kind %s, %d checkpoints (%+v); want a batch with 5", h.Kind, len(h.Checkpoints), h.Checkpoints)
		}
	})
}

// leftBatch records batch "bt" of batchFile's first three rows as a process
// left it that created it and died before its first checkpoint.
func leftBatch(tb testing.TB, svc *returns.Service, b *bundle) {
	tb.Helper()
	heldBatch(tb, svc, b, b.deadLease())
}

// heldBatch records batch "bt" of batchFile's first three rows as created
// by the process holding lease holder, before its first checkpoint, and
// returns the options that start the same batch again.
func heldBatch(tb testing.TB, svc *returns.Service, b *bundle, holder runs.Lease) returns.BatchOptions {
	tb.Helper()
	rows, fp, err := returns.ParseBatch(strings.NewReader(strings.Join(strings.SplitAfter(batchFile, "\n")[:4], "")))
	if err != nil {
		tb.Fatal(err)
	}
	t := runs.TaskRecord{ID: "bt", User: user, Fingerprint: "batch:" + fp, Status: returns.StatusRunning, Kind: runs.KindBatch}
	if err := svc.Runs().CreateBatch(b.ctx, t, holder, rows); err != nil {
		tb.Fatal(err)
	}
	return returns.BatchOptions{Batch: "bt", User: user, Rows: rows, Fingerprint: fp}
}

func TestBatchAfterCrash(t *testing.T) {
	t.Run("ShowBeforeFirstCheckpointCountsStoredRows", func(t *testing.T) {
		svc, b := setupSQLite(t)
		leftBatch(t, svc, b)
		v, err := svc.Show(b.ctx, "bt", user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusRunning, "")
		if v.Batch.Total != 3 || v.Batch.Position != 0 || v.Holder == nil || v.Holder.Alive {
			t.Fatalf("batch %+v, holder %+v; want 0 of 3 rows, a dead holder", v.Batch, v.Holder)
		}
	})

	t.Run("ResumeRunsItFromItsRows", func(t *testing.T) {
		svc, b := setupSQLite(t)
		leftBatch(t, svc, b)
		v := mustResume(t, svc, returns.ResumeOptions{Task: "bt"})
		wantView(t, v, returns.StatusDone, returns.StageBatchDone)
		if v.Batch.Position != 3 {
			t.Fatalf("batch %+v, want 3 rows handled", v.Batch)
		}
	})

	t.Run("RecoverRunsIt", func(t *testing.T) {
		svc, b := setupSQLite(t)
		leftBatch(t, svc, b)
		got, err := svc.Recover(b.ctx)
		if err != nil || len(got) != 1 || got[0].Task != "bt" || got[0].Status != returns.StatusDone {
			t.Fatalf("recover %+v (%v), want bt done", got, err)
		}
	})

	t.Run("StoppedThenResumed", func(t *testing.T) {
		svc, b := setupSQLite(t)
		leftBatch(t, svc, b)
		v, err := svc.Stop(b.ctx, "bt", user, 0)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusInterrupted, "")
		wantView(t, mustResume(t, svc, returns.ResumeOptions{Task: "bt"}), returns.StatusDone, returns.StageBatchDone)
	})

	// The same batch command again: it continues a
	// stopped or abandoned batch to its end, and is busy while another
	// live process holds it.
	t.Run("SameBatchAgainContinuesAStoppedOne", func(t *testing.T) {
		svc, b := setupSQLite(t)
		again := heldBatch(t, svc, b, b.deadLease())
		if _, err := svc.Stop(b.ctx, "bt", user, 0); err != nil {
			t.Fatal(err)
		}
		v, err := svc.StartBatch(b.ctx, again)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusDone, returns.StageBatchDone)
		if v.Batch.Position != 3 {
			t.Fatalf("batch %+v, want 3 rows handled", v.Batch)
		}
		wantRecord(t, svc, "bt", returns.StatusDone, returns.StageBatchDone)
	})

	t.Run("SameBatchAgainContinuesAnAbandonedOne", func(t *testing.T) {
		svc, b := setupSQLite(t)
		again := heldBatch(t, svc, b, b.deadLease())
		v, err := svc.StartBatch(b.ctx, again)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusDone, returns.StageBatchDone)
		if v.Batch.Position != 3 {
			t.Fatalf("batch %+v, want 3 rows handled", v.Batch)
		}
	})

	t.Run("SameBatchAgainWhileHeldIsBusy", func(t *testing.T) {
		svc, b := setupSQLite(t)
		holder := b.liveLease()
		again := heldBatch(t, svc, b, holder)
		_, err := svc.StartBatch(b.ctx, again)
		wantErr(t, err, returns.ErrConflict)
		var held *runs.LeaseHeldError
		if !errors.As(err, &held) || held.Lease.PID != holder.PID || held.Lease.Host != holder.Host {
			t.Fatalf("error %v, want one naming pid %d on %s", err, holder.PID, holder.Host)
		}
		wantRecord(t, svc, "bt", returns.StatusRunning, "")
		if l, _, err := svc.Runs().TaskLease(b.ctx, "bt"); err != nil || l.Owner != holder.Owner {
			t.Fatalf("lease %+v (%v), want still %s's", l, err, holder.Owner)
		}
	})

	t.Run("RowLeftRunningIsContinued", func(t *testing.T) {
		svc, b := setupSQLite(t)
		b.leftRunning(t, svc, b.deadLease(), "b1", "A3001", "size", returns.NodePrepare)
		leftBatch(t, svc, b)
		mustResume(t, svc, returns.ResumeOptions{Task: "bt"})
		wantRecord(t, svc, "b1", returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("RowRecordWithoutRunIsRebuilt", func(t *testing.T) {
		// Killed between a chunk's business commit and its checkpoints.
		svc, b := setupSQLite(t)
		b.leftRunning(t, svc, b.deadLease(), "b1", "A3001", "size", "")
		if err := svc.Runs().SetProgress(b.ctx, "b1", "", returns.StatusWaiting, returns.StageDraftReady); err != nil {
			t.Fatal(err)
		}
		leftBatch(t, svc, b)
		mustResume(t, svc, returns.ResumeOptions{Task: "bt"})
		v, err := svc.Show(b.ctx, "b1", user)
		if err != nil {
			t.Fatal(err)
		}
		wantView(t, v, returns.StatusWaiting, returns.StageDraftReady)
	})

	t.Run("RowHandledByDeadBatchIsLetGo", func(t *testing.T) {
		// Killed after a chunk's checkpoints, before it let go of its rows.
		svc, b := setupSQLite(t)
		mustStart(t, svc, "b1", "A3001", "size")
		if _, err := svc.Runs().AcquireLease(b.ctx, "b1", b.deadLease(), b.clock.Now(), func(runs.Lease) runs.Liveness { return runs.HolderGone }); err != nil {
			t.Fatal(err)
		}
		if err := svc.Runs().SetProgress(b.ctx, "b1", "", returns.StatusWaiting, returns.StageDraftReady); err != nil {
			t.Fatal(err)
		}
		leftBatch(t, svc, b)
		mustResume(t, svc, returns.ResumeOptions{Task: "bt"})
		l, _, err := svc.Runs().TaskLease(b.ctx, "b1")
		if err != nil || l.Owner != "" {
			t.Fatalf("lease of b1 %+v (%v), want none", l, err)
		}
	})
}
