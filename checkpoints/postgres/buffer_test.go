package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"assistant/checkpoints/checkpointstest"
	"assistant/checkpoints/postgres"
	"assistant/flow"
	"assistant/internal/pgtest"
)

// TestBuffer runs the buffer's suite over the server: Other is a second
// pool on the same database (another process, or machine).
func TestBuffer(t *testing.T) {
	t.Parallel()
	checkpointstest.RunBuffer(t, func(t *testing.T) checkpointstest.BufferStores {
		url := pgtest.Database(t)
		base := mustOpen(t, url)
		return checkpointstest.BufferStores{
			Base:  base,
			Other: mustOpen(t, url),
			Reopen: func(t *testing.T) flow.Checkpointer {
				base.Close()
				return mustOpen(t, url)
			},
		}
	})
}

// bufferRow buffers, in buf, the checkpoints and the pending write of one
// batch row's run of thread: three checkpoints of the sizes a return task
// writes up to its first question (input, loop, loop with the draft) and
// its interrupt. It returns the last checkpoint.
func bufferRow(tb testing.TB, buf flow.Checkpointer, thread, parent string) *flow.Checkpoint {
	tb.Helper()
	ctx := context.Background()
	draft := `{"draft_id":"d_01a22d07-e53e-7d05-9dfe-4c5137cef5f6","expires_at":"2026-11-30T15:22:01.886Z","version":1}`
	start := `{"task":"` + thread + `","user":"demo-user","order":"A3001","reason":"too small","ttl_seconds":300}`
	steps := []struct {
		values, next, writes string
		source               string
	}{
		{start, "lookup", "", flow.SourceInput},
		{start, "prepare", `{"lookup":{"stage":"found"}}`, flow.SourceLoop},
		{`{"task":"` + thread + `","user":"demo-user","order":"A3001","reason":"too small","ttl_seconds":300,"stage":"draft_ready","draft":` + draft + `}`,
			"review", `{"prepare":{"stage":"draft_ready","draft":` + draft + `}}`, flow.SourceLoop},
	}
	var cp *flow.Checkpoint
	for i, s := range steps {
		cp = &flow.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()).String(), ParentID: parent, Format: 2,
			Values: json.RawMessage(s.values), Next: []string{s.next},
			Metadata: flow.Metadata{Source: s.source, Step: i - 1}, CreatedAt: time.Now()}
		if s.writes != "" {
			var w map[string]json.RawMessage
			if err := json.Unmarshal([]byte(s.writes), &w); err != nil {
				tb.Fatal(err)
			}
			cp.Metadata.Writes = w
		}
		if err := buf.Put(ctx, cp); err != nil {
			tb.Fatal(err)
		}
		parent = cp.ID
	}
	w := []flow.Write{{TaskID: "b76ec7314fe9595a", Node: "review", Kind: flow.WriteInterrupt, Value: json.RawMessage(`{"kind":"approval"}`)}}
	if err := buf.PutWrites(ctx, thread, cp.ID, w); err != nil {
		tb.Fatal(err)
	}
	return cp
}

// lockWaits is true while a session of the store (application_name
// assistant) waits for a lock: a row's (wait_event tuple or
// transactionid) or an advisory one (wait_event advisory).
func lockWaits(event string) string {
	q := `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
		AND application_name = '` + postgres.DefaultApplicationName + `' AND wait_event_type = 'Lock'`
	switch event {
	case "advisory":
		q += ` AND wait_event = 'advisory'`
	case "row":
		q += ` AND wait_event <> 'advisory'`
	}
	return q + `)`
}

// flushing starts buf.Flush(ctx) and returns a channel that carries its
// result.
func flushing(ctx context.Context, buf flow.WriteBuffer) (<-chan error, <-chan struct{}) {
	res, done := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(done)
		res <- buf.Flush(ctx)
	}()
	return res, done
}

// TestBufferFlushRacesAPut: another machine's Put of a thread the buffer
// continues (or starts) is under way when the Flush comes. The Flush waits
// for it, then finds the head moved: a *flow.ConflictError naming the head
// the Put left, and nothing of the buffer is stored (the other thread
// neither). The Put under way is held by a session of the test that ran
// Put's writes in a transaction it has not committed.
func TestBufferFlushRacesAPut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// continued: the buffer continues t1's head in the store; else it
		// starts t1, which the other machine starts too.
		continued bool
	}{
		{"ContinuedThread", true},
		{"NewThread", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := pgtest.Database(t)
			s := mustOpen(t, url)
			parent := ""
			if tc.continued {
				h := newCheckpoint("t1", "", -1)
				if err := s.Put(ctx, h); err != nil {
					t.Fatal(err)
				}
				parent = h.ID
			}
			buf := s.NewBuffer()
			if err := buf.Preload(ctx, []string{"t1", "t2"}); err != nil {
				t.Fatal(err)
			}
			bufferRow(t, buf, "t1", parent)
			bufferRow(t, buf, "t2", "")

			other, watcher := pgtest.Connect(t, url), pgtest.Connect(t, url)
			tx := pgtest.Begin(t, other)
			moved := "other-" + tc.name
			if tc.continued {
				pgtest.Exec(t, tx, `UPDATE checkpoints.threads SET head_id = $1, head_seq = 2 WHERE thread_id = 't1'`, moved)
			} else {
				pgtest.Exec(t, tx, `INSERT INTO checkpoints.threads (thread_id, head_id, head_seq) VALUES ('t1', $1, 1)`, moved)
			}
			seq := map[bool]int{true: 2, false: 1}[tc.continued]
			pgtest.Exec(t, tx, `INSERT INTO checkpoints.checkpoints (thread_id, checkpoint_id, seq, step, source, format, breakpoint)
				VALUES ('t1', $1, $2, 0, 'loop', 1, '')`, moved, seq)

			res, done := flushing(ctx, buf)
			if !waitFor(t, watcher, lockWaits("row"), done) {
				t.Fatalf("Flush returned (%v) while another machine's Put of t1 was under way: it did not wait for its lock", <-res)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			err := <-res
			var ce *flow.ConflictError
			if !errors.As(err, &ce) || ce.ThreadID != "t1" || ce.Want != parent || ce.Head != moved {
				t.Fatalf("Flush after the other Put = %v; want a *flow.ConflictError on t1 (want %q, head %q)", err, parent, moved)
			}
			if got, err := s.Get(ctx, "t2", ""); err != nil || got != nil {
				t.Errorf("t2 after a refused Flush = %+v, %v; want nothing stored", got, err)
			}
			if ids := mustList(t, s, "t1"); len(ids) != seq || ids[0] != moved {
				t.Errorf("t1 after a refused Flush has %v, want the other Put's head %s and what was there before", ids, moved)
			}
		})
	}
}

// mustList returns the ids of the thread's checkpoints, newest first.
func mustList(tb testing.TB, s flow.Checkpointer, thread string) []string {
	tb.Helper()
	cps, err := s.List(context.Background(), thread, flow.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	var ids []string
	for _, cp := range cps {
		ids = append(ids, cp.ID)
	}
	return ids
}

// TestBufferFlushRacesAFence: a buffer made from a holder's fenced view
// (machine A at epoch 1) is fenced as the view's own writes are, when
// machine B takes the thread over (Fence at 2): a Fence that committed
// first, or was under way, refuses the whole Flush with a
// *flow.FencedError and nothing is stored (another thread in the buffer
// neither); a Flush under way makes B's Fence wait for its commit, and a
// later Flush of A is refused.
func TestBufferFlushRacesAFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (url string, a, b *postgres.Store, old flow.Checkpointer, h *flow.Checkpoint) {
		t.Helper()
		url = pgtest.Database(t)
		a, b = mustOpen(t, url), mustOpen(t, url)
		if err := a.Fence(ctx, "t1", 1); err != nil {
			t.Fatal(err)
		}
		old = a.Fenced("t1", 1)
		h = newCheckpoint("t1", "", -1)
		if err := old.Put(ctx, h); err != nil {
			t.Fatal(err)
		}
		return url, a, b, old, h
	}
	newBuffer := func(t *testing.T, old flow.Checkpointer, h *flow.Checkpoint) flow.WriteBuffer {
		t.Helper()
		buf := old.(flow.Bufferer).NewBuffer()
		bufferRow(t, buf, "t1", h.ID)
		bufferRow(t, buf, "t2", "")
		return buf
	}
	refused := func(t *testing.T, s flow.Checkpointer, err error, h *flow.Checkpoint) {
		t.Helper()
		var fe *flow.FencedError
		if !errors.As(err, &fe) || fe.ThreadID != "t1" || fe.Fence != 2 || fe.Epoch != 1 {
			t.Errorf("Flush by A after B fenced at 2 = %v; want a *flow.FencedError (fence 2, epoch 1)", err)
		}
		if got, err := s.Get(ctx, "t2", ""); err != nil || got != nil {
			t.Errorf("t2 after a refused Flush = %+v, %v; want nothing stored", got, err)
		}
		if ids := mustList(t, s, "t1"); len(ids) != 1 || ids[0] != h.ID {
			t.Errorf("t1 after a refused Flush has %v, want only %s", ids, h.ID)
		}
	}

	t.Run("FencedBefore", func(t *testing.T) {
		_, _, b, old, h := setup(t)
		buf := newBuffer(t, old, h)
		if err := b.Fence(ctx, "t1", 2); err != nil {
			t.Fatal(err)
		}
		refused(t, b, buf.Flush(ctx), h)
		if n := buf.(interface{ Len() int }).Len(); n != 6 {
			t.Errorf("Len after a refused Flush = %d, want 6 (kept for the caller)", n)
		}
	})

	t.Run("FlushWaitsForAFenceUnderWay", func(t *testing.T) {
		url, _, b, old, h := setup(t)
		buf := newBuffer(t, old, h)
		fencer, watcher := pgtest.Connect(t, url), pgtest.Connect(t, url)
		tx := pgtest.Begin(t, fencer)
		// What B's Fence does, held before its commit.
		pgtest.Exec(t, tx, `SELECT pg_advisory_xact_lock($1, hashtext('t1'))`, postgres.FenceLockClass)
		pgtest.Exec(t, tx, `UPDATE checkpoints.fences SET epoch = 2 WHERE thread_id = 't1'`)
		res, done := flushing(ctx, buf)
		if !waitFor(t, watcher, lockWaits("advisory"), done) {
			t.Fatalf("Flush returned (%v) while B's Fence was under way: it did not wait for the fence's lock", <-res)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		refused(t, b, <-res, h)
	})

	t.Run("FenceWaitsForAFlushUnderWay", func(t *testing.T) {
		url, _, b, old, h := setup(t)
		buf := newBuffer(t, old, h)
		// A third session holds t1's row, so A's Flush stops under way,
		// after it took the fence's lock.
		blocker, watcher := pgtest.Connect(t, url), pgtest.Connect(t, url)
		tx := pgtest.Begin(t, blocker)
		pgtest.Exec(t, tx, `SELECT 1 FROM checkpoints.threads WHERE thread_id = 't1' FOR UPDATE`)
		res, flushDone := flushing(ctx, buf)
		if !waitFor(t, watcher, lockWaits("row"), flushDone) {
			t.Fatalf("A's Flush did not wait for the locked thread row: %v", <-res)
		}
		fenceDone := make(chan struct{})
		var fenceErr error
		go func() {
			defer close(fenceDone)
			fenceErr = b.Fence(ctx, "t1", 2)
		}()
		if !waitFor(t, watcher, lockWaits("advisory"), fenceDone) {
			t.Fatalf("B's Fence returned (%v) while A's Flush was under way: that Flush can land after the takeover", fenceErr)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-res; err != nil {
			t.Fatalf("A's Flush under way = %v, want it stored before the takeover", err)
		}
		<-fenceDone
		if fenceErr != nil {
			t.Fatalf("B's Fence = %v", fenceErr)
		}
		if ids := mustList(t, b, "t1"); len(ids) != 4 {
			t.Errorf("t1 has %d checkpoints, want 4 (A's Flush stored)", len(ids))
		}
		// After the takeover A's next Flush is refused.
		next := old.(flow.Bufferer).NewBuffer()
		last, err := b.Get(ctx, "t1", "")
		if err != nil {
			t.Fatal(err)
		}
		bufferRow(t, next, "t1", last.ID)
		var fe *flow.FencedError
		if err := next.Flush(ctx); !errors.As(err, &fe) || fe.Fence != 2 {
			t.Errorf("A's Flush after B fenced at 2 = %v, want a *flow.FencedError", err)
		}
	})
}

// TestBufferFlushesDisjointThreadsAtOnce: two machines flush chunks of
// different threads at the same moment. Each flush is held under way (a
// third session holds a row of each chunk's threads) until both are
// waiting, so the two transactions overlap; both then commit everything.
func TestBufferFlushesDisjointThreadsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	// One thread of each chunk exists, so the blocker can hold its row.
	var heads [2]*flow.Checkpoint
	for i, s := range []*postgres.Store{a, b} {
		heads[i] = newCheckpoint(fmt.Sprintf("m%d-0", i), "", -1)
		if err := s.Put(ctx, heads[i]); err != nil {
			t.Fatal(err)
		}
	}
	bufs := make([]flow.WriteBuffer, 2)
	for i, s := range []*postgres.Store{a, b} {
		bufs[i] = s.NewBuffer()
		bufferRow(t, bufs[i], fmt.Sprintf("m%d-0", i), heads[i].ID)
		for j := 1; j < 50; j++ {
			bufferRow(t, bufs[i], fmt.Sprintf("m%d-%d", i, j), "")
		}
	}
	blocker, watcher := pgtest.Connect(t, url), pgtest.Connect(t, url)
	tx := pgtest.Begin(t, blocker)
	pgtest.Exec(t, tx, `SELECT 1 FROM checkpoints.threads WHERE thread_id IN ('m0-0', 'm1-0') FOR UPDATE`)
	var results [2]<-chan error
	var dones [2]<-chan struct{}
	for i := range bufs {
		results[i], dones[i] = flushing(ctx, bufs[i])
	}
	both := `SELECT count(*) = 2 FROM pg_stat_activity WHERE datname = current_database()
		AND application_name = '` + postgres.DefaultApplicationName + `' AND wait_event_type = 'Lock'`
	anyDone := make(chan struct{})
	go func() {
		select {
		case <-dones[0]:
		case <-dones[1]:
		}
		close(anyDone)
	}()
	if !waitFor(t, watcher, both, anyDone) {
		t.Fatal("a Flush returned before both were under way")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range bufs {
		if err := <-results[i]; err != nil {
			t.Errorf("Flush of machine %d: %v", i, err)
		}
	}
	for i := range 2 {
		for j := range 50 {
			thread := fmt.Sprintf("m%d-%d", i, j)
			got, err := a.Get(ctx, thread, "")
			if err != nil || got == nil || len(got.PendingWrites) != 1 || got.Seq != map[bool]int64{true: 4, false: 3}[j == 0] {
				t.Fatalf("head of %s after both Flushes = %+v, %v; want the row's last checkpoint with its write", thread, got, err)
			}
		}
	}
}

// TestBufferFlushAfterAnErrorIsRetryable: a Flush that fails (here its
// context ends while it waits for a lock) stores nothing and keeps the
// buffer; the next Flush stores everything, once.
func TestBufferFlushAfterAnErrorIsRetryable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	s := mustOpen(t, url)
	h := newCheckpoint("t1", "", -1)
	if err := s.Put(ctx, h); err != nil {
		t.Fatal(err)
	}
	buf := s.NewBuffer()
	last := bufferRow(t, buf, "t1", h.ID)
	bufferRow(t, buf, "t2", "")

	blocker, watcher := pgtest.Connect(t, url), pgtest.Connect(t, url)
	tx := pgtest.Begin(t, blocker)
	pgtest.Exec(t, tx, `SELECT 1 FROM checkpoints.threads WHERE thread_id = 't1' FOR UPDATE`)
	cancelled, cancel := context.WithCancel(ctx)
	res, done := flushing(cancelled, buf)
	if !waitFor(t, watcher, lockWaits("row"), done) {
		t.Fatalf("Flush did not wait for the locked row: %v", <-res)
	}
	cancel()
	if err := <-res; err == nil {
		t.Fatal("Flush whose context ended = nil, want an error")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "t2", ""); err != nil || got != nil {
		t.Fatalf("t2 after a failed Flush = %+v, %v; want nothing stored", got, err)
	}
	if n := buf.(interface{ Len() int }).Len(); n != 6 {
		t.Errorf("Len after a failed Flush = %d, want 6", n)
	}
	if err := buf.Flush(ctx); err != nil {
		t.Fatalf("Flush again: %v", err)
	}
	got, err := s.Get(ctx, "t1", "")
	if err != nil || got == nil || got.ID != last.ID || got.Seq != 4 || len(got.PendingWrites) != 1 {
		t.Fatalf("t1 after the second Flush = %+v, %v; want %s at seq 4 with its write", got, err, last.ID)
	}
	if ids := mustList(t, s, "t2"); len(ids) != 3 {
		t.Errorf("t2 has %d checkpoints, want 3", len(ids))
	}
}
