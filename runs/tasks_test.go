package runs

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestTasks(t *testing.T) {
	t.Parallel()
	forStores(t, testTasks)
}

func testTasks(t *testing.T, kind storeKind) {
	ctx := context.Background()
	task := func(id, user, status string, created time.Time) TaskRecord {
		return TaskRecord{ID: id, User: user, OrderID: "A3003", Reason: "size", Fingerprint: "fp-" + id,
			Status: status, Stage: "", CreatedAt: created}
	}

	t.Run("CreateAndRead", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		in := task("return-25", "demo-user", "running", t0)
		if err := s.CreateTask(ctx, in); err != nil {
			t.Fatal(err)
		}
		got, err := s.Task(ctx, "return-25")
		if err != nil {
			t.Fatal(err)
		}
		in.UpdatedAt, in.Kind = in.CreatedAt, KindReturn
		if got != in {
			t.Errorf("Task = %+v, want %+v", got, in)
		}
	})

	t.Run("Defaults", func(t *testing.T) {
		s, _ := newSeededOn(t, kind) // clock fixed at t0
		if err := s.CreateTask(ctx, TaskRecord{ID: "return-1", User: "demo-user", OrderID: "A3001"}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Task(ctx, "return-1")
		if got.Status != DefaultTaskStatus || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) {
			t.Errorf("Task = %+v, want status %s at %v", got, DefaultTaskStatus, t0)
		}
	})

	t.Run("DuplicateIsErrTaskExists", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if err := s.CreateTask(ctx, task("return-25", "demo-user", "running", t0)); err != nil {
			t.Fatal(err)
		}
		for _, user := range []string{"demo-user", "other-user"} {
			err := s.CreateTask(ctx, task("return-25", user, "running", t0))
			if !errors.Is(err, ErrTaskExists) {
				t.Errorf("CreateTask as %s: err = %v, want ErrTaskExists", user, err)
			}
		}
	})

	t.Run("MissingIDOrUser", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		for _, in := range []TaskRecord{{User: "demo-user"}, {ID: "x"}} {
			if err := s.CreateTask(ctx, in); err == nil {
				t.Errorf("CreateTask(%+v) succeeded", in)
			}
		}
	})

	t.Run("UnknownTaskNotFound", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		if _, err := s.Task(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Task: err = %v, want ErrNotFound", err)
		}
		for _, from := range []string{"", "running"} {
			if err := s.SetProgress(ctx, "nope", from, "done", "submitted"); !errors.Is(err, ErrNotFound) {
				t.Errorf("SetProgress(from=%q): err = %v, want ErrNotFound", from, err)
			}
		}
	})

	progress := []struct {
		name       string
		from       string
		wantErr    error
		wantStatus string
	}{
		{"Unguarded", "", nil, "waiting"},
		{"GuardHolds", "running", nil, "waiting"},
		{"GuardFailsIsErrConflict", "interrupted", ErrConflict, "running"},
	}
	for _, tt := range progress {
		t.Run("SetProgress"+tt.name, func(t *testing.T) {
			now := t0
			_, desk := newSeededOn(t, kind)
			s := New(desk.Handle(), func() time.Time { return now })
			if err := s.CreateTask(ctx, task("return-25", "demo-user", "running", t0)); err != nil {
				t.Fatal(err)
			}
			now = t0.Add(time.Minute)
			err := s.SetProgress(ctx, "return-25", tt.from, "waiting", "draft_ready")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			got, _ := s.Task(ctx, "return-25")
			if got.Status != tt.wantStatus {
				t.Errorf("status = %s, want %s", got.Status, tt.wantStatus)
			}
			if tt.wantErr == nil && (got.Stage != "draft_ready" || !got.UpdatedAt.Equal(now)) {
				t.Errorf("stage %q updated %v, want draft_ready at %v", got.Stage, got.UpdatedAt, now)
			}
			if tt.wantErr != nil && !got.UpdatedAt.Equal(t0) {
				t.Errorf("updated_at moved to %v by a failed guard", got.UpdatedAt)
			}
		})
	}

	t.Run("List", func(t *testing.T) {
		s, _ := newSeededOn(t, kind)
		for i, in := range []TaskRecord{
			task("t-c", "demo-user", "waiting", t0.Add(2*time.Second)),
			task("t-a", "demo-user", "running", t0),
			task("t-b", "other-user", "waiting", t0.Add(time.Second)),
			task("t-d", "demo-user", "waiting", t0.Add(3*time.Second)),
		} {
			if err := s.CreateTask(ctx, in); err != nil {
				t.Fatalf("task %d: %v", i, err)
			}
		}
		tests := []struct {
			user, status string
			want         []string
		}{
			{"", "", []string{"t-a", "t-b", "t-c", "t-d"}},
			{"demo-user", "", []string{"t-a", "t-c", "t-d"}},
			{"demo-user", "waiting", []string{"t-c", "t-d"}},
			{"", "waiting", []string{"t-b", "t-c", "t-d"}},
			{"other-user", "running", nil},
		}
		for _, tt := range tests {
			tasks, err := s.ListTasks(ctx, tt.user, tt.status)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range tasks {
				ids = append(ids, x.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("ListTasks(%q, %q) = %v, want %v", tt.user, tt.status, ids, tt.want)
			}
		}
	})
}
