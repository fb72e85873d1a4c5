package e2e

// What the trail holds is what counts (docs/recovery.md "The decision
// trail and the head"): every command counts the answers the business
// file's decision trail holds, whatever process died between the trail and
// the head and whichever file was put back from an older copy; a head that
// holds an answer the trail lacks is inconsistent everywhere, never
// trusted, and changes nothing.

import (
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// olderTrail is a store whose business side is put back from before the
// answers its head holds: on a data dir the older business.sqlite itself,
// on PostgreSQL the business schema's decision trail of the task as the
// older copy has it (rows added since deleted).
type olderTrail struct {
	cliStore
	older string // the data dir's older copy of business.sqlite
	kept  string // on PostgreSQL: the decision ids the older copy holds, quoted
}

// takeOlder keeps the business side as it is now.
func (s *olderTrail) takeOlder(t *testing.T, task string) {
	t.Helper()
	if s.dir != "" {
		s.older = snapshotFiles(t, s.dir)
		return
	}
	s.kept = s.pg.query(t, `SELECT coalesce(string_agg(quote_literal(decision_id), ','), '''''') FROM business.decisions WHERE task_id = $1`, task)
}

// putBack puts the kept business side back.
func (s *olderTrail) putBack(t *testing.T, task string) {
	t.Helper()
	if s.dir != "" {
		copyTo(t, s.older, s.dir, "business.sqlite")
		return
	}
	s.pg.exec(t, `DELETE FROM business.decisions WHERE task_id = '`+task+`' AND decision_id NOT IN (`+s.kept+`)`)
}

// contents is what the store holds, to compare before and after a
// refused command.
func (s *olderTrail) contents(t *testing.T) string {
	t.Helper()
	if s.dir != "" {
		// The rows, not the bytes: a -wal that a killed process left is
		// folded into its file by the next process that closes it last.
		var b strings.Builder
		for _, f := range []struct {
			file string
			qs   []string
		}{
			{"business.sqlite", []string{
				`SELECT count(*) || ' ' || coalesce(group_concat(decision_id || by_user || action, ','), '') FROM decisions`,
				`SELECT coalesce(group_concat(task_id || status || stage || updated_at, ','), '') FROM tasks`,
				`SELECT coalesce(group_concat(draft_id || version || coalesce(superseded_at, ''), ','), '') FROM drafts`,
				`SELECT count(*) FROM applications`,
			}},
			{"checkpoints.sqlite", []string{`SELECT count(*) FROM checkpoints`, `SELECT count(*) FROM writes`, `SELECT count(*) FROM fences`}},
		} {
			for _, q := range f.qs {
				b.WriteString(f.file + ": " + query(t, s.dir, f.file, q) + "\n")
			}
		}
		return b.String()
	}
	return s.pg.contents(t)
}

// wantInconsistent checks that user's args exit 1 with the error code
// inconsistent, naming the task and the answer the trail lacks.
func (s *olderTrail) wantInconsistent(t *testing.T, task, user string, args ...string) {
	t.Helper()
	out, errOut, code := s.run(t, nil, user, args...)
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal([]byte(out), &e)
	if code != 1 || e.Error.Code != "inconsistent" || !strings.Contains(errOut, "task "+task+" is inconsistent") ||
		!strings.Contains(errOut, "no such answer in its decision trail") {
		t.Errorf("--user %s %s: exit %d, code %q, stderr %q; want exit 1, inconsistent, the answer the trail lacks",
			user, strings.Join(args, " "), code, e.Error.Code, errOut)
	}
}

// awaiting is the tasks list --awaiting-me gives user, space-separated.
func (s *olderTrail) awaiting(t *testing.T, user string) string {
	t.Helper()
	v, _ := s.want(t, nil, 0, user, "list", "--awaiting-me")
	var got []string
	for _, tk := range v["tasks"].([]any) {
		got = append(got, tk.(map[string]any)["task"].(string))
	}
	return strings.Join(got, " ")
}

// TestHeadAheadOfTheTrailIsInconsistent: the business side put back from
// before an answer the head holds — alice's first of two approvals (its
// round's task ran with it), her approval saved at the head and not yet
// run (killed before review), a revise applied to the state — on a data
// dir and on PostgreSQL. verify reports the task (exit 1, with a fix);
// show, wait, resume with any answer and without, and a decide row refuse
// it as inconsistent and change nothing; list --awaiting-me offers it to
// nobody; recover carries nothing on; no application is made.
func TestHeadAheadOfTheTrailIsInconsistent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		approvals string
		// answer gives the answer the head holds and the trail will lack.
		answer func(t *testing.T, s *olderTrail)
	}{
		{"FirstOfTwoApprovals", "2", func(t *testing.T, s *olderTrail) {
			s.approveAs(t, nil, "alice", "h1")
		}},
		{"ApprovalSavedNotRun", "2", func(t *testing.T, s *olderTrail) {
			if _, _, code := s.run(t, []string{"ASSISTANT_FAULT=before:review"}, "alice", "resume", "h1", "--action", "approve"); code != 137 {
				t.Fatalf("alice's approve killed before review: exit %d, want 137", code)
			}
		}},
		{"ReviseApplied", "1", func(t *testing.T, s *olderTrail) {
			s.want(t, nil, 0, "alice", "resume", "h1", "--action", "revise", "--comment", "a photo please")
		}},
	}
	for name, make := range cliStores(t) {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := &olderTrail{cliStore: make(t)}
				s.ownerOrders(t)
				s.want(t, nil, 0, "owner", "start", "h1", "Z1", "--reason", "size", "--approvals", tc.approvals)
				s.takeOlder(t, "h1")
				tc.answer(t, s)
				s.putBack(t, "h1")

				out, _, code := s.run(t, nil, "owner", "verify")
				if code != 1 || !strings.Contains(out, `"task": "h1"`) || !strings.Contains(out, "no such answer in its decision trail") || !strings.Contains(out, `"fix": "restore both`) {
					t.Fatalf("verify: exit %d, want 1 with h1's finding and its fix:\n%s", code, out)
				}
				before := s.contents(t)
				s.wantInconsistent(t, "h1", "owner", "show", "h1")
				s.wantInconsistent(t, "h1", "owner", "wait", "h1", "--timeout", "0s")
				for _, u := range []string{"alice", "bob", "carol"} {
					s.wantInconsistent(t, "h1", u, "resume", "h1", "--action", "approve")
				}
				s.wantInconsistent(t, "h1", "bob", "resume", "h1", "--action", "cancel")
				s.wantInconsistent(t, "h1", "owner", "resume", "h1", "--reason", "size and colour")
				s.wantInconsistent(t, "h1", "owner", "resume", "h1")
				if after := s.contents(t); after != before {
					t.Errorf("a refused command changed the store:\n%s\nwant\n%s", after, before)
				}
				for _, u := range []string{"owner", "alice", "bob", "carol"} {
					if got := s.awaiting(t, u); got != "" {
						t.Errorf("list --awaiting-me as %s: %q, want nothing (its two stores disagree)", u, got)
					}
				}
				// A run killed part-way is recover's to carry on: it reports
				// the task inconsistent instead (exit 1) and writes nothing.
				if _, errOut, code := s.run(t, nil, "owner", "recover"); code != 0 && (code != 1 || !strings.Contains(errOut, "task h1 is inconsistent")) {
					t.Errorf("recover: exit %d, %q; want 0, or 1 naming h1 inconsistent", code, errOut)
				}
				if after := s.contents(t); after != before {
					t.Errorf("recover changed the store:\n%s\nwant\n%s", after, before)
				}
				rows := filepath.Join(t.TempDir(), "decide.csv")
				if err := os.WriteFile(rows, []byte("task,action\nh1,approve\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				rep, _ := s.want(t, nil, 0, "bob", "decide", rows)
				if counts := rep["batch"].(map[string]any)["counts"].(map[string]any); counts["inconsistent"] != 1.0 {
					t.Errorf("decide: counts %v, want the row inconsistent", counts)
				}
				if s.dir != "" {
					if n := applications(t, s.dir, "h1"); n != "0" {
						t.Errorf("%s applications of h1, want 0", n)
					}
				} else {
					s.pg.wantApps(t, "h1", "0")
				}
			})
		}
	}
}

// TestTrailAheadOfTheHeadCounts: the checkpoint side put back from before
// alice's first of two approvals (an older checkpoints.sqlite), or her
// command killed after the trail's commit and before the head's: the
// trail holds her approval and it counts on every path — show, history,
// the card and list --awaiting-me count it once, verify reads no
// contradiction, her approve again is a retry, and bob's approve submits
// once with both.
func TestTrailAheadOfTheHeadCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer func(t *testing.T, dir string)
	}{
		{"OlderCheckpointsFile", func(t *testing.T, dir string) {
			older := snapshotFiles(t, dir)
			as(t, dir, "alice", 0, "resume", "k1", "--action", "approve")
			copyTo(t, older, dir, "checkpoints.sqlite")
		}},
		{"KilledAfterTheTrail", func(t *testing.T, dir string) {
			if _, code, _ := faultRun(t, dir, "answer:after-trail", []string{"--user", "alice", "resume", "k1", "--action", "approve"}); code != 137 {
				t.Fatalf("alice's approve killed after the trail: exit %d, want 137", code)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ciBotOrders(t, dir)
			twoApproverTask(t, dir, "k1", "C1")
			tc.answer(t, dir)
			aliceCountsOnce(t, dir, "k1")
			if rep, code, out := verify(t, dir); code != 0 || !rep.Clean {
				t.Fatalf("verify: exit %d, want 0 (the trail ahead is no contradiction):\n%s", code, out)
			}
			again, note := as(t, dir, "alice", 0, "resume", "k1", "--action", "approve")
			if again.Status != "waiting" || strings.Contains(note, "2 of 2") {
				t.Fatalf("alice's approve again: %s, note %q; want waiting, her approval counted once", again.Status, note)
			}
			done, _ := as(t, dir, "bob", 0, "resume", "k1", "--action", "approve")
			if done.Status != "done" || done.Result == nil || trailOfView(done) != "alice approve, bob approve" {
				t.Fatalf("bob's approve: %s, decisions %q; want done with both", done.Status, trailOfView(done))
			}
			if n := allApplications(t, dir); n != "1" {
				t.Errorf("%s applications, want 1", n)
			}
			verifyClean(t, dir)
		})
	}
}

// sqliteSession opens each file of dir as another program's session
// would (read-write, the driver's defaults), reads every table's count
// and closes it: the last connection to close folds the -wal into its
// file.
func sqliteSession(t *testing.T, dir string) {
	t.Helper()
	for _, n := range []string{"business.sqlite", "checkpoints.sqlite"} {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, n)+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
		if err == nil {
			var names []string
			for rows.Next() {
				var name string
				if rows.Scan(&name) == nil {
					names = append(names, name)
				}
			}
			rows.Close()
			for _, name := range names {
				var n int
				_ = db.QueryRow(`SELECT count(*) FROM "` + name + `"`).Scan(&n)
			}
		}
		db.Close()
	}
}

// TestReadsLeaveTheNextCheckStanding: a reading command (show, list,
// history, verify, backup) or another program's sqlite session on a data
// dir whose files disagree leaves the next writing command refusing as it
// would without the read: the same exit code and error code (after
// another program's session, which merges a -wal it finds, the same exit
// code), and no application made. The damages: an older business.sqlite under a head that
// holds an approval, a business.sqlite of another data dir, a damaged page
// in the middle of business.sqlite, a -wal of another data dir's business
// file.
func TestReadsLeaveTheNextCheckStanding(t *testing.T) {
	t.Parallel()
	damages := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"OlderBusinessFileUnderAnApproval", func(t *testing.T, dir string) {
			older := snapshotFiles(t, dir)
			as(t, dir, "alice", 0, "resume", "k1", "--action", "approve")
			copyTo(t, older, dir, "business.sqlite")
		}},
		{"BusinessFileOfAnotherDataDir", func(t *testing.T, dir string) {
			other := t.TempDir()
			ciBotOrders(t, other)
			twoApproverTask(t, other, "k1", "C1")
			copyTo(t, other, dir, "business.sqlite")
		}},
		{"CorruptPageInTheMiddle", func(t *testing.T, dir string) {
			mustRun(t, dir, "batch", "b1", batchFile(t, dir, 300))
			leaves := atoi(query(t, dir, "business.sqlite", `SELECT count(*) FROM dbstat WHERE name = 'steps' AND pagetype = 'leaf'`))
			page := atoi(query(t, dir, "business.sqlite", `SELECT pageno FROM dbstat WHERE name = 'steps' AND pagetype = 'leaf' ORDER BY path LIMIT 1 OFFSET ?`, leaves/2))
			if leaves < 5 || page == 0 {
				t.Fatalf("the timeline has %d leaves; the test needs a tree of several", leaves)
			}
			// File times tick coarsely on some file systems: let the clock
			// pass the last clean close before the page is damaged.
			time.Sleep(20 * time.Millisecond)
			f, err := os.OpenFile(filepath.Join(dir, "business.sqlite"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte(strings.Repeat("\xde\xad\xbe\xef", 256)), int64(page-1)*4096+200); err != nil {
				t.Fatal(err)
			}
		}},
		{"WALOfAnotherDataDir", func(t *testing.T, dir string) {
			other := t.TempDir()
			ciBotOrders(t, other)
			twoApproverTask(t, other, "k1", "C1")
			killedAt(t, other, "after-checkpoint:prepare", "--user", "ci-bot", "start", "o2", "C2", "--reason", "broken")
			wal, err := os.ReadFile(filepath.Join(other, "business.sqlite-wal"))
			if err != nil || len(wal) == 0 {
				t.Fatalf("the killed process left no frames: %d bytes, %v", len(wal), err)
			}
			if err := os.WriteFile(filepath.Join(dir, "business.sqlite-wal"), wal, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	readers := []struct {
		name string
		read func(t *testing.T, dir string)
		// other: another program, which merges a -wal it finds for good;
		// the writer must still refuse (the same exit code), by the
		// check that then applies (the identity the file now carries).
		other bool
	}{
		{"Show", func(t *testing.T, dir string) { run(t, dir, "--user", "ci-bot", "show", "k1") }, false},
		{"List", func(t *testing.T, dir string) {
			run(t, dir, "--user", "ci-bot", "list")
			run(t, dir, "--user", "bob", "list", "--awaiting-me")
		}, false},
		{"History", func(t *testing.T, dir string) { run(t, dir, "--user", "ci-bot", "history", "k1") }, false},
		{"Verify", func(t *testing.T, dir string) { verify(t, dir) }, false},
		{"Backup", func(t *testing.T, dir string) { run(t, dir, "backup", filepath.Join(t.TempDir(), "bk")) }, false},
		{"SQLiteSession", sqliteSession, true},
	}
	writer := []string{"--user", "bob", "resume", "k1", "--action", "approve"}
	refusal := func(t *testing.T, dir string) (int, string) {
		t.Helper()
		out, _, code := run(t, dir, writer...)
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal([]byte(out), &e)
		return code, e.Error.Code
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			ciBotOrders(t, base)
			twoApproverTask(t, base, "k1", "C1")
			d.damage(t, base)
			// Untouched by any reader: how the writer refuses.
			plain := t.TempDir()
			copyAsIs(t, base, plain)
			wantCode, wantErr := refusal(t, plain)
			if wantCode == 0 {
				t.Fatalf("the writer was not refused on the damaged data dir (error %q)", wantErr)
			}
			for _, r := range readers {
				t.Run(r.name, func(t *testing.T) {
					dir := t.TempDir()
					copyAsIs(t, base, dir)
					r.read(t, dir)
					if code, errCode := refusal(t, dir); code != wantCode || (errCode != wantErr && !r.other) || errCode == "" {
						t.Errorf("after %s: the writer exits %d (%q), want %d (%q) as without the read", r.name, code, errCode, wantCode, wantErr)
					}
					if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d ON d.draft_id = a.draft_id WHERE d.task_id = 'k1'`); got != "0" {
						t.Errorf("after %s: %s applications of k1, want 0", r.name, got)
					}
				})
			}
		})
	}
}

// copyAsIs copies the files of both stores in src into dst with their
// -wal as they lie, its modification time kept (a -shm is rebuilt by the
// next open).
func copyAsIs(t *testing.T, src, dst string) {
	t.Helper()
	for _, n := range []string{"business.sqlite", "business.sqlite-wal", "checkpoints.sqlite", "checkpoints.sqlite-wal"} {
		b, err := os.ReadFile(filepath.Join(src, n))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
		// A -wal keeps its time: a file changed after its -wal was
		// last emptied reads so in the copy too.
		if fi, err := os.Stat(filepath.Join(src, n)); err == nil && strings.HasSuffix(n, "-wal") {
			if err := os.Chtimes(filepath.Join(dst, n), fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestKilledAfterTheTrailCountsOnEveryStore: alice's first of two
// approvals killed after the trail's commit and before the head's counts
// on a data dir and on PostgreSQL alike: show and history name it once,
// list --awaiting-me leaves the task out for her and keeps it for bob,
// her approve again is a retry (not "2 of 2"), bob's approve submits
// once, and verify is clean.
func TestKilledAfterTheTrailCountsOnEveryStore(t *testing.T) {
	t.Parallel()
	for name, make := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := &olderTrail{cliStore: make(t)}
			s.ownerOrders(t)
			s.want(t, nil, 0, "owner", "start", "k1", "Z1", "--reason", "size", "--approvals", "2")
			if _, _, code := s.run(t, []string{"ASSISTANT_FAULT=answer:after-trail"}, "alice", "resume", "k1", "--action", "approve"); code != 137 {
				t.Fatalf("alice's approve killed after the trail: exit %d, want 137", code)
			}
			by := func(v map[string]any) string {
				var out []string
				for _, d := range v["decisions"].([]any) {
					out = append(out, d.(map[string]any)["by"].(string)+" "+d.(map[string]any)["action"].(string))
				}
				return strings.Join(out, ", ")
			}
			if v, _ := s.want(t, nil, 0, "owner", "show", "k1"); v["status"] != "waiting" || by(v) != "alice approve" {
				t.Fatalf("show k1: %v, decisions %q; want waiting, alice's approve once", v["status"], by(v))
			}
			if got := s.awaiting(t, "alice"); got != "" {
				t.Errorf("list --awaiting-me as alice: %q, want nothing (she approved)", got)
			}
			if got := s.awaiting(t, "bob"); got != "k1" {
				t.Errorf("list --awaiting-me as bob: %q, want k1", got)
			}
			again, note := s.want(t, nil, 0, "alice", "resume", "k1", "--action", "approve")
			if again["status"] != "waiting" || by(again) != "alice approve" || strings.Contains(note, "2 of 2") {
				t.Fatalf("alice's approve again: %v, decisions %q, note %q; want waiting, counted once", again["status"], by(again), note)
			}
			done, _ := s.want(t, nil, 0, "bob", "resume", "k1", "--action", "approve")
			if done["status"] != "done" || by(done) != "alice approve, bob approve" {
				t.Fatalf("bob's approve: %v, decisions %q; want done with both", done["status"], by(done))
			}
			if s.dir != "" {
				if n := applications(t, s.dir, "k1"); n != "1" {
					t.Errorf("%s applications of k1, want 1", n)
				}
				verifyClean(t, s.dir)
			} else {
				s.pg.wantApps(t, "k1", "1")
				s.pg.verifyClean(t)
			}
		})
	}
}

// TestTrailWithoutTheMarkOfAnUncountedApprovalIsInconsistent: alice's
// first of two approvals no longer counted at the submit (her grant
// revoked before bob's approval was carried out by recover), and the
// business side put back from before that submit marked it (on a data
// dir the older business.sqlite, on PostgreSQL the mark cleared): the
// head counts one approval, the trail two. verify reports the task,
// show and carol's approve refuse it as inconsistent, and nothing is
// submitted.
func TestTrailWithoutTheMarkOfAnUncountedApprovalIsInconsistent(t *testing.T) {
	t.Parallel()
	for name, make := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := &olderTrail{cliStore: make(t)}
			s.ownerOrders(t)
			s.want(t, nil, 0, "owner", "start", "h1", "Z1", "--reason", "size", "--approvals", "2")
			s.approveAs(t, nil, "alice", "h1")
			if _, _, code := s.run(t, []string{"ASSISTANT_FAULT=before:submit"}, "bob", "resume", "h1", "--action", "approve"); code != 137 {
				t.Fatalf("bob's approve killed before its submit: exit %d, want 137", code)
			}
			// A write folds the -wal the killed process left into
			// business.sqlite, so the copy holds bob's approval.
			s.want(t, nil, 0, "owner", "approvers", "grant", "dave")
			s.takeOlder(t, "h1")
			s.want(t, nil, 0, "owner", "approvers", "revoke", "alice")
			s.want(t, nil, 0, "owner", "recover")
			if v, _ := s.want(t, nil, 0, "owner", "show", "h1"); v["status"] != "waiting" {
				t.Fatalf("after recover: status %v, want waiting (alice's approval no longer counts)", v["status"])
			}
			if s.dir != "" {
				s.putBack(t, "h1")
			} else {
				s.pg.exec(t, `UPDATE business.decisions SET not_counted = '' WHERE task_id = 'h1'`)
			}

			out, _, code := s.run(t, nil, "owner", "verify")
			if code != 1 || !strings.Contains(out, `"task": "h1"`) || !strings.Contains(out, "no longer counts") {
				t.Fatalf("verify: exit %d, want 1 with h1's finding:\n%s", code, out)
			}
			for _, c := range []struct{ user, args string }{{"owner", "show h1"}, {"carol", "resume h1 --action approve"}} {
				_, errOut, code := s.run(t, nil, c.user, strings.Fields(c.args)...)
				if code != 1 || !strings.Contains(errOut, "task h1 is inconsistent") || !strings.Contains(errOut, "holds no mark on it") {
					t.Errorf("--user %s %s: exit %d, %q; want 1, inconsistent, the mark the trail lacks", c.user, c.args, code, errOut)
				}
			}
			if s.apps(t, "h1") != "0" {
				t.Errorf("%s applications of h1, want 0", s.apps(t, "h1"))
			}
		})
	}
}
