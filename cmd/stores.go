package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow"
	"assistant/flow/returns"
)

// This file and stores_postgres.go are the one place in cmd that knows the
// store packages: they open the data dir's two files, or the two schemas
// of a PostgreSQL database (--store), and hand them to the application
// layer.

// onServer reports whether the command's stores are on a database server
// (--store) rather than in the data dir (--data).
func (a *app) onServer() bool { return a.store != "" }

// service opens both stores of the data dir, or of --store's database, for
// the command that runs; Run closes them when the command returns. Under
// returns.OpenExisting a missing data dir or file (schema) is ErrNotFound
// and nothing is created.
func (a *app) service(ctx context.Context, mode returns.OpenMode) (*returns.Service, error) {
	return a.openService(ctx, mode, false)
}

// oneRunService is service for a command that runs one task's run and
// exits (start, resume): the run's last write to each file is made durable
// by checkpointing the file's WAL, as the close would (returns.Config.OneRun).
func (a *app) oneRunService(ctx context.Context, mode returns.OpenMode) (*returns.Service, error) {
	return a.openService(ctx, mode, true)
}

func (a *app) openService(ctx context.Context, mode returns.OpenMode, oneRun bool) (*returns.Service, error) {
	if a.onServer() {
		return a.serverService(ctx, mode)
	}
	if mode.Creates() && a.beforeCreate != nil && !exists(filepath.Join(a.data, returns.BusinessFile)) && !exists(filepath.Join(a.data, returns.CheckpointsFile)) {
		if err := a.beforeCreate(); err != nil {
			return nil, err
		}
	}
	if err := returns.PrepareDataDir(a.data, mode); err != nil {
		return nil, err
	}
	if err := returns.CheckPair(ctx, a.data, checkpoints.CountThreadsReadOnly); err != nil {
		return nil, err
	}
	path := filepath.Join(a.data, returns.CheckpointsFile)
	if mode.Creates() && !exists(path) {
		// The checkpoint file is about to be made: the business file beside
		// it is refused first, so that a refusal writes nothing.
		if err := business.Inspect(ctx, filepath.Join(a.data, returns.BusinessFile)); err != nil {
			return nil, err
		}
	}
	cps, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{Create: mode.Creates(), DurableByCheckpoint: oneRun})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (no task has been started in %s)", path, returns.ErrNotFound, a.data)
	}
	if err != nil {
		return nil, err
	}
	// The business file must carry the checkpoint file's data dir
	// identity: a pair that does not belong together is refused before
	// anything is written.
	id, err := cps.DataDirID(ctx)
	if err != nil {
		cps.Close()
		return nil, err
	}
	svc, err := returns.Open(ctx, returns.Config{Business: returns.DataDir{Dir: a.data, Mode: mode, Seed: a.seed, ID: id}, Checkpoints: cps, MaxAttempts: a.maxAttempts, Host: a.host, OneRun: oneRun, Now: a.clock(returns.WallClock), Wording: a.wording()})
	if err != nil {
		cps.Close()
		return nil, err
	}
	a.closers = append(a.closers, func() { svc.Close(); cps.Close() })
	return svc, nil
}

// wording is how the command's service words its hints: a.words, or
// cliWords.
func (a *app) wording() returns.Wording {
	if a.words != nil {
		return a.words
	}
	return cliWords
}

// labStore opens, for each run of a variants experiment, the SQLite
// checkpoint store at path (created when missing) and the function that
// closes it.
func labStore(path string) func(context.Context) (flow.Checkpointer, func(), error) {
	return func(ctx context.Context) (flow.Checkpointer, func(), error) {
		cp, err := checkpoints.OpenSQLite(ctx, path, checkpoints.SQLiteOptions{Create: true})
		if err != nil {
			return nil, nil, err
		}
		return cp, func() { cp.Close() }, nil
	}
}

// checkpointsForReading checks the checkpoints.sqlite of data dir dir
// without changing it and, when it is sound and current, opens it
// read-only: what verify reads while other processes use the data dir. The
// store is nil for a file that cannot be read; close releases it.
func checkpointsForReading(ctx context.Context, dir string) (check returns.FileCheck, cps flow.Checkpointer, close func(), err error) {
	path := filepath.Join(dir, returns.CheckpointsFile)
	check, err = checkpoints.CheckFile(ctx, path)
	if err != nil || !check.Usable() {
		return check, nil, func() {}, err
	}
	s, err := checkpoints.OpenSQLiteReadOnly(ctx, path)
	if err != nil {
		return check, nil, func() {}, err
	}
	return check, s, func() { s.Close() }, nil
}

// snapshotCheckpoints holds the data dir's checkpoints.sqlite at this
// moment, for a backup (returns.BackupOptions.TakeCheckpoints).
func (a *app) snapshotCheckpoints(ctx context.Context) (returns.Snapshot, error) {
	return checkpoints.TakeSnapshot(ctx, filepath.Join(a.data, returns.CheckpointsFile))
}

// EnvTeachingOrders stands in for --teaching-orders when the flag is not
// given (true or false; docs/orders.md "Teaching orders").
const EnvTeachingOrders = "ASSISTANT_TEACHING_ORDERS"

// withTeachingOrders adds the global flag --teaching-orders to root and
// returns root's PersistentPreRunE (next) extended by reading it: with
// false (or ASSISTANT_TEACHING_ORDERS=false when the flag is not given) a
// data dir this command makes gets no teaching orders. newRoot calls it
// once, after it has set its own PersistentPreRunE. Errors of the
// returned function: next's, or ErrInvalid for a variable that is not a
// boolean.
func (a *app) withTeachingOrders(root *cobra.Command, next func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	teaching := true
	root.PersistentFlags().BoolVar(&teaching, "teaching-orders", true,
		"load the teaching orders (A3001–B4002) into a data dir this command makes (env "+EnvTeachingOrders+")")
	return func(c *cobra.Command, args []string) error {
		if next != nil {
			if err := next(c, args); err != nil {
				return err
			}
		}
		if v := os.Getenv(EnvTeachingOrders); v != "" && !c.Flags().Changed("teaching-orders") {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return usageErr("%s must be true or false, not %q", EnvTeachingOrders, v)
			}
			teaching = b
		}
		if !teaching {
			a.seed = nil
		}
		return nil
	}
}

// exists reports whether something is at path (a file that cannot be
// looked at counts as there: opening it says why).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
