package checkpoints_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"assistant/checkpoints"
	"assistant/flow"
)

func TestSQLitePrune(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		keep      int
		wantLeft  int // checkpoints left of 5
		wantRows  int // checkpoints and writes removed
		wantBytes bool
	}{
		{"KeepHeadOnly", 1, 1, 4 + 4, true},
		{"KeepZeroMeansHead", 0, 1, 4 + 4, true},
		{"KeepThree", 3, 3, 2 + 2, true},
		{"KeepAll", 5, 5, 0, false},
		{"KeepMore", 9, 5, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpenSQLite(t, filepath.Join(t.TempDir(), "checkpoints.sqlite"), checkpoints.SQLiteOptions{})
			var cps []*flow.Checkpoint
			for _, thread := range []string{"t1", "other"} {
				parent := ""
				for i := range 5 {
					cp := &flow.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()).String(), ParentID: parent, Format: 1,
						Values: json.RawMessage(`{"i":1}`), Metadata: flow.Metadata{Source: flow.SourceLoop, Step: i}}
					if err := s.Put(ctx, cp); err != nil {
						t.Fatal(err)
					}
					// One pending write against each checkpoint.
					if err := s.PutWrites(ctx, thread, cp.ID, []flow.Write{{TaskID: "x", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`{}`)}}); err != nil {
						t.Fatal(err)
					}
					parent = cp.ID
					if thread == "t1" {
						cps = append(cps, cp)
					}
				}
			}
			rows, n, err := s.Prune(ctx, "t1", tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			if rows != tc.wantRows || (n > 0) != tc.wantBytes {
				t.Errorf("Prune = %d rows, %d bytes; want %d rows, bytes %v", rows, n, tc.wantRows, tc.wantBytes)
			}
			left, err := s.List(ctx, "t1", flow.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != tc.wantLeft || left[0].ID != cps[4].ID {
				t.Errorf("left %d checkpoints, head %s; want %d, head %s", len(left), left[0].ID, tc.wantLeft, cps[4].ID)
			}
			// Every checkpoint kept still names its parent, the oldest one too
			// though its parent is gone.
			for i, cp := range left {
				if want := cps[4-i].ParentID; cp.ParentID != want {
					t.Errorf("checkpoint seq %d after prune: parent %q, want %q", cp.Seq, cp.ParentID, want)
				}
			}
			if tc.keep > 1 {
				// Pruning again cuts below a checkpoint that already keeps its
				// parent's id.
				if _, _, err := s.Prune(ctx, "t1", 1); err != nil {
					t.Fatal(err)
				}
				if got, err := s.Get(ctx, "t1", cps[4].ID); err != nil || got.ParentID != cps[3].ID {
					t.Errorf("head after a second prune = %+v, %v; want parent %s", got, err, cps[3].ID)
				}
			}
			head, err := s.Get(ctx, "t1", "")
			if err != nil || head == nil || len(head.PendingWrites) != 1 {
				t.Errorf("head after prune: %+v, %v; want it with its write", head, err)
			}
			if other, err := s.List(ctx, "other", flow.ListOptions{}); err != nil || len(other) != 5 {
				t.Errorf("other thread: %d checkpoints, %v; want 5", len(other), err)
			}
		})
	}
	t.Run("UnknownThreadIsNoop", func(t *testing.T) {
		s := mustOpenSQLite(t, filepath.Join(t.TempDir(), "checkpoints.sqlite"), checkpoints.SQLiteOptions{})
		if rows, n, err := s.Prune(ctx, "nope", 1); rows != 0 || n != 0 || err != nil {
			t.Errorf("Prune(unknown) = %d, %d, %v", rows, n, err)
		}
	})
}

// TestSQLitePruner checks SQLite is found as a flow.Pruner through a
// flow.Checkpointer, as the application layer finds it, and prunes through
// that interface.
func TestSQLitePruner(t *testing.T) {
	ctx := context.Background()
	var store flow.Checkpointer = mustOpenSQLite(t, filepath.Join(t.TempDir(), "checkpoints.sqlite"), checkpoints.SQLiteOptions{})
	p, ok := store.(flow.Pruner)
	if !ok {
		t.Fatalf("%T is not a flow.Pruner", store)
	}
	parent := ""
	for i := range 3 {
		cp := &flow.Checkpoint{ThreadID: "t1", ID: uuid.Must(uuid.NewV7()).String(), ParentID: parent,
			Values: json.RawMessage(`{}`), Metadata: flow.Metadata{Source: flow.SourceLoop, Step: i}}
		if err := store.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
		parent = cp.ID
	}
	rows, n, err := p.Prune(ctx, "t1", 1)
	if err != nil || rows != 2 || n == 0 {
		t.Fatalf("Prune = %d rows, %d bytes, %v; want 2 rows and their bytes", rows, n, err)
	}
	if left, err := store.List(ctx, "t1", flow.ListOptions{}); err != nil || len(left) != 1 || left[0].ID != parent {
		t.Fatalf("left %d checkpoints, %v; want the head %s", len(left), err, parent)
	}
}
