package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"assistant/checkpoints"
	"assistant/checkpoints/checkpointstest"
	"assistant/checkpoints/postgres"
	"assistant/flow"
	"assistant/internal/pgtest"
	"assistant/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// mustOpen opens the store on the database at url and closes it when tb
// ends.
func mustOpen(tb testing.TB, url string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the suite every flow.Checkpointer passes, each
// subtest on a database of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	checkpointstest.Run(t, func(t *testing.T) flow.Checkpointer {
		return mustOpen(t, pgtest.Database(t))
	})
}

// newCheckpoint returns a loop checkpoint of thread after parent.
func newCheckpoint(thread, parent string, step int) *flow.Checkpoint {
	return &flow.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()).String(), ParentID: parent, Format: 1,
		Values: json.RawMessage(`{"i":1}`), Metadata: flow.Metadata{Source: flow.SourceLoop, Step: step}}
}

func TestOpenMigratesOnceAndKeepsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	s := mustOpen(t, url)
	cp := newCheckpoint("t1", "", 0)
	if err := s.Put(ctx, cp); err != nil {
		t.Fatal(err)
	}
	s.Close()
	again := mustOpen(t, url)
	if got, err := again.Get(ctx, "t1", ""); err != nil || got == nil || got.ID != cp.ID {
		t.Errorf("head after reopening = %+v, %v; want %s", got, err, cp.ID)
	}
	conn := pgtest.Connect(t, url)
	var versions, latest int
	if err := conn.QueryRow(ctx, `SELECT count(*), max(version) FROM checkpoints.schema_version`).Scan(&versions, &latest); err != nil {
		t.Fatal(err)
	}
	if versions != postgres.SchemaVersion() || latest != postgres.SchemaVersion() {
		t.Errorf("schema_version holds %d rows up to %d; want one per migration up to %d", versions, latest, postgres.SchemaVersion())
	}
}

// TestOpenRefusesNewerSchema: a schema a newer build migrated is refused
// before anything is written. The database is made read-only for the
// opener, so any write would fail otherwise than with ErrNewerSchema.
func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	s := mustOpen(t, url)
	if err := s.Put(ctx, newCheckpoint("t1", "", 0)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn := pgtest.Connect(t, url)
	newer := postgres.SchemaVersion() + 1
	pgtest.Exec(t, conn, `INSERT INTO checkpoints.schema_version (version, name) VALUES ($1, 'from_the_future')`, newer)
	pgtest.Exec(t, conn, `ALTER TABLE checkpoints.checkpoints ADD COLUMN future text`)
	pgtest.ReadOnly(t, conn)
	err := pgtest.Unchanged(t, conn, "checkpoints", func() error {
		_, err := postgres.Open(ctx, url, postgres.Options{})
		return err
	})
	if !errors.Is(err, postgres.ErrNewerSchema) || !errors.Is(err, checkpoints.ErrNewerSchema) {
		t.Fatalf("Open = %v, want ErrNewerSchema (and checkpoints.ErrNewerSchema)", err)
	}
	if want := fmt.Sprintf("version %d, this build knows %d", newer, postgres.SchemaVersion()); !strings.Contains(err.Error(), want) {
		t.Errorf("Open = %q, want it to say %q", err, want)
	}
}

// TestOpenRefusesForeignSchema: a schema checkpoints that another program
// made is refused and left as it was.
func TestOpenRefusesForeignSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	conn := pgtest.Connect(t, url)
	pgtest.Exec(t, conn, `CREATE SCHEMA checkpoints`)
	pgtest.Exec(t, conn, `CREATE TABLE checkpoints.threads (name text)`)
	pgtest.Exec(t, conn, `INSERT INTO checkpoints.threads VALUES ('theirs')`)
	err := pgtest.Unchanged(t, conn, "checkpoints", func() error {
		_, err := postgres.Open(ctx, url, postgres.Options{})
		return err
	})
	if !errors.Is(err, postgres.ErrForeignSchema) || !errors.Is(err, checkpoints.ErrForeignFile) {
		t.Fatalf("Open = %v, want ErrForeignSchema (and checkpoints.ErrForeignFile)", err)
	}
}

// TestConcurrentOpensMigrateOnce: processes that open a new database at the
// same moment (here, pools of their own: sessions, as the server sees
// them) all succeed, and each migration is applied once.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	const openers = 8
	ctx := context.Background()
	url := pgtest.Database(t)
	errs := testkit.Race(openers, func(int) error {
		s, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 1})
		if err == nil {
			err = s.Close()
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	var rows, distinct int
	if err := pgtest.Connect(t, url).QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM checkpoints.schema_version`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != postgres.SchemaVersion() || distinct != rows {
		t.Errorf("schema_version has %d rows, %d versions; want each of %d once", rows, distinct, postgres.SchemaVersion())
	}
}

func TestOpenErrorHidesPassword(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1 of the loopback address.
	_, err := postgres.Open(context.Background(), "postgres://someone:s3cret-pw@127.0.0.1:1/db?connect_timeout=5", postgres.Options{})
	if err == nil {
		t.Fatal("Open of a server that is not there succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("Open's error shows the password: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "open checkpoints on postgres: ") {
		t.Errorf("Open = %q, want it to say what was opened", err)
	}
}

// waitFor polls the server until cond, a query of one boolean, is true,
// or until done is closed first (then it reports false). It waits on the
// server's own state (pg_stat_activity), not on a clock; the deadline
// only ends a test that hangs.
func waitFor(tb testing.TB, conn *pgx.Conn, cond string, done <-chan struct{}) bool {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var ok bool
		if err := conn.QueryRow(context.Background(), cond).Scan(&ok); err != nil {
			tb.Fatalf("%s: %v", cond, err)
		}
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			tb.Fatalf("still not true after a minute: %s", cond)
		}
		select {
		case <-done:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestFenceWaitsForTheOldHoldersWrite: machine A holds thread t at epoch
// 1 and is writing when machine B takes it over (Fence at 2). B's Fence
// must not return while A's write is under way: it waits for A's commit,
// so no write of A lands after the takeover. Then every write of A is
// refused and B writes.
//
// A's write is held under way by a third session that locks the thread's
// row; the test waits until the server shows A's write and then B's Fence
// waiting for locks.
func TestFenceWaitsForTheOldHoldersWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	if err := a.Fence(ctx, "t", 1); err != nil {
		t.Fatal(err)
	}
	old := a.Fenced("t", 1)
	first := newCheckpoint("t", "", 0)
	if err := old.Put(ctx, first); err != nil {
		t.Fatal(err)
	}

	blocker, watcher := pgtest.Connect(t, url), pgtest.Connect(t, url)
	tx := pgtest.Begin(t, blocker)
	pgtest.Exec(t, tx, `SELECT 1 FROM checkpoints.threads WHERE thread_id = 't' FOR UPDATE`)
	w := []flow.Write{{TaskID: "a", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`1`)}}
	writeDone := make(chan struct{})
	var writeErr error
	go func() {
		defer close(writeDone)
		writeErr = old.(flow.HeadWriter).PutWritesAtHead(ctx, "t", first.ID, w)
	}()
	waiting := `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
		AND wait_event_type = 'Lock' AND wait_event <> 'advisory' AND query LIKE '%checkpoints.writes%')`
	if !waitFor(t, watcher, waiting, writeDone) {
		t.Fatalf("A's write did not wait for the locked thread row: %v", writeErr)
	}

	fenceDone := make(chan struct{})
	var fenceErr error
	go func() {
		defer close(fenceDone)
		fenceErr = b.Fence(ctx, "t", 2)
	}()
	fenceWaits := `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
		AND wait_event_type = 'Lock' AND wait_event = 'advisory')`
	if !waitFor(t, watcher, fenceWaits, fenceDone) {
		t.Fatalf("B's Fence returned (%v) while A's write was under way: that write can land after the takeover", fenceErr)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-writeDone
	<-fenceDone
	if writeErr != nil || fenceErr != nil {
		t.Fatalf("A's write under way = %v, B's Fence = %v; want both to succeed, in that order", writeErr, fenceErr)
	}

	// After the takeover: A writes nothing, through either of its views.
	for name, write := range map[string]func() error{
		"Put":             func() error { return old.Put(ctx, newCheckpoint("t", first.ID, 1)) },
		"PutWrites":       func() error { return old.PutWrites(ctx, "t", first.ID, w) },
		"PutWritesAtHead": func() error { return old.(flow.HeadWriter).PutWritesAtHead(ctx, "t", first.ID, w) },
		"Fence(1)":        func() error { return a.Fence(ctx, "t", 1) },
	} {
		var fe *flow.FencedError
		if err := write(); !errors.As(err, &fe) || fe.Fence != 2 || fe.Epoch != 1 {
			t.Errorf("%s by A after B fenced at 2: %v, want a *flow.FencedError (fence 2, epoch 1)", name, err)
		}
	}
	if err := b.Fenced("t", 2).Put(ctx, newCheckpoint("t", first.ID, 1)); err != nil {
		t.Errorf("Put by B at epoch 2: %v", err)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		keep      int
		wantLeft  int // checkpoints left of 5
		wantRows  int // checkpoints and writes removed
		wantBytes int64
	}{
		// Each checkpoint: values {"i":1} (7 bytes); each write: {} (2 bytes).
		{"KeepHeadOnly", 1, 1, 4 + 4, 4 * (7 + 2)},
		{"KeepZeroMeansHead", 0, 1, 4 + 4, 4 * (7 + 2)},
		{"KeepThree", 3, 3, 2 + 2, 2 * (7 + 2)},
		{"KeepAll", 5, 5, 0, 0},
		{"KeepMore", 9, 5, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s flow.Checkpointer = mustOpen(t, pgtest.Database(t))
			var cps []*flow.Checkpoint
			for _, thread := range []string{"t1", "other"} {
				parent := ""
				for i := range 5 {
					cp := newCheckpoint(thread, parent, i)
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
			p, ok := s.(flow.Pruner) // as the application layer finds it
			if !ok {
				t.Fatalf("%T is not a flow.Pruner", s)
			}
			rows, n, err := p.Prune(ctx, "t1", tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			if rows != tc.wantRows || n != tc.wantBytes {
				t.Errorf("Prune = %d rows, %d bytes; want %d rows, %d bytes", rows, n, tc.wantRows, tc.wantBytes)
			}
			left, err := s.List(ctx, "t1", flow.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != tc.wantLeft || left[0].ID != cps[4].ID {
				t.Errorf("left %d checkpoints, head %s; want %d, head %s", len(left), left[0].ID, tc.wantLeft, cps[4].ID)
			}
			// Every checkpoint kept still names its parent, the oldest one
			// too though its parent is gone.
			for i, cp := range left {
				if want := cps[4-i].ParentID; cp.ParentID != want {
					t.Errorf("checkpoint seq %d after prune: parent %q, want %q", cp.Seq, cp.ParentID, want)
				}
			}
			if tc.keep > 1 {
				// Pruning again cuts below a checkpoint that already keeps
				// its parent's id.
				if _, _, err := p.Prune(ctx, "t1", 1); err != nil {
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
		t.Parallel()
		s := mustOpen(t, pgtest.Database(t))
		if rows, n, err := s.Prune(ctx, "nope", 1); rows != 0 || n != 0 || err != nil {
			t.Errorf("Prune(unknown) = %d, %d, %v", rows, n, err)
		}
	})
}
