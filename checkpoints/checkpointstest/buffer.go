package checkpointstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"assistant/checkpoints"
	"assistant/flow"
)

// BufferStores is what RunBuffer's tests work with, for one subtest.
type BufferStores struct {
	// Base is an empty store that is a flow.Bufferer whose NewBuffer
	// returns a *checkpoints.Buffer. It registers its own cleanup.
	Base flow.Checkpointer
	// Other is a second handle on Base's data, as another process holds
	// it (a second pool on the same file or database).
	Other flow.Checkpointer
	// Reopen closes Base and opens its data again; nil skips the check.
	Reopen func(t *testing.T) flow.Checkpointer
	// DurableCommits returns how many durable commits the process has
	// made so far; nil skips the counts.
	DurableCommits func() int64
}

// RunBuffer runs the suite of checkpoints.Buffer over a store as subtests
// of t: the conformance suite (Run) over a buffer never flushed and over
// one flushed after every write, then Flush, Discard, Preload,
// PutWritesAtHead and the flow.Bufferer power against Base and Other.
// newStores returns the stores of one subtest.
func RunBuffer(t *testing.T, newStores func(t *testing.T) BufferStores) {
	t.Helper()
	// Never flushed: the buffer alone keeps the contract over an empty store.
	t.Run("Unflushed", func(t *testing.T) {
		Run(t, func(t *testing.T) flow.Checkpointer { return newBuffer(t, newStores(t).Base) })
	})
	// Flushed after every write: what the buffer hands to the store keeps
	// the contract too, and the buffer over a store that holds the data.
	t.Run("FlushedEachWrite", func(t *testing.T) {
		Run(t, func(t *testing.T) flow.Checkpointer { return flushEach{newBuffer(t, newStores(t).Base)} })
	})
	t.Run("Flush", func(t *testing.T) { testBufferFlush(t, newStores) })
	t.Run("Preload", func(t *testing.T) { testBufferPreload(t, newStores) })
	t.Run("Bufferer", func(t *testing.T) { testBufferer(t, newStores) })
}

// newBuffer returns a new buffer over base, found as the application
// layer finds it: by type assertion.
func newBuffer(tb testing.TB, base flow.Checkpointer) *checkpoints.Buffer {
	tb.Helper()
	bf, ok := base.(flow.Bufferer)
	if !ok {
		tb.Fatalf("%T is not a flow.Bufferer", base)
	}
	buf, ok := bf.NewBuffer().(*checkpoints.Buffer)
	if !ok {
		tb.Fatalf("%T.NewBuffer() is not a *checkpoints.Buffer", base)
	}
	return buf
}

// flushEach is a Buffer that flushes after every Put and PutWrites.
type flushEach struct{ *checkpoints.Buffer }

func (f flushEach) Put(ctx context.Context, cp *flow.Checkpoint) error {
	if err := f.Buffer.Put(ctx, cp); err != nil {
		return err
	}
	return f.flush(ctx)
}

func (f flushEach) PutWrites(ctx context.Context, threadID, checkpointID string, writes []flow.Write) error {
	if err := f.Buffer.PutWrites(ctx, threadID, checkpointID, writes); err != nil {
		return err
	}
	return f.flush(ctx)
}

func (f flushEach) flush(ctx context.Context) error {
	if err := f.Flush(ctx); err != nil {
		f.Discard()
		return err
	}
	return nil
}

// NextCheckpoint returns a checkpoint of thread after parent at step,
// with JSON in every field a store keeps as text.
func NextCheckpoint(thread, parent string, step int) *flow.Checkpoint {
	return &flow.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()).String(), ParentID: parent, Format: 2,
		Values: json.RawMessage(fmt.Sprintf(`{"step": %d}`, step)), Next: []string{"n"},
		Metadata:  flow.Metadata{Source: flow.SourceLoop, Step: step, Writes: map[string]json.RawMessage{"n": json.RawMessage(`{ "s": 1 }`)}},
		CreatedAt: time.Date(2026, 3, 1, 12, 0, step, 7, time.UTC)}
}

// MustBufferPut puts cp into s and returns it (Seq set); it fails tb on
// error.
func MustBufferPut(tb testing.TB, s flow.Checkpointer, cp *flow.Checkpoint) *flow.Checkpoint {
	tb.Helper()
	if err := s.Put(context.Background(), cp); err != nil {
		tb.Fatalf("Put(%s/%s): %v", cp.ThreadID, cp.ID, err)
	}
	return cp
}

// MustBufferWrite saves one update write of task with value against
// checkpoint id of thread and returns it; it fails tb on error.
func MustBufferWrite(tb testing.TB, s flow.Checkpointer, thread, id string, task, value string) flow.Write {
	tb.Helper()
	w := flow.Write{TaskID: task, Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(value)}
	if err := s.PutWrites(context.Background(), thread, id, []flow.Write{w}); err != nil {
		tb.Fatalf("PutWrites(%s/%s): %v", thread, id, err)
	}
	return w
}

// MustSnapshot returns every checkpoint of the threads, newest first, with
// pending writes, as s gives them.
func MustSnapshot(tb testing.TB, s flow.Checkpointer, threads ...string) map[string][]*flow.Checkpoint {
	tb.Helper()
	ctx := context.Background()
	out := map[string][]*flow.Checkpoint{}
	for _, thread := range threads {
		cps, err := s.List(ctx, thread, flow.ListOptions{})
		if err != nil {
			tb.Fatal(err)
		}
		for _, cp := range cps {
			got, err := s.Get(ctx, thread, cp.ID)
			if err != nil {
				tb.Fatal(err)
			}
			out[thread] = append(out[thread], got)
		}
	}
	return out
}

// testBufferFlush checks Flush and Discard against a store another
// process (Other) writes too, and a buffer over a fenced view of a store
// that is a flow.Fencer.
func testBufferFlush(t *testing.T, newStores func(t *testing.T) BufferStores) {
	ctx := context.Background()
	setup := func(t *testing.T) (*checkpoints.Buffer, BufferStores) {
		t.Helper()
		s := newStores(t)
		return newBuffer(t, s.Base), s
	}
	next, put, write, snapshot := NextCheckpoint, MustBufferPut, MustBufferWrite, MustSnapshot

	t.Run("KeepsOrderAndReopenSeesAll", func(t *testing.T) {
		buf, bb := setup(t)
		// A thread already in the store, with a write the buffer replaces.
		h := put(t, bb.Base, next("old", "", -1))
		write(t, bb.Base, "old", h.ID, "t", `1`)

		a1 := put(t, buf, next("a", "", -1))
		b1 := put(t, buf, next("b", "", -1))
		write(t, buf, "a", a1.ID, "t", `"first"`)
		a2 := put(t, buf, next("a", a1.ID, 0))
		write(t, buf, "a", a1.ID, "t", `"second"`) // replaces "first": order matters
		o2 := put(t, buf, next("old", h.ID, 0))
		write(t, buf, "old", h.ID, "t", `2`)
		put(t, buf, next("b", b1.ID, 0))
		if buf.Len() != 5 {
			t.Errorf("Len = %d, want 5", buf.Len())
		}
		if a2.Seq != 2 || o2.Seq != 2 {
			t.Errorf("seqs %d, %d; want 2, 2", a2.Seq, o2.Seq)
		}
		threads := []string{"a", "b", "old"}
		want := snapshot(t, buf, threads...)
		if got := snapshot(t, bb.Other, threads...); len(got["a"]) != 0 || len(got["old"]) != 1 {
			t.Errorf("before Flush the store holds %d checkpoints of a, %d of old; want 0, 1", len(got["a"]), len(got["old"]))
		}

		commits := int64(0)
		if bb.DurableCommits != nil {
			commits = bb.DurableCommits()
		}
		if err := buf.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if bb.DurableCommits != nil {
			if n := bb.DurableCommits() - commits; n != 1 {
				t.Errorf("Flush made %d durable commits, want 1", n)
			}
		}
		if buf.Len() != 0 {
			t.Errorf("Len after Flush = %d, want 0", buf.Len())
		}
		if got := snapshot(t, buf, threads...); !reflect.DeepEqual(got, want) {
			t.Errorf("buffer after Flush:\n got %v\nwant %v", got, want)
		}
		reopened := bb.Other
		if bb.Reopen != nil {
			reopened = bb.Reopen(t)
		}
		got := snapshot(t, reopened, threads...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("reopened store:\n got %v\nwant %v", got, want)
		}
		if w := got["a"][1].PendingWrites; len(w) != 1 || string(w[0].Value) != `"second"` {
			t.Errorf("writes of a's first checkpoint = %+v, want the second only", w)
		}
		if w := got["old"][1].PendingWrites; len(w) != 1 || string(w[0].Value) != `2` {
			t.Errorf("writes of old's first checkpoint = %+v, want 2", w)
		}
	})

	t.Run("MovedHeadRollsBackEverything", func(t *testing.T) {
		buf, bb := setup(t)
		h := put(t, bb.Base, next("t1", "", -1))
		put(t, buf, next("t2", "", -1))
		put(t, buf, next("t1", h.ID, 0))
		write(t, buf, "t1", h.ID, "t", `1`)
		before := snapshot(t, bb.Other, "t1", "t2")
		// Another process moves t1's head.
		moved := put(t, bb.Other, next("t1", h.ID, 0))
		before["t1"] = snapshot(t, bb.Other, "t1")["t1"]

		err := buf.Flush(ctx)
		var ce *flow.ConflictError
		if !errors.As(err, &ce) || ce.ThreadID != "t1" || ce.Want != h.ID || ce.Head != moved.ID {
			t.Fatalf("Flush = %v, want a *flow.ConflictError on t1 (want %s, head %s)", err, h.ID, moved.ID)
		}
		if after := snapshot(t, bb.Other, "t1", "t2"); !reflect.DeepEqual(after, before) {
			t.Errorf("a refused Flush stored something:\n got %v\nwant %v", after, before)
		}
		if buf.Len() != 2 {
			t.Errorf("Len after a refused Flush = %d, want 2 (kept for the caller)", buf.Len())
		}
		buf.Discard()
		if err := buf.Flush(ctx); err != nil {
			t.Errorf("Flush after Discard = %v, want nil", err)
		}
	})

	t.Run("DiscardDropsEverything", func(t *testing.T) {
		buf, bb := setup(t)
		h := put(t, bb.Base, next("t1", "", -1))
		put(t, buf, next("t1", h.ID, 0))
		write(t, buf, "t1", h.ID, "t", `1`)
		buf.Discard()
		if buf.Len() != 0 {
			t.Errorf("Len after Discard = %d", buf.Len())
		}
		want := snapshot(t, bb.Base, "t1")
		if got := snapshot(t, buf, "t1"); !reflect.DeepEqual(got, want) {
			t.Errorf("buffer after Discard shows\n %v\nwant the store's\n %v", got, want)
		}
		commits := int64(0)
		if bb.DurableCommits != nil {
			commits = bb.DurableCommits()
		}
		if err := buf.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if bb.DurableCommits != nil {
			if n := bb.DurableCommits() - commits; n != 0 {
				t.Errorf("an empty Flush made %d durable commits, want 0", n)
			}
		}
		// The head is the store's again.
		put(t, buf, next("t1", h.ID, 0))
	})

	t.Run("UnknownCheckpoint", func(t *testing.T) {
		buf, bb := setup(t)
		h := put(t, bb.Base, next("t1", "", -1))
		b1 := put(t, buf, next("t2", "", -1))
		w := []flow.Write{{TaskID: "t", Kind: flow.WriteUpdate, Value: json.RawMessage(`1`)}}
		for _, tc := range []struct{ name, thread, id string }{
			{"UnknownThread", "nope", h.ID},
			{"UnknownID", "t1", "nope"},
			{"BufferedInAnotherThread", "t1", b1.ID},
			{"StoredInAnotherThread", "t2", h.ID},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := buf.PutWrites(ctx, tc.thread, tc.id, w); !errors.Is(err, checkpoints.ErrUnknownCheckpoint) {
					t.Errorf("PutWrites(%s, %s) = %v, want ErrUnknownCheckpoint", tc.thread, tc.id, err)
				}
			})
		}
		t.Run("GoneBeforeFlush", func(t *testing.T) {
			write(t, buf, "t1", h.ID, "t", `1`)
			if err := bb.Other.DeleteThread(ctx, "t1"); err != nil {
				t.Fatal(err)
			}
			if err := buf.Flush(ctx); !errors.Is(err, checkpoints.ErrUnknownCheckpoint) {
				t.Errorf("Flush = %v, want ErrUnknownCheckpoint", err)
			}
			if got, err := bb.Other.Get(ctx, "t2", ""); got != nil || err != nil {
				t.Errorf("t2 after a refused Flush = %+v, %v; want nothing stored", got, err)
			}
		})
	})

	t.Run("DeleteThreadDropsItsEntriesOnly", func(t *testing.T) {
		buf, bb := setup(t)
		h := put(t, bb.Base, next("gone", "", -1))
		put(t, buf, next("gone", h.ID, 0))
		write(t, buf, "gone", h.ID, "t", `1`)
		kept := put(t, buf, next("kept", "", -1))
		if err := buf.DeleteThread(ctx, "gone"); err != nil {
			t.Fatal(err)
		}
		if buf.Len() != 1 {
			t.Errorf("Len = %d, want 1", buf.Len())
		}
		if err := buf.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := bb.Other.Get(ctx, "gone", ""); got != nil {
			t.Errorf("deleted thread has head %+v", got)
		}
		if got, _ := bb.Other.Get(ctx, "kept", ""); got == nil || got.ID != kept.ID {
			t.Errorf("kept thread's head = %+v, want %s", got, kept.ID)
		}
	})

	t.Run("RefusesBadInputBeforeBuffering", func(t *testing.T) {
		buf, _ := setup(t)
		bad := next("t1", "", -1)
		bad.Values = json.RawMessage(`{`)
		if err := buf.Put(ctx, bad); err == nil {
			t.Error("Put(invalid JSON) = nil")
		}
		old := next("t1", "", -1)
		old.CreatedAt = time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := buf.Put(ctx, old); err == nil {
			t.Error("Put(created in 1500) = nil")
		}
		if buf.Len() != 0 {
			t.Errorf("Len = %d, want 0", buf.Len())
		}
	})

	t.Run("FencedViewRefusedAfterTakeover", func(t *testing.T) {
		bb := newStores(t)
		f, ok := bb.Base.(flow.Fencer)
		if !ok {
			t.Skip("the store has no fencing")
		}
		if err := f.Fence(ctx, "t1", 1); err != nil {
			t.Fatal(err)
		}
		old := f.Fenced("t1", 1)
		h := put(t, old, next("t1", "", -1))
		buf := newBuffer(t, old)
		put(t, buf, next("t1", h.ID, 0))
		write(t, buf, "t1", h.ID, "t", `1`)
		put(t, buf, next("t2", "", -1)) // not fenced, but in the same commit
		// Another process takes t1 over.
		if err := bb.Other.(flow.Fencer).Fence(ctx, "t1", 2); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, bb.Other, "t1", "t2")
		var fe *flow.FencedError
		if err := buf.Flush(ctx); !errors.As(err, &fe) || fe.ThreadID != "t1" || fe.Epoch != 1 || fe.Fence != 2 {
			t.Fatalf("Flush of a buffer over the holder at epoch 1 after the fence rose to 2 = %v, want a *flow.FencedError (epoch 1, fence 2)", err)
		}
		if after := snapshot(t, bb.Other, "t1", "t2"); !reflect.DeepEqual(after, before) {
			t.Errorf("a fenced Flush stored something:\n got %v\nwant %v", after, before)
		}
		if buf.Len() != 2 {
			t.Errorf("Len after a fenced Flush = %d, want 2 (kept for the caller)", buf.Len())
		}
		// The new holder's buffer writes.
		newer := newBuffer(t, f.Fenced("t1", 2))
		put(t, newer, next("t1", h.ID, 0))
		if err := newer.Flush(ctx); err != nil {
			t.Errorf("Flush of a buffer over the holder at epoch 2 = %v", err)
		}
	})

	t.Run("IsNotDurable", func(t *testing.T) {
		buf, _ := setup(t)
		var s flow.Checkpointer = buf
		if _, ok := s.(flow.Syncer); ok {
			t.Error("Buffer is a flow.Syncer: the engine would take its Sync for durability")
		}
		if _, ok := s.(flow.DurableWriter); ok {
			t.Error("Buffer is a flow.DurableWriter")
		}
	})
}

// testBufferPreload checks that preloaded heads stand in for base's: a
// thread without checkpoints reads as new without asking base, a thread
// with one continues from its head, and a head another process moves after
// the preload is still caught by Flush.
func testBufferPreload(t *testing.T, newStores func(t *testing.T) BufferStores) {
	ctx := context.Background()
	next, put := NextCheckpoint, MustBufferPut
	tests := []struct {
		name string
		// run gets a buffer preloaded with threads "new" and "old" ("old"
		// has head h in base) and the other handle on the data.
		run       func(t *testing.T, buf *checkpoints.Buffer, other flow.Checkpointer, h *flow.Checkpoint)
		wantFlush error
	}{
		{
			name: "new and continued threads",
			run: func(t *testing.T, buf *checkpoints.Buffer, _ flow.Checkpointer, h *flow.Checkpoint) {
				if got, err := buf.Get(ctx, "new", ""); err != nil || got != nil {
					t.Fatalf("Get of a preloaded new thread = %v, %v; want nil, nil", got, err)
				}
				put(t, buf, next("new", "", -1))
				if err := buf.Put(ctx, next("old", "", -1)); !errors.Is(err, flow.ErrConflict) {
					t.Fatalf("Put over a preloaded head with parent \"\": %v, want a conflict", err)
				}
				put(t, buf, next("old", h.ID, 1))
			},
		},
		{
			name: "head moved after the preload",
			run: func(t *testing.T, buf *checkpoints.Buffer, other flow.Checkpointer, _ *flow.Checkpoint) {
				put(t, other, next("new", "", -1)) // another process starts it
				put(t, buf, next("new", "", -1))   // accepted: the preload said new
			},
			wantFlush: flow.ErrConflict,
		},
		{
			name: "head read once, with its writes",
			run: func(t *testing.T, buf *checkpoints.Buffer, other flow.Checkpointer, h *flow.Checkpoint) {
				put(t, other, next("old", h.ID, 1)) // moved after the preload: not seen
				got, err := buf.Get(ctx, "old", "")
				if err != nil || got == nil || got.ID != h.ID || len(got.PendingWrites) != 1 || got.PendingWrites[0].TaskID != "before" {
					t.Fatalf("Get of a preloaded head = %+v, %v; want %s with its write \"before\"", got, err, h.ID)
				}
				got.PendingWrites[0].TaskID = "changed" // a copy
				if again, _ := buf.Get(ctx, "old", h.ID); again.PendingWrites[0].TaskID != "before" {
					t.Fatalf("Get returned the preloaded checkpoint itself, not a copy")
				}
				w := flow.Write{TaskID: "answer", Node: "n", Kind: flow.WriteResume, Value: json.RawMessage(`1`)}
				if err := buf.PutWritesAtHead(ctx, "old", h.ID, []flow.Write{w}); err != nil {
					t.Fatalf("PutWritesAtHead at the preloaded head: %v", err)
				}
			},
			wantFlush: flow.ErrConflict, // the head moved: the answer is not stored
		},
		{
			name: "deleted after the preload",
			run: func(t *testing.T, buf *checkpoints.Buffer, _ flow.Checkpointer, _ *flow.Checkpoint) {
				if err := buf.DeleteThread(ctx, "old"); err != nil {
					t.Fatal(err)
				}
				if got, err := buf.Get(ctx, "old", ""); err != nil || got != nil {
					t.Fatalf("Get of a deleted preloaded thread = %+v, %v; want nil, nil", got, err)
				}
			},
		},
		{
			name: "writes at head",
			run: func(t *testing.T, buf *checkpoints.Buffer, _ flow.Checkpointer, h *flow.Checkpoint) {
				w := flow.Write{TaskID: "answer", Node: "n", Kind: flow.WriteResume, Value: json.RawMessage(`1`)}
				if err := buf.PutWritesAtHead(ctx, "old", "not-the-head", []flow.Write{w}); !errors.Is(err, flow.ErrConflict) {
					t.Fatalf("PutWritesAtHead at another checkpoint: %v, want a conflict", err)
				}
				if err := buf.PutWritesAtHead(ctx, "old", h.ID, []flow.Write{w}); err != nil {
					t.Fatalf("PutWritesAtHead at the head: %v", err)
				}
				got, err := buf.Get(ctx, "old", "")
				if err != nil || len(got.PendingWrites) != 2 {
					t.Fatalf("Get after PutWritesAtHead = %+v, %v; want the head with 2 writes", got, err)
				}
				cp := put(t, buf, next("old", h.ID, 1))
				if err := buf.PutWritesAtHead(ctx, "old", h.ID, []flow.Write{w}); !errors.Is(err, flow.ErrConflict) {
					t.Fatalf("PutWritesAtHead at a head the buffer moved: %v, want a conflict", err)
				}
				if err := buf.PutWritesAtHead(ctx, "old", cp.ID, []flow.Write{w}); err != nil {
					t.Fatalf("PutWritesAtHead at the buffered head: %v", err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bb := newStores(t)
			buf := newBuffer(t, bb.Base)
			h := put(t, bb.Base, next("old", "", -1))
			MustBufferWrite(t, bb.Base, "old", h.ID, "before", `{"a": 1}`)
			if err := buf.Preload(ctx, []string{"new", "old"}); err != nil {
				t.Fatal(err)
			}
			tc.run(t, buf, bb.Other, h)
			if err := buf.Flush(ctx); !errors.Is(err, tc.wantFlush) {
				t.Fatalf("Flush: %v, want %v", err, tc.wantFlush)
			}
		})
	}
}

// testBufferer checks the flow.Bufferer power as the application layer
// uses it, found by type assertion on a flow.Checkpointer: the buffer
// keeps its writes from the store until Flush, and Discard drops them.
func testBufferer(t *testing.T, newStores func(t *testing.T) BufferStores) {
	ctx := context.Background()
	setup := func(t *testing.T) (flow.Checkpointer, flow.WriteBuffer) {
		t.Helper()
		store := newStores(t).Base
		b, ok := store.(flow.Bufferer)
		if !ok {
			t.Fatalf("%T is not a flow.Bufferer", store)
		}
		buf := b.NewBuffer()
		if err := buf.Preload(ctx, []string{"t1"}); err != nil {
			t.Fatal(err)
		}
		return store, buf
	}
	t.Run("FlushWritesToTheStore", func(t *testing.T) {
		store, buf := setup(t)
		cp := MustBufferPut(t, buf, NextCheckpoint("t1", "", -1))
		w := MustBufferWrite(t, buf, "t1", cp.ID, "task", `{"a": 1}`)
		if got, err := store.Get(ctx, "t1", ""); err != nil || got != nil {
			t.Fatalf("store before Flush: %+v, %v; want nothing", got, err)
		}
		if err := buf.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := store.Get(ctx, "t1", "")
		if err != nil || got == nil || got.ID != cp.ID || !reflect.DeepEqual(got.PendingWrites, []flow.Write{w}) {
			t.Fatalf("store after Flush: %+v, %v; want checkpoint %s with its write", got, err, cp.ID)
		}
	})
	t.Run("DiscardDropsEverything", func(t *testing.T) {
		store, buf := setup(t)
		MustBufferPut(t, buf, NextCheckpoint("t1", "", -1))
		buf.Discard()
		if got, err := buf.Get(ctx, "t1", ""); err != nil || got != nil {
			t.Fatalf("buffer after Discard: %+v, %v; want nothing", got, err)
		}
		if err := buf.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := store.Get(ctx, "t1", ""); err != nil || got != nil {
			t.Fatalf("store after Discard and Flush: %+v, %v; want nothing", got, err)
		}
	})
}
