package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"assistant/flow/returns"
)

const backupLong = `backup holds checkpoints.sqlite, then business.sqlite, each at one moment (a
read transaction: no other process waits for it), and copies both into DIR
with SQLite's online backup. Held in that order the pair agrees: a business
row a checkpoint names is committed before the checkpoint. DIR must be new
or empty; it becomes a data dir of its own (mode 0700, files 0600), each file
self-contained (no -wal). The copy is then checked as ` + "`assistant verify`" + ` checks
a data dir, and the report is printed; exit 1 when it is not clean.

To restore, stop every process using the data dir, move its files aside
(*.sqlite, *-wal, *-shm), copy DIR's two files in, and run ` + "`assistant verify`" + `
(docs/recovery.md "Restoring a backup"). Restore both files: one alone does
not agree with the other.`

// backupOptions are backup's argument: the directory to copy into.
type backupOptions struct {
	app *app
	Dir string
}

// newCmdBackup is the backup command; runF runs it with its options
// (backupRun, or a test's).
func newCmdBackup(a *app, runF func(context.Context, *backupOptions) error) *cobra.Command {
	opts := &backupOptions{app: a}
	return &cobra.Command{
		Use:   "backup DIR",
		Short: "Copy the data dir's two files into DIR, consistently, while other processes run; then verify the copy",
		Long:  backupLong,
		Example: `  assistant start return-25 A3003 --reason "size does not fit"
  assistant backup backups/2026-11-30
  assistant --data backups/2026-11-30 verify`,
		Args: exactArgs(1, "backup needs DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Dir = args[0]
			return runF(c.Context(), opts)
		},
	}
}

// backupRun copies the data dir into opts.Dir, verifies the copy and
// prints both; a copy that is not clean is ErrInconsistent, after the
// report that names each error.
func backupRun(ctx context.Context, opts *backupOptions) error {
	a, dir := opts.app, opts.Dir
	if strings.TrimSpace(dir) == "" {
		// Before the data dir is looked at: an empty DIR is a script's
		// unset variable, never a place to copy to.
		return usageErr("backup needs DIR: the directory to copy into must not be empty or blank")
	}
	if a.onServer() {
		// The server's data is not a pair of files: its own tools copy it
		// consistently (docs/postgres.md "Backup").
		return usageErr("backup copies a data dir; on a PostgreSQL server back up the two schemas with `pg_dump -n checkpoints -n business` (or the server's base backups); docs/postgres.md \"Backup\"")
	}
	if err := returns.CheckBackupDir(a.data, dir); err != nil {
		return err // nothing read or made yet
	}
	res, err := returns.Backup(ctx, returns.BackupOptions{DataDir: a.data, Dir: dir, TakeCheckpoints: a.snapshotCheckpoints})
	if err != nil {
		return err
	}
	if res.Verify, err = verifyDir(ctx, dir, a.host, func(string) returns.Wording { return cliWords }); err != nil {
		return fmt.Errorf("verify the backup in %s: %w", dir, err)
	}
	if err := a.renderBackup(res); err != nil {
		return err
	}
	if !res.Verify.Clean {
		a.reported = true // the report on stdout names every error
		return fmt.Errorf("the backup in %s does not verify clean: %d error(s), each listed with its fix; the data dir has them too (%w)",
			dir, res.Verify.Errors(), returns.ErrInconsistent)
	}
	return nil
}

// renderBackup prints what backup did as JSON, or as text for a person.
func (a *app) renderBackup(res *returns.BackupResult) error {
	if a.output == "json" {
		return writeJSON(a.stdout, res)
	}
	var b strings.Builder
	for _, f := range res.Files {
		fmt.Fprintf(&b, "Copied %s (%d bytes) to %s.\n", f.File, f.Bytes, termSafe(res.Dir))
	}
	if _, err := fmt.Fprint(a.stdout, b.String()); err != nil {
		return err
	}
	return writeVerify(a.stdout, res.Verify)
}
