package returns

import (
	"context"

	"assistant/runs"
)

// asShown is t, a task record as list reads it, with the status and stage
// show reports for it: a return task recorded running (its holder gone,
// killed part-way before it let go, or alive between a chunk's or a
// group's two commits) is what its head says as the business file has it, waiting when
// the head asks a question (a first of two approvals that crashed after it
// was recorded), done, cancelled or failed when the run ended; and one
// recorded interrupted whose run had finished before it saw the stop (a
// stop that came too late, whose holder let go after the stop's wait) is
// what its finished head says, as show reports it (a head part-way to
// submit whose application business.sqlite holds is done: truth). Its
// record stays as it is until a stop, resume or recover sets it right:
// list writes nothing. A head that cannot be read leaves t as recorded (show then
// reports why).
func (s *Service) asShown(ctx context.Context, t runs.TaskRecord) runs.TaskRecord {
	if (t.Status != StatusRunning && t.Status != StatusInterrupted) || t.Kind != runs.KindReturn {
		return t
	}
	snap, err := headOrNil(s.cmd.graph.State(ctx, t.ID))
	if err == nil {
		snap, err = s.cmd.truth(ctx, t, snap) // an end the business file holds, as show reads it
	}
	if err != nil || snap == nil || (t.Status == StatusInterrupted && !snap.Done()) {
		return t
	}
	v := view(t, snap)
	t.Status, t.Stage = v.Status, v.Stage
	return t
}
