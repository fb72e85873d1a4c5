package returns_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow"
	"assistant/flow/returns"
	"assistant/runs"
)

func TestClassify(t *testing.T) {
	t.Run("NilIsNil", func(t *testing.T) {
		if err := returns.Classify(nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("CancelledIsInterrupted", func(t *testing.T) {
		err := fmt.Errorf("resume r1: %w", context.Canceled)
		got := returns.Classify(err)
		wantErr(t, got, returns.ErrInterrupted)
		wantErr(t, got, context.Canceled)
		if got.Error() != err.Error() {
			t.Fatalf("message %q, want it unchanged", got)
		}
	})

	t.Run("CheckpointConflictIsConflict", func(t *testing.T) {
		err := fmt.Errorf("resume r1: %w", &flow.ConflictError{ThreadID: "r1", Want: "a", Head: "b"})
		got := returns.Classify(err)
		wantErr(t, got, returns.ErrConflict)
		if errors.Is(got, returns.ErrBusy) {
			t.Fatal("a lost compare-and-set is not a busy file")
		}
	})

	t.Run("LockedFileIsBusyAndConflict", func(t *testing.T) {
		err := fmt.Errorf("start r1: %w", busyError(t))
		got := returns.Classify(err)
		wantErr(t, got, returns.ErrBusy)
		wantErr(t, got, returns.ErrConflict)
		if got.Error() == err.Error() {
			t.Fatalf("message %q, want a hint added", got)
		}
		// In the words of the domain: what held what, the context kept,
		// not the driver's "database is locked (5) (SQLITE_BUSY)".
		want := "start r1: another process held the data dir's write lock for longer than 5s"
		if got.Error() != want {
			t.Fatalf("message %q, want %q", got, want)
		}
	})

	t.Run("OtherErrorsPassUnchanged", func(t *testing.T) {
		err := fmt.Errorf("task r1: %w", returns.ErrNotFound)
		if got := returns.Classify(err); got != err {
			t.Fatalf("Classify changed %v into %v", err, got)
		}
	})

	t.Run("ClassifiedTwiceIsUnchanged", func(t *testing.T) {
		for _, err := range []error{context.Canceled, &flow.ConflictError{}, busyError(t)} {
			once := returns.Classify(err)
			if twice := returns.Classify(once); twice != once {
				t.Errorf("Classify(%v) again gave %v", once, twice)
			}
		}
	})
}

// busyError returns the error SQLite gives a writer that finds the file's
// write lock taken and has no busy timeout to wait in.
func busyError(tb testing.TB) error {
	tb.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(tb.TempDir(), "locked.sqlite")+"?_pragma=busy_timeout(0)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	holder, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		tb.Fatal(err)
	}
	defer holder.ExecContext(ctx, "ROLLBACK")
	waiter, err := db.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer waiter.Close()
	_, err = waiter.ExecContext(ctx, "BEGIN IMMEDIATE")
	if err == nil {
		tb.Fatal("a second writer took the write lock")
	}
	return err
}

func TestOpen(t *testing.T) {
	open := func(dir string, mode returns.OpenMode) error {
		svc, err := returns.Open(context.Background(), returns.Config{Business: returns.DataDir{Dir: dir, Mode: mode}, Checkpoints: checkpoints.NewMemory()})
		if err == nil {
			svc.Close()
		}
		return err
	}

	t.Run("MissingDataDirIsNotFound", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "missing")
		wantErr(t, open(dir, returns.OpenExisting), returns.ErrNotFound)
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("data dir made by a read: %v", err)
		}
	})

	t.Run("DataDirWithoutBusinessFileIsNotFound", func(t *testing.T) {
		wantErr(t, open(t.TempDir(), returns.OpenExisting), returns.ErrNotFound)
	})

	t.Run("DataDirThatIsAFileIsInvalid", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		wantErr(t, open(file, returns.CreateIfMissing), returns.ErrInvalid)
		wantErr(t, returns.PrepareDataDir(file, returns.OpenExisting), returns.ErrInvalid)
	})

	t.Run("CreatedDirOpensAgain", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if err := open(dir, returns.CreateIfMissing); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("data dir %v (%v), want mode 0700", st, err)
		}
		if err := open(dir, returns.OpenExisting); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCheckPair(t *testing.T) {
	threads := func(n int) func(context.Context, string) (int, error) {
		return func(context.Context, string) (int, error) { return n, nil }
	}

	t.Run("FreshDirIsFine", func(t *testing.T) {
		if err := returns.CheckPair(context.Background(), t.TempDir(), threads(0)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("TasksWithoutCheckpointFileAreLostCheckpoints", func(t *testing.T) {
		svc, b := setup(t) // its checkpoints are in memory: no checkpoints.sqlite
		if err := returns.CheckPair(b.ctx, b.dir, threads(0)); err != nil {
			t.Fatalf("no task yet: %v", err)
		}
		mustStart(t, svc, "r1", "A3003", "size")
		wantErr(t, returns.CheckPair(b.ctx, b.dir, threads(0)), runs.ErrLostCheckpoints)
	})

	t.Run("RunsWithoutBusinessFileAreLostBusiness", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, returns.CheckpointsFile), []byte("runs"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := returns.CheckPair(context.Background(), dir, threads(0)); err != nil {
			t.Fatalf("no run: %v", err)
		}
		wantErr(t, returns.CheckPair(context.Background(), dir, threads(2)), returns.ErrLostBusiness)
	})
}

// TestRowErrorCodeIsTheCommandsCode: a batch or decide row's error code
// (returns.ErrorCode) is the code of the JSON error object the command
// itself prints for the same error: a store that stayed busy is busy
// (never conflict, though it exits 3 as a conflict does), whether it was
// classified yet or not; a task another live process holds is conflict,
// as resume says.
func TestRowErrorCodeIsTheCommandsCode(t *testing.T) {
	locked := busyError(t)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"LockedStore", fmt.Errorf("row 1: %w", locked), "busy"},
		{"LockedStoreClassified", returns.Classify(fmt.Errorf("row 1: %w", locked)), "busy"},
		{"ServerWithoutSlots", fmt.Errorf("connect: %w", business.ErrPGServerBusy), "busy"},
		{"TaskHeldByALiveProcess", fmt.Errorf("%w: %w", &runs.LeaseHeldError{Task: "t1"}, returns.ErrConflict), "conflict"},
		{"Conflict", fmt.Errorf("task t1: %w", returns.ErrConflict), "conflict"},
		{"Invalid", fmt.Errorf("%w: bad draft", returns.ErrInvalid), "invalid_input"},
		{"NotFound", fmt.Errorf("task t1: %w", returns.ErrNotFound), "not_found"},
		{"Inconsistent", fmt.Errorf("task t1: %w", returns.ErrInconsistent), "inconsistent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := returns.ErrorCode(c.err); got != c.want {
				t.Errorf("ErrorCode(%v) = %q, want %q", c.err, got, c.want)
			}
		})
	}
}
