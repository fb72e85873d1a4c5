package returns_test

import (
	"fmt"
	"testing"

	"assistant/flow"
	"assistant/flow/returns"
	"assistant/runs"
)

func TestHistory(t *testing.T) {
	t.Run("CheckpointsNewestFirstWithTheirChanges", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		mustResume(t, svc, approve("r1"))
		h, err := svc.History(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		if h.Kind != runs.KindReturn || len(h.Checkpoints) != 5 {
			t.Fatalf("kind %s, %d checkpoints; want a return task with 5", h.Kind, len(h.Checkpoints))
		}
		changed := func(i int) string {
			var fields []string
			for _, c := range h.Checkpoints[i].Changes {
				fields = append(fields, c.Field)
			}
			return fmt.Sprint(fields)
		}
		first, last := h.Checkpoints[4], h.Checkpoints[0]
		if first.Seq != 1 || first.Source != flow.SourceInput || changed(4) != "[order reason task ttl_seconds user]" {
			t.Fatalf("oldest checkpoint seq %d, source %s, changes %s; want the input setting every field", first.Seq, first.Source, changed(4))
		}
		if changed(2) != "[draft.draft_id draft.expires_at draft.version stage]" || changed(1) != "[decision decisions]" {
			t.Fatalf("changes of prepare %s, of review %s", changed(2), changed(1))
		}
		if last.Seq != 5 || len(last.Next) != 0 || last.DecodeError != "" {
			t.Fatalf("head %+v, want seq 5 at the end", last)
		}
		var steps []string
		for _, s := range h.Steps {
			steps = append(steps, s.Node+":"+s.Status)
		}
		if want := "[lookup:done prepare:done review:waiting review:done submit:done]"; fmt.Sprint(steps) != want {
			t.Fatalf("steps %v, want %s", steps, want)
		}
	})

	t.Run("UndecodableStateIsListedAsStored", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		b.putHead(t, "r1", `{"ttl_seconds":"soon"}`)
		h, err := svc.History(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		head := h.Checkpoints[0]
		if head.DecodeError == "" || string(head.Values) != `{"ttl_seconds":"soon"}` || h.Checkpoints[1].DecodeError != "" {
			t.Fatalf("head %+v, want its decode error and stored values", head)
		}
	})

	t.Run("StateThatIsNotAnObjectIsOneField", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		b.putHead(t, "r1", `["not", "an", "object"]`)
		h, err := svc.History(b.ctx, "r1", user)
		if err != nil {
			t.Fatal(err)
		}
		var fields []string
		for _, c := range h.Checkpoints[0].Changes {
			fields = append(fields, c.Field)
		}
		if fmt.Sprint(fields) != "[$ draft.draft_id draft.expires_at draft.version order reason stage task ttl_seconds user]" {
			t.Fatalf("changes %v, want $ added and every field gone", fields)
		}
	})

	t.Run("TaskWithoutRunHasEmptyLists", func(t *testing.T) {
		svc, b := setup(t)
		b.leftRunning(t, svc, b.deadLease(), "r1", "A3003", "size", "")
		h, err := svc.History(b.ctx, "r1", user)
		if err != nil || h.Checkpoints == nil || h.Steps == nil || len(h.Checkpoints)+len(h.Steps) != 0 {
			t.Fatalf("history %+v (%v), want empty lists", h, err)
		}
	})

	t.Run("OtherUsersTaskIsNotFound", func(t *testing.T) {
		svc, b := setup(t)
		mustStart(t, svc, "r1", "A3003", "size")
		_, err := svc.History(b.ctx, "r1", otherUser)
		wantErr(t, err, returns.ErrNotFound)
	})
}
