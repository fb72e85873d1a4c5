package checkpoints_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"assistant/checkpoints"
	"assistant/checkpoints/checkpointstest"
	"assistant/flow"
	"assistant/internal/sqlstore"
)

// TestBuffer runs the buffer's suite over SQLite: Other is a second pool
// on the same file (another process), and a Flush is one durable commit
// (sqlstore.Syncs).
func TestBuffer(t *testing.T) {
	checkpointstest.RunBuffer(t, func(t *testing.T) checkpointstest.BufferStores {
		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
		base := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
		return checkpointstest.BufferStores{
			Base:  base,
			Other: mustOpenSQLite(t, path, checkpoints.SQLiteOptions{}),
			Reopen: func(t *testing.T) flow.Checkpointer {
				if err := base.Close(); err != nil {
					t.Fatal(err)
				}
				return mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
			},
			DurableCommits: sqlstore.Syncs,
		}
	})
}

// TestBufferWithoutStore: every method of NewBuffer(nil) fails.
func TestBufferWithoutStore(t *testing.T) {
	ctx := context.Background()
	buf := checkpoints.NewBuffer(nil)
	if err := buf.Put(ctx, checkpointstest.NextCheckpoint("t1", "", -1)); err == nil {
		t.Error("Put on NewBuffer(nil) = nil, want an error")
	}
	if err := buf.Flush(ctx); err == nil {
		t.Error("Flush on NewBuffer(nil) = nil, want an error")
	}
	var s flow.Checkpointer = buf
	if _, ok := s.(flow.Syncer); ok {
		t.Error("Buffer is a flow.Syncer: the engine would take its Sync for durability")
	}
}

// BenchmarkBufferFlush buffers 100 threads × (3 checkpoints + 1 pending
// write) and flushes them in one durable commit per op. It reports the time
// per checkpoint of the whole op and of Flush alone.
func BenchmarkBufferFlush(b *testing.B) {
	const threads, perThread = 100, 3
	ctx := context.Background()
	base := mustOpenSQLite(b, filepath.Join(b.TempDir(), "checkpoints.sqlite"), checkpoints.SQLiteOptions{})
	buf := checkpoints.NewBuffer(base)
	values := json.RawMessage(`{"task":"return-25","order":"A3003","reason":"size","trace":["lookup","prepare"]}`)
	writes := []flow.Write{{TaskID: "task-1", Node: "review", Kind: flow.WriteInterrupt, Value: json.RawMessage(`{"kind":"approval"}`)}}
	var flushing time.Duration
	round := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range threads {
			thread := fmt.Sprintf("r%d-%d", round, i)
			parent := ""
			for step := range perThread {
				cp := &flow.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()).String(), ParentID: parent, Format: 2,
					Values: values, Next: []string{"review"}, Metadata: flow.Metadata{Source: flow.SourceLoop, Step: step - 1},
					CreatedAt: time.Now()}
				if err := buf.Put(ctx, cp); err != nil {
					b.Fatal(err)
				}
				parent = cp.ID
			}
			if err := buf.PutWrites(ctx, thread, parent, writes); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if err := buf.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		flushing += time.Since(start)
		round++
	}
	n := float64(b.N * threads * perThread)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/checkpoint")
	b.ReportMetric(float64(flushing.Nanoseconds())/n, "flush-ns/checkpoint")
}
