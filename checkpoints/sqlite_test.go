package checkpoints_test

import (
	"assistant/internal/testkit"

	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"assistant/checkpoints"
	"assistant/checkpoints/checkpointstest"
	"assistant/flow"
	"assistant/internal/sqlstore"
)

// mustOpenSQLite opens (creating) the store at path and closes it when the
// test ends.
func mustOpenSQLite(tb testing.TB, path string, opts checkpoints.SQLiteOptions) *checkpoints.SQLite {
	tb.Helper()
	opts.Create = true
	s, err := checkpoints.OpenSQLite(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("OpenSQLite: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

// mustOpenRaw opens path with the driver and no pragmas, as another program
// (or the sqlite3 shell) would.
func mustOpenRaw(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func mustExec(tb testing.TB, db *sql.DB, queries ...string) {
	tb.Helper()
	for _, q := range queries {
		if _, err := db.Exec(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}

// mustPutChain puts n checkpoints on thread, each with a write, and returns
// the head.
func mustPutChain(tb testing.TB, s flow.Checkpointer, thread string, n int, values json.RawMessage) *flow.Checkpoint {
	tb.Helper()
	ctx := context.Background()
	var cp *flow.Checkpoint
	parent := ""
	for i := range n {
		cp = &flow.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()).String(), ParentID: parent,
			Values: values, Metadata: flow.Metadata{Source: flow.SourceLoop, Step: i}}
		if err := s.Put(ctx, cp); err != nil {
			tb.Fatalf("Put %s #%d: %v", thread, i, err)
		}
		w := flow.Write{TaskID: "task", Node: "n", Kind: flow.WriteUpdate, Value: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}
		if err := s.PutWrites(ctx, thread, cp.ID, []flow.Write{w}); err != nil {
			tb.Fatalf("PutWrites %s #%d: %v", thread, i, err)
		}
		parent = cp.ID
	}
	return cp
}

func TestSQLite(t *testing.T) {
	for _, sync := range []string{"FULL", "NORMAL"} {
		t.Run(sync, func(t *testing.T) {
			checkpointstest.Run(t, func(t *testing.T) flow.Checkpointer {
				path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
				return mustOpenSQLite(t, path, checkpoints.SQLiteOptions{Synchronous: sync})
			})
		})
	}
}

func TestOpenSQLite(t *testing.T) {
	ctx := context.Background()

	t.Run("MissingFileWithoutCreateIsNotExist", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
		_, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{})
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenSQLite = %v, want fs.ErrNotExist naming %s", err, path)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("file was created: %v", err)
		}
	})

	t.Run("CreateMakesPrivateFileWithSchema", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
		mustOpenSQLite(t, path, checkpoints.SQLiteOptions{}).Close()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("file mode = %v, want 0600", perm)
		}
		db := mustOpenRaw(t, path)
		defer db.Close()
		var appID, version int64
		var tables string
		if err := db.QueryRow(`PRAGMA application_id`).Scan(&appID); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name)`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if appID != checkpoints.ApplicationID || version != 4 || tables != "checkpoints,data_dir,fences,threads,writes" {
			t.Errorf("application_id %#x, user_version %d, tables %s; want %#x, 4, checkpoints,data_dir,fences,threads,writes",
				appID, version, tables, checkpoints.ApplicationID)
		}
	})

	t.Run("EmptyFileGetsSchema", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{})
		if err != nil {
			t.Fatalf("OpenSQLite(empty file) = %v", err)
		}
		defer s.Close()
		mustPutChain(t, s, "t1", 1, nil)
	})

	t.Run("ReopenKeepsData", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
		s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
		head := mustPutChain(t, s, "t1", 3, json.RawMessage(`{"a":1}`))
		want, err := s.Get(ctx, "t1", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		got, err := s2.Get(ctx, "t1", "")
		if err != nil || got == nil || got.ID != head.ID || got.Seq != 3 || !reflect.DeepEqual(got, want) {
			t.Errorf("after reopen Get = %+v, %v; want %+v", got, err, want)
		}
		next := &flow.Checkpoint{ThreadID: "t1", ID: uuid.Must(uuid.NewV7()).String(), ParentID: head.ID}
		if err := s2.Put(ctx, next); err != nil || next.Seq != 4 {
			t.Errorf("Put after reopen = %v, seq %d; want nil, 4", err, next.Seq)
		}
	})

	t.Run("BadSynchronousIsRefused", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
		_, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{Create: true, Synchronous: "OFF"})
		if err == nil {
			t.Error("OpenSQLite(synchronous OFF) = nil, want an error")
		}
	})
}

// TestOpenSQLiteRefusesAndLeavesFileUnchanged opens files that are not ours
// (or not for this version) and checks the refusal and that not one byte of
// the file changed.
func TestOpenSQLiteRefusesAndLeavesFileUnchanged(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want error
		// wal: the file is in WAL mode. Reading it, even read-only, needs the
		// -wal and -shm files, so SQLite creates them (empty) when missing;
		// only the database file itself is guaranteed unchanged.
		wal bool
	}{
		{"TextFile", func(t *testing.T, path string) {
			writeFile(t, path, []byte("order,reason\nA3003,size\n"))
		}, checkpoints.ErrCorrupt, false},
		{"HeaderOnly", func(t *testing.T, path string) {
			writeFile(t, path, []byte("SQLite format 3\x00"))
		}, checkpoints.ErrCorrupt, false},
		{"TruncatedStore", func(t *testing.T, path string) {
			s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
			big := json.RawMessage(`{"pad":"` + strings.Repeat("x", 2000) + `"}`)
			mustPutChain(t, s, "t1", 50, big)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2+100); err != nil {
				t.Fatal(err)
			}
		}, checkpoints.ErrCorrupt, true},
		{"UnrelatedTable", func(t *testing.T, path string) {
			db := mustOpenRaw(t, path)
			defer db.Close()
			mustExec(t, db, `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`, `INSERT INTO notes (body) VALUES ('keep me')`)
		}, checkpoints.ErrForeignFile, false},
		{"OtherApplicationID", func(t *testing.T, path string) {
			db := mustOpenRaw(t, path)
			defer db.Close()
			mustExec(t, db, `PRAGMA application_id = 1234`)
		}, checkpoints.ErrForeignFile, false},
		{"NewerSchema", func(t *testing.T, path string) {
			s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
			mustPutChain(t, s, "t1", 2, nil)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db := mustOpenRaw(t, path)
			defer db.Close()
			mustExec(t, db, `PRAGMA user_version = 99`)
		}, checkpoints.ErrNewerSchema, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
			tc.make(t, path)
			before, files := testkit.FileSHA256(t, path), mustList(t, filepath.Dir(path))

			s, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{Create: true})
			if err == nil {
				s.Close()
				t.Fatal("OpenSQLite = nil error, want a refusal")
			}
			t.Logf("refused: %v", err)
			if !errors.Is(err, tc.want) {
				t.Errorf("OpenSQLite = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if after := testkit.FileSHA256(t, path); after != before {
				t.Errorf("file changed: sha256 %s, was %s", after, before)
			}
			if after := mustList(t, filepath.Dir(path)); !tc.wal && !reflect.DeepEqual(after, files) {
				t.Errorf("directory holds %v after the refusal, held %v", after, files)
			}
		})
	}
}

// mustList returns the names in dir.
func mustList(tb testing.TB, dir string) []string {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func writeFile(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

func TestSQLitePutWritesUnknownCheckpoint(t *testing.T) {
	s := mustOpenSQLite(t, filepath.Join(t.TempDir(), "checkpoints.sqlite"), checkpoints.SQLiteOptions{})
	err := s.PutWrites(context.Background(), "t1", "nope", []flow.Write{{TaskID: "a"}})
	if !errors.Is(err, checkpoints.ErrUnknownCheckpoint) {
		t.Errorf("PutWrites = %v, want ErrUnknownCheckpoint", err)
	}
}

// TestSQLiteStoresReadableJSON reads a store the way a person with the
// sqlite3 shell would, with the queries of migrations/0002_compact.sql.
func TestSQLiteStoresReadableJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
	s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
	at := time.Date(2026, 11, 29, 20, 31, 57, 65211489, time.UTC)
	first := &flow.Checkpoint{ThreadID: "return-25", ID: uuid.Must(uuid.NewV7()).String(), Format: 1,
		Metadata: flow.Metadata{Source: flow.SourceInput, Step: -1}, CreatedAt: at}
	if err := s.Put(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	cp := &flow.Checkpoint{ThreadID: "return-25", ID: uuid.Must(uuid.NewV7()).String(), ParentID: first.ID, Format: 1,
		Values: json.RawMessage(`{"order":"A3003"}`), Next: []string{"review"}, Breakpoint: "before:review",
		Metadata:  flow.Metadata{Source: flow.SourceLoop, Step: 2, Writes: map[string]json.RawMessage{"prepare": json.RawMessage(`{"draft":"d-1"}`)}},
		CreatedAt: at}
	if err := s.Put(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWrites(context.Background(), "return-25", cp.ID, []flow.Write{{TaskID: "t", Node: "review", Kind: flow.WriteInterrupt, Value: json.RawMessage(`{"kind":"approval"}`)}}); err != nil {
		t.Fatal(err)
	}
	db := mustOpenRaw(t, path)
	defer db.Close()
	var order, next, source, draft, kind, created, parent string
	err := db.QueryRow(`SELECT json_extract(c.values_json, '$.order'), json_extract(c.next_json, '$[0]'),
		c.source, json_extract(c.metadata_json, '$.writes.prepare.draft'),
		json_extract(w.value_json, '$.kind'), strftime('%Y-%m-%dT%H:%M:%fZ', c.created_at / 1e9, 'unixepoch'),
		coalesce(c.pruned_parent_id, p.checkpoint_id, '')
		FROM checkpoints c JOIN writes w USING (thread_id, seq)
		LEFT JOIN checkpoints p ON p.thread_id = c.thread_id AND p.seq = c.seq - 1
		WHERE c.thread_id = 'return-25'`).
		Scan(&order, &next, &source, &draft, &kind, &created, &parent)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join([]string{order, next, source, draft, kind, created}, " "); got != "A3003 review loop d-1 approval 2026-11-29T20:31:57.065Z" {
		t.Errorf("read back %q", got)
	}
	if parent != first.ID {
		t.Errorf("parent read back %q, want %s", parent, first.ID)
	}
	var meta sql.NullString
	if err := db.QueryRow(`SELECT metadata_json FROM checkpoints WHERE checkpoint_id = ?`, first.ID).Scan(&meta); err != nil || meta.Valid {
		t.Errorf("metadata_json of a checkpoint without writes = %v, %v; want NULL", meta, err)
	}
}

// TestSQLiteDurableWrites checks that PutDurable and PutWritesDurable store
// what Put and PutWrites store, keep their refusals, and each make one
// durable commit.
func TestSQLiteDurableWrites(t *testing.T) {
	ctx := context.Background()
	s := mustOpenSQLite(t, filepath.Join(t.TempDir(), "checkpoints.sqlite"), checkpoints.SQLiteOptions{})
	head := mustPutChain(t, s, "t1", 2, json.RawMessage(`{"a":1}`))
	syncs := sqlstore.Syncs()

	cp := &flow.Checkpoint{ThreadID: "t1", ID: uuid.Must(uuid.NewV7()).String(), ParentID: head.ID,
		Values: json.RawMessage(`{"a":2}`), Metadata: flow.Metadata{Source: flow.SourceLoop, Step: 2}}
	if err := s.PutDurable(ctx, cp); err != nil {
		t.Fatalf("PutDurable: %v", err)
	}
	w := flow.Write{TaskID: "task", Node: "n", Kind: flow.WriteInterrupt, Value: json.RawMessage(`{"q":1}`)}
	if err := s.PutWritesDurable(ctx, "t1", cp.ID, []flow.Write{w}); err != nil {
		t.Fatalf("PutWritesDurable: %v", err)
	}
	if got := sqlstore.Syncs() - syncs; got != 2 {
		t.Errorf("durable commits = %d, want 2", got)
	}
	got, err := s.Get(ctx, "t1", "")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != cp.ID || string(got.Values) != `{"a":2}` || len(got.PendingWrites) != 1 || string(got.PendingWrites[0].Value) != `{"q":1}` {
		t.Errorf("head = %s %s %v, want %s with the durable write", got.ID, got.Values, got.PendingWrites, cp.ID)
	}

	stale := &flow.Checkpoint{ThreadID: "t1", ID: uuid.Must(uuid.NewV7()).String(), ParentID: head.ID}
	if err := s.PutDurable(ctx, stale); !errors.Is(err, flow.ErrConflict) {
		t.Errorf("PutDurable with a stale parent = %v, want flow.ErrConflict", err)
	}
	if err := s.PutWritesDurable(ctx, "t1", "no-such-checkpoint", []flow.Write{w}); !errors.Is(err, checkpoints.ErrUnknownCheckpoint) {
		t.Errorf("PutWritesDurable on an unknown checkpoint = %v, want ErrUnknownCheckpoint", err)
	}
}

// TestSQLiteSyncWithNormal checks that Sync, at synchronous=NORMAL, commits a
// write (a WAL frame, which FULL fsyncs) and that the data outlives the store.
func TestSQLiteSyncWithNormal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
	s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{Synchronous: "normal"})
	head := mustPutChain(t, s, "t1", 3, nil)
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := walSize()
	if err := s.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if after := walSize(); after <= before {
		t.Errorf("WAL size %d after Sync, was %d: Sync committed nothing", after, before)
	}
	// The pooled connection is back at NORMAL and the store still works.
	next := &flow.Checkpoint{ThreadID: "t1", ID: uuid.Must(uuid.NewV7()).String(), ParentID: head.ID}
	if err := s.Put(ctx, next); err != nil {
		t.Fatal(err)
	}

	full := mustOpenSQLite(t, filepath.Join(t.TempDir(), "full.sqlite"), checkpoints.SQLiteOptions{Synchronous: "FULL"})
	if err := full.Sync(ctx); err != nil {
		t.Errorf("Sync at FULL = %v, want nil", err)
	}
}

// Environment of TestHelperProcess, the child of the multi-process tests.
const (
	envHelper = testkit.HelperEnv // the part: "chain", "crash" or "race"
	envPath   = "CHECKPOINTS_TEST_PATH"
	envThread = "CHECKPOINTS_TEST_THREAD"
	envParent = "CHECKPOINTS_TEST_PARENT"
)

// TestHelperProcess is not a test: the multi-process tests run the test
// binary again with envHelper set, and this is what the child does. It
// prints "ready", waits until the parent closes its stdin (so all children
// start together), opens the store and works, then prints "result: …".
func TestHelperProcess(t *testing.T) {
	mode := testkit.HelperPart()
	if mode == "" {
		t.Skip("child process of the multi-process tests")
	}
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := checkpoints.OpenSQLite(ctx, os.Getenv(envPath), checkpoints.SQLiteOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	thread := os.Getenv(envThread)
	switch mode {
	case "chain":
		mustPutChain(t, s, thread, 50, json.RawMessage(`{"by":"`+thread+`"}`))
		fmt.Println("result: ok")
	case "crash":
		head := mustPutChain(t, s, thread, 20, json.RawMessage(`{"by":"`+thread+`"}`))
		fmt.Println("result: " + head.ID)
		// SIGKILL, not a return: the store is never closed, so the WAL is
		// not checkpointed and the -wal and -shm files stay, as after kill -9.
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	case "race":
		cp := &flow.Checkpoint{ThreadID: thread, ID: uuid.Must(uuid.NewV7()).String(), ParentID: os.Getenv(envParent)}
		switch err := s.Put(ctx, cp); {
		case err == nil:
			fmt.Println("result: won " + cp.ID)
		case errors.Is(err, flow.ErrConflict):
			fmt.Println("result: conflict")
		default:
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown helper mode %q", mode)
	}
}

// runHelpers starts one child process per environment, lets them all go at
// once and returns what each printed after "result: ".
func runHelpers(t *testing.T, envs ...[]string) []string {
	t.Helper()
	type child struct {
		cmd    *exec.Cmd
		stdin  io.Closer
		stdout *bufio.Reader
		stderr bytes.Buffer
	}
	children := make([]*child, len(envs))
	for i, env := range envs {
		// env names the part (envHelper=…), so the child's own part is "".
		c := &child{cmd: testkit.Child(t, "", env...)}
		c.cmd.Stderr = &c.stderr
		stdin, err := c.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdin, c.stdout = stdin, bufio.NewReader(stdout)
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Closing stdin (the start signal) also ends a child stuck on a failed test.
		t.Cleanup(func() { c.stdin.Close(); c.cmd.Wait() })
		children[i] = c
	}
	// Wait for every child to be ready, then release them together.
	for i, c := range children {
		if line, err := c.stdout.ReadString('\n'); strings.TrimSpace(line) != "ready" {
			t.Fatalf("child %d: got %q, %v before ready; stderr: %s", i, line, err, c.stderr.String())
		}
	}
	for _, c := range children {
		c.stdin.Close()
	}
	results := make([]string, len(children))
	for i, c := range children {
		out, _ := io.ReadAll(c.stdout)
		if err := c.cmd.Wait(); err != nil && !killed(err) {
			t.Fatalf("child %d: %v\nstdout: %s\nstderr: %s", i, err, out, c.stderr.String())
		}
		for line := range strings.Lines(string(out)) {
			if r, ok := strings.CutPrefix(strings.TrimSpace(line), "result: "); ok {
				results[i] = r
			}
		}
		if results[i] == "" {
			t.Fatalf("child %d printed no result: %s", i, out)
		}
	}
	return results
}

// killed reports whether a child ended by SIGKILL (the "crash" helper).
func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// TestSQLiteKilledWriterLosesNoCommit kills a writer with SIGKILL after its
// commits and opens the file it left (with its -wal and -shm) again.
func TestSQLiteKilledWriterLosesNoCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
	results := runHelpers(t, []string{envHelper + "=crash", envPath + "=" + path, envThread + "=t1"})
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("the killed writer left no WAL: %v", err)
	}
	s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
	head, err := s.Get(context.Background(), "t1", "")
	if err != nil || head == nil || head.ID != results[0] || head.Seq != 20 || len(head.PendingWrites) != 1 {
		t.Errorf("head = %+v, %v; want %s at seq 20 with its write", head, err, results[0])
	}
}

func TestSQLiteTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ctx := context.Background()

	t.Run("WritersOfDifferentThreadsBothSucceed", func(t *testing.T) {
		// The file does not exist yet: both children race to create and
		// migrate it, then write 50 checkpoints each.
		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
		results := runHelpers(t,
			[]string{envHelper + "=chain", envPath + "=" + path, envThread + "=a"},
			[]string{envHelper + "=chain", envPath + "=" + path, envThread + "=b"},
		)
		for i, r := range results {
			if r != "ok" {
				t.Errorf("child %d: %s", i, r)
			}
		}
		s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
		for _, thread := range []string{"a", "b"} {
			head, err := s.Get(ctx, thread, "")
			if err != nil || head == nil || head.Seq != 50 || string(head.Values) != `{"by":"`+thread+`"}` {
				t.Errorf("thread %s head = %+v, %v; want seq 50 written by %s", thread, head, err, thread)
			}
		}
	})

	t.Run("RacingPutOnOneThreadOneWins", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
		s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{})
		first := mustPutChain(t, s, "t1", 1, nil)
		env := []string{envHelper + "=race", envPath + "=" + path, envThread + "=t1", envParent + "=" + first.ID}
		results := runHelpers(t, env, env)

		var won []string
		conflicts := 0
		for _, r := range results {
			if id, ok := strings.CutPrefix(r, "won "); ok {
				won = append(won, id)
			} else if r == "conflict" {
				conflicts++
			}
		}
		if len(won) != 1 || conflicts != 1 {
			t.Fatalf("results %q: want one winner and one conflict", results)
		}
		head, err := s.Get(ctx, "t1", "")
		if err != nil || head == nil || head.ID != won[0] || head.Seq != 2 {
			t.Errorf("head = %+v, %v; want the winner %s at seq 2", head, err, won[0])
		}
	})
}

func BenchmarkSQLitePut(b *testing.B) {
	benchmarkPut(b, mustOpenSQLite(b, filepath.Join(b.TempDir(), "checkpoints.sqlite"), checkpoints.SQLiteOptions{}))
}

// TestDurableByCheckpointPutsTheRunInTheFile: with DurableByCheckpoint a
// durable Put is in the database file itself when it returns (the WAL was
// synced and copied into it, so the close has nothing left to sync); a
// plain durable Put leaves it in the WAL. A reader of an older snapshot
// keeps the checkpoint from copying the new frames: the Put is then made
// durable by a synced commit instead. Each counts one durable commit.
func TestDurableByCheckpointPutsTheRunInTheFile(t *testing.T) {
	for _, tc := range []struct {
		name         string
		byCheckpoint bool
		reader       bool
		inFile       int
	}{
		{"by checkpoint", true, false, 1},
		{"by a synced commit", false, false, 0},
		{"by checkpoint, a reader holds an older snapshot", true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
			mustOpenSQLite(t, path, checkpoints.SQLiteOptions{Create: true}).Close() // the schema in the file, the -wal empty
			s := mustOpenSQLite(t, path, checkpoints.SQLiteOptions{DurableByCheckpoint: tc.byCheckpoint})
			defer s.Close()
			if tc.reader {
				db, err := sql.Open("sqlite", path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				var n int
				if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM checkpoints`).Scan(&n); err != nil {
					t.Fatal(err)
				}
			}
			cp := &flow.Checkpoint{ThreadID: "t1", ID: uuid.Must(uuid.NewV7()).String(), Format: 2,
				Values: json.RawMessage(`{}`), Metadata: flow.Metadata{Source: flow.SourceInput, Step: -1}, CreatedAt: time.Now()}
			testkit.CheckDurableWrite(t, path, "checkpoints", tc.inFile, func() error { return s.PutDurable(ctx, cp) })
		})
	}
}
