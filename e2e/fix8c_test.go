package e2e

// Tester findings of fix round 8 (engineer FIX8C): verify reports every
// pair the other commands refuse; an empty flag value, --data "" included,
// is exit 2 with nothing done; informational lines on stderr start with
// "assistant: ".

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyReportsWhatOthersRefuse: a data dir that show and start refuse
// (a file of the pair lost while the other holds runs or task records, two
// files of different data dirs) is an error finding of verify, exit 1,
// with its report on stdout; verify and the refused commands change no
// file. A file missing beside one that holds nothing stays a warning, and
// the other commands take that data dir.
func TestVerifyReportsWhatOthersRefuse(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	mustRun(t, src, "start", "a1", "A3001", "--reason", "too small")
	other := t.TempDir()
	mustRun(t, other, "start", "a1", "A3001", "--reason", "too small")
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, dir string)
		file  string // the error finding's file
		says  string
		warns bool // a warning only: verify exit 0, the others run
	}{
		{name: "BusinessLost", make: func(t *testing.T, dir string) { copyTo(t, src, dir, "checkpoints.sqlite") },
			file: "business.sqlite", says: "business.sqlite is missing or empty while checkpoints.sqlite holds 1 run(s)"},
		{name: "CheckpointsLost", make: func(t *testing.T, dir string) { copyTo(t, src, dir, "business.sqlite") },
			file: "checkpoints.sqlite", says: "checkpoints.sqlite is missing or empty while business.sqlite holds 1 task record(s)"},
		{name: "OtherDataDirs", make: func(t *testing.T, dir string) {
			copyTo(t, src, dir, "checkpoints.sqlite")
			copyTo(t, other, dir, "business.sqlite")
		}, file: "business.sqlite", says: "the files belong to different data dirs"},
		{name: "NothingLost", make: func(t *testing.T, dir string) {
			makeDataDir(t, dir) // orders only, no task
			if err := os.Remove(filepath.Join(dir, "checkpoints.sqlite")); err != nil {
				t.Fatal(err)
			}
		}, file: "checkpoints.sqlite", warns: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tc.make(t, dir)
			// Reading may make an empty -wal beside a file (docs/storage.md
			// "Refusals"); the files themselves must not change.
			before := sums(t, dir, "business.sqlite", "checkpoints.sqlite")
			if !tc.warns {
				for _, args := range [][]string{{"show", "a1"}, {"start", "a2", "A3002", "--reason", "x"}, {"list"}} {
					if _, errOut, code := run(t, dir, args...); code != 1 {
						t.Errorf("%v: exit %d, want 1 (the data dir is refused): %s", args, code, errOut)
					}
				}
			}
			rep, code, out := verify(t, dir)
			sameSums(t, dir, before, "verify or a refused command")
			if tc.warns {
				if code != 0 || !rep.Clean || len(rep.Findings) != 1 || rep.Findings[0].Severity != "warning" {
					t.Fatalf("verify: exit %d, want 0 and one warning:\n%s", code, out)
				}
				if _, errOut, code := run(t, dir, "show", "a1"); code != 4 {
					t.Errorf("show: exit %d, want 4 (no such task; the data dir is taken): %s", code, errOut)
				}
				return
			}
			if code != 1 || rep.Clean {
				t.Fatalf("verify: exit %d, clean %v; want 1, not clean:\n%s", code, rep.Clean, out)
			}
			found := false
			for _, f := range rep.Findings {
				found = found || f.Severity == "error" && f.File == tc.file && strings.Contains(f.Problem, tc.says)
			}
			if !found {
				t.Errorf("verify: no error finding of %s saying %q:\n%s", tc.file, tc.says, out)
			}
		})
	}
}

// TestPostgresVerifyReportsWhatOthersRefuse: on PostgreSQL a schema
// dropped while the other holds runs or task records, and two schemas of
// different identities, are error findings in verify's report (exit 1,
// the report on stdout, not an error object), as on a data dir; show is
// refused; nothing changes.
func TestPostgresVerifyReportsWhatOthersRefuse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, sql, file, says string
	}{
		{"BusinessDropped", `DROP SCHEMA business CASCADE`, "business", "the schema business is missing or empty while the schema checkpoints holds 1 run(s)"},
		{"CheckpointsDropped", `DROP SCHEMA checkpoints CASCADE`, "checkpoints", "the schema checkpoints is missing or empty while the schema business holds 1 task record(s)"},
		{"OtherIdentity", `UPDATE business.data_dir SET id = '00000000-0000-4000-8000-000000000000'`, "business", "the schemas belong to different data dirs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pg := newPGStore(t)
			pg.must(t, nil, "start", "v1", "A3003", "--reason", "too small")
			pg.exec(t, tc.sql)
			before := pg.contents(t)
			if _, errOut, code := pg.run(t, nil, "show", "v1"); code != 1 {
				t.Errorf("show: exit %d, want 1 (refused): %s", code, errOut)
			}
			out, errOut, code := pg.run(t, nil, "verify")
			var rep verifyReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.Clean || len(rep.Files) != 2 {
				t.Fatalf("verify: exit %d, %v; want 1 and a report of two schemas, not clean\n%s%s", code, err, out, errOut)
			}
			found := false
			for _, f := range rep.Findings {
				found = found || f.Severity == "error" && f.File == tc.file && strings.Contains(f.Problem, tc.says)
			}
			if !found {
				t.Errorf("verify: no error finding of the schema %s saying %q:\n%s", tc.file, tc.says, out)
			}
			if after := pg.contents(t); after != before {
				t.Errorf("verify or show changed the database:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

// TestEmptyFlagValuesDoNothing: an empty --data, an empty DIR of backup
// and an empty value of a command's flag are exit 2 with one line, and
// nothing is made or written: no data dir in the working directory, no
// file of an existing data dir changed.
func TestEmptyFlagValuesDoNothing(t *testing.T) {
	t.Parallel()
	wd := t.TempDir()
	rows := filepath.Join(wd, "rows.csv")
	orders := filepath.Join(wd, "orders.csv")
	decide := filepath.Join(wd, "decide.csv")
	for path, text := range map[string]string{rows: "task,order,reason\nb-1,A3001,x\n", orders: "order_id,user,item,delivered_at,final_sale\nZ1,demo-user,Mug,2026-11-01 10:00,false\n",
		decide: "task,action\nt1,approve\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("NoDataDir", func(t *testing.T) {
		for _, args := range [][]string{
			{"--data", "", "start", "t", "A3001"}, {"--data", "", "batch", "b", rows}, {"--data", "", "show", "t"},
			{"--data", "", "verify"}, {"--data", "", "orders", "list"}, {"--data", "", "list"}, {"--data", "", "recover"},
			{"--data", "", "approvers", "list"}, {"--data", " ", "orders", "import", orders}, {"backup", ""}, {"backup", " "},
		} {
			out, errOut, code := runEnv(t, wd, []string{"ASSISTANT_DATA=", "ASSISTANT_STORE="}, append([]string{"--output", "json"}, args...)...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "assistant: ") || !strings.Contains(out, `"invalid_input"`) {
				t.Errorf("%q: exit %d, stderr %q; want 2 and one line", args, code, errOut)
			}
			if _, err := os.Stat(filepath.Join(wd, "data")); err == nil {
				t.Fatalf("%q made ./data", args)
			}
		}
	})
	t.Run("DataDirUnchanged", func(t *testing.T) {
		dir := t.TempDir()
		mustRun(t, dir, "start", "t1", "A3001") // waits for a reason
		mustRun(t, dir, "start", "t2", "A3002", "--reason", "too small")
		before := fileSums(t, dir)
		for _, tc := range []struct {
			args []string
			flag string
		}{
			{[]string{"resume", "t1", "--reason", ""}, "--reason"},
			{[]string{"list", "--batch", ""}, "--batch"},
			{[]string{"list", "--status", ""}, "--status"},
			{[]string{"decide", decide, "--id", ""}, "--id"},
			{[]string{"approvers", "grant", "alice", "--for", ""}, "--for"},
			{[]string{"approvers", "revoke", "alice", "--for", " "}, "--for"},
			{[]string{"orders", "import", orders, "--timezone", ""}, "--timezone"},
			{[]string{"resume", "t2", "--action", "approve", "--draft", " "}, "--draft"},
			{[]string{"--output", "", "show", "t2"}, "--output"},
		} {
			_, errOut, code := run(t, dir, tc.args...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.flag+" must not be") {
				t.Errorf("%q: exit %d, stderr %q; want 2 and one line naming %s", tc.args, code, errOut, tc.flag)
			}
		}
		sameFiles(t, dir, before, "a command with an empty flag value")
		if v := mustRun(t, dir, "show", "t1"); v["stage"] != "need_reason" {
			t.Errorf("t1 after resume --reason \"\": stage %v, want need_reason", v["stage"])
		}
		verifyClean(t, dir)
	})
}

// TestInformationalStderrLinesArePrefixed: the line resume prints about
// which of two approvals it gave starts with "assistant: ", as every line
// on stderr does (docs/cli.md "Errors").
func TestInformationalStderrLinesArePrefixed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "u1", "A3003", "--reason", "too small", "--approvals", "2")
	out, errOut, code := run(t, dir, "resume", "u1", "--action", "approve")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "approved as approver 1 of 2") {
		t.Fatalf("resume: stderr %q, want the approver line", errOut)
	}
	for _, line := range strings.Split(strings.TrimSuffix(errOut, "\n"), "\n") {
		if !strings.HasPrefix(line, "assistant: ") {
			t.Errorf("stderr line %q does not start with \"assistant: \"", line)
		}
	}
	verifyClean(t, dir)
}
