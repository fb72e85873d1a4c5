package returns_test

import (
	"testing"

	"assistant/flow/returns"
)

// TestRepairLeavesARecordAnotherProcessMoved: a repair writes the view it
// read with a record only while the record's status is still the one it
// read. Another process that took the task, was stopped and let go
// meanwhile left a newer record (interrupted), which the repair's older
// view (waiting) must not overwrite (a plain resume racing an answer and
// a stop left the record waiting beside a head stopped part-way).
func TestRepairLeavesARecordAnotherProcessMoved(t *testing.T) {
	tests := []struct {
		name    string
		moved   string // the record's status when the repair takes the lease ("": as read)
		wantRec string
	}{
		{"RecordAsReadIsSetRight", "", returns.StatusWaiting},
		{"RecordStoppedMeanwhileStaysStopped", returns.StatusInterrupted, returns.StatusInterrupted},
		{"RecordEndedMeanwhileStaysEnded", returns.StatusDone, returns.StatusDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, b := setup(t)
			v := mustStart(t, svc, "t", "A3003", "size")
			// The record as the repair read it: running, a process having
			// just taken the task; the view is the head before it wrote.
			setRecord(returns.StatusRunning, returns.StageDraftReady)(t, svc, b, "")
			read, err := svc.Runs().Task(b.ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if tt.moved != "" {
				setRecord(tt.moved, returns.StageDraftReady)(t, svc, b, "")
			}
			if err := svc.Repair(b.ctx, read, v); err != nil {
				t.Fatalf("repair: %v", err)
			}
			got, err := svc.Runs().Task(b.ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.wantRec {
				t.Errorf("record %s, want %s", got.Status, tt.wantRec)
			}
		})
	}
}
