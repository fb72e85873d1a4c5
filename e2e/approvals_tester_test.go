package e2e

// Defects of two-person approval and of decide that a tester found on
// issue 16's build, each in separate processes of the built binary.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// twoApprovals imports ci-bot's orders into a new data dir, grants alice
// and bob, and starts task with --approvals 2 on order C1.
func twoApprovals(t *testing.T, task string) string {
	t.Helper()
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
	as(t, dir, "ci-bot", 0, "approvers", "grant", "bob")
	as(t, dir, "ci-bot", 0, "start", task, "C1", "--reason", "broken", "--approvals", "2")
	return dir
}

// pausedAnswer starts `--user user resume task --action approve` parked
// (SIGSTOP) at point while it holds the task's lease.
func pausedAnswer(t *testing.T, dir, point, user, task string) proc {
	t.Helper()
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "--user", user, "resume", task, "--action", "approve")
	c.Env = append(os.Environ(), "ASSISTANT_FAULT="+point+"@pause")
	return startPaused(t, c, point)
}

// TestBusyHintsNameNoStopToApprovers: while alice's first approval of a
// two-approval task holds it (paused after review, or before it), bob's
// approve is refused busy (exit 3) naming alice's winning answer, or
// saying to wait and show, and never offering `stop`, which bob may not
// run; bob's plain resume is told to wait too. The owner's plain resume
// may still offer stop. Once alice's process ends, bob's approve submits.
func TestBusyHintsNameNoStopToApprovers(t *testing.T) {
	for _, c := range []struct{ point, names string }{
		{"after:review", "approve by alice"},
		// Her answer is in the trail before it is saved (before review
		// runs), so the refusal names it too.
		{"before:review", "approve by alice"},
	} {
		t.Run(c.point, func(t *testing.T) {
			dir := twoApprovals(t, "hz2")
			p := pausedAnswer(t, dir, c.point, "alice", "hz2")
			for _, args := range [][]string{
				{"--user", "bob", "resume", "hz2", "--action", "approve"},
				{"--user", "bob", "resume", "hz2"},
			} {
				_, stderr, code := run(t, dir, args...)
				if code != 3 || strings.Contains(stderr, " stop ") || !strings.Contains(stderr, "show hz2") {
					t.Errorf("%v while alice's approve runs: exit %d, %q; want exit 3 pointing at show, no stop", args, code, stderr)
				}
				if args[len(args)-1] == "approve" && !strings.Contains(stderr, c.names) {
					t.Errorf("bob's lost approve says %q, want %q", stderr, c.names)
				}
			}
			if code := p.goOn(t); code != 0 {
				t.Fatalf("alice's approve: exit %d, %s", code, p.stderr)
			}
			v, _ := as(t, dir, "bob", 0, "resume", "hz2", "--action", "approve")
			if v.Status != "done" || v.Result == nil {
				t.Fatalf("bob's approve after alice's: %+v", v)
			}
			verifyClean(t, dir)
		})
	}
}

// crashedFirstApproval starts task with two approvals in a new data dir
// and kills alice's first approve of it at point (SIGKILL), leaving the
// task recorded running with its process gone.
func crashedFirstApproval(t *testing.T, task, point string) string {
	t.Helper()
	dir := twoApprovals(t, task)
	if _, code, _ := faultRun(t, dir, point, []string{"--user", "alice", "resume", task, "--action", "approve"}); code != 137 {
		t.Fatalf("alice's approve killed at %s: exit %d, want 137", point, code)
	}
	return dir
}

// TestCrashedFirstApprovalIsListedAsShown: a first of two approvals killed
// part-way leaves the record running; list, list --awaiting-me and list
// --status waiting --output csv show the task as show does (waiting for
// the other approval: alice's saved answer is in the trail, killed
// after review ran or before), so `list | decide -` does not skip it, and
// list writes nothing.
func TestCrashedFirstApprovalIsListedAsShown(t *testing.T) {
	for _, c := range []struct {
		point       string
		aliceAwaits bool // her answer was not recorded
	}{
		{"after:review", false},
		{"before:review", false},
	} {
		t.Run(c.point, func(t *testing.T) {
			dir := crashedFirstApproval(t, "k1", c.point)
			v, _ := as(t, dir, "ci-bot", 0, "show", "k1")
			if v.Status != "waiting" {
				t.Fatalf("show after the crash: %s, want waiting", v.Status)
			}
			before := fileSums(t, dir)
			if got := listed(t, dir, "--user", "ci-bot"); got != "k1=waiting" {
				t.Errorf("list = %q, want k1=waiting as show says", got)
			}
			if got := listedAs(t, dir, "bob", "--awaiting-me"); got != "k1=ci-bot" {
				t.Errorf("bob list --awaiting-me = %q, want k1=ci-bot", got)
			}
			want := ""
			if c.aliceAwaits {
				want = "k1=ci-bot"
			}
			if got := listedAs(t, dir, "alice", "--awaiting-me"); got != want {
				t.Errorf("alice list --awaiting-me = %q, want %q", got, want)
			}
			out, _, code := run(t, dir, "--user", "ci-bot", "list", "--status", "waiting", "--output", "csv")
			if code != 0 || !strings.Contains(out, "\nk1,") {
				t.Errorf("list --status waiting --output csv: exit %d\n%s", code, out)
			}
			sameFiles(t, dir, before, "list")
			v, _ = as(t, dir, "bob", 0, "resume", "k1", "--action", "approve")
			if c.aliceAwaits {
				v, _ = as(t, dir, "alice", 0, "resume", "k1", "--action", "approve")
			}
			if v.Status != "done" || v.Result == nil {
				t.Fatalf("the approvals after the crash: %+v", v)
			}
			verifyClean(t, dir)
		})
	}
}

// TestFirstApproverRetriesAndCancels: the first approver's same approve
// given again, after a crash that recorded it or after it was reported,
// is a retry: exit 0, the task still waiting, one decision; their cancel
// ends the task (one cancel ends it, whoever approved before) and their
// edit makes version 2; an approve of the other question named by
// --interrupt is still exit 3.
func TestFirstApproverRetriesAndCancels(t *testing.T) {
	for _, point := range []string{"after:review", ""} {
		name := point
		if name == "" {
			name = "reported"
		}
		t.Run(name, func(t *testing.T) {
			first := func(task string) string {
				if point == "" {
					dir := twoApprovals(t, task)
					as(t, dir, "alice", 0, "resume", task, "--action", "approve")
					return dir
				}
				return crashedFirstApproval(t, task, point)
			}
			dir := first("k1")
			v, note := as(t, dir, "alice", 0, "resume", "k1", "--action", "approve")
			if v.Status != "waiting" || len(v.Decisions) != 1 || !strings.Contains(note, "already") {
				t.Fatalf("alice's approve again: %s, %d decisions, note %q; want waiting, 1, a note", v.Status, len(v.Decisions), note)
			}
			card, _, _ := run(t, dir, "--user", "alice", "--output", "text", "show", "k1")
			if strings.Contains(card, "--action approve") || !strings.Contains(card, "another approver") || !strings.Contains(card, "--action cancel") {
				t.Errorf("alice's card after her approve offers what she may not do, or not what she may:\n%s", card)
			}
			v, _ = as(t, dir, "ci-bot", 0, "show", "k1")
			var other string
			for _, in := range v.Interrupts {
				if in.Value.Approver == 2 {
					other = in.ID
				}
			}
			if other != "" {
				refused(t, dir, 3, "another person", "--user", "alice", "resume", "k1", "--action", "approve", "--interrupt", other)
			}
			v, _ = as(t, dir, "alice", 0, "resume", "k1", "--action", "cancel")
			if v.Status != "cancelled" {
				t.Fatalf("alice's cancel after her approve: %s, want cancelled", v.Status)
			}
			verifyClean(t, dir)

			dir = first("k2")
			v, _ = as(t, dir, "alice", 0, "resume", "k2", "--action", "edit", "--reason", "wrong size")
			if v.Status != "waiting" || v.Draft == nil || v.Draft.Version != 2 {
				t.Fatalf("alice's edit after her approve: %+v", v)
			}
			as(t, dir, "alice", 0, "resume", "k2", "--action", "approve")
			v, _ = as(t, dir, "bob", 0, "resume", "k2", "--action", "approve")
			if v.Status != "done" {
				t.Fatalf("version 2 approved by alice and bob: %s", v.Status)
			}
			verifyClean(t, dir)
		})
	}
}

// TestDecideRowErrorsPasteAsResumes: a decide row's error is the message
// resume prints for the same answer, its quoted commands carrying the
// global flags (--data, --user) in the JSON and text report and in show
// --rows (json, csv, text) alike; the text card of a decide run is titled
// "Decide run", as show --rows titles it.
func TestDecideRowErrorsPasteAsResumes(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
	v1, _ := as(t, dir, "ci-bot", 0, "start", "d2", "C2", "--reason", "broken")
	as(t, dir, "alice", 0, "resume", "d2", "--action", "edit", "--reason", "wrong size")
	file := t.TempDir() + "/dec.csv"
	if err := os.WriteFile(file, []byte("task,action,draft\nnosuch,approve,\nd2,approve,"+v1.Draft.DraftID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, args := range [][]string{{"resume", "nosuch", "--action", "approve"}, {"resume", "d2", "--action", "approve", "--draft", v1.Draft.DraftID}} {
		out, _, _ := run(t, dir, append([]string{"--user", "alice"}, args...)...)
		var e struct{ Error struct{ Message string } }
		if err := jsonUnmarshal(out, &e); err != nil || !strings.Contains(e.Error.Message, "`assistant --data "+dir+" --user alice ") {
			t.Fatalf("resume %v: %q, %v; want a message with a pasteable command", args, out, err)
		}
		want = append(want, e.Error.Message)
	}
	out, _, code := run(t, dir, "--user", "alice", "decide", file)
	var rep struct {
		Task string
		Rows []struct{ Error string }
	}
	if err := jsonUnmarshal(out, &rep); err != nil || code != 0 || len(rep.Rows) != 2 {
		t.Fatalf("decide: exit %d, %v\n%s", code, err, out)
	}
	for i, r := range rep.Rows {
		if r.Error != want[i] {
			t.Errorf("decide row %d error %q;\nresume says %q", i+1, r.Error, want[i])
		}
	}
	for _, output := range []string{"json", "csv", "text"} {
		out, _, _ := run(t, dir, "--user", "alice", "show", rep.Task, "--rows", "--output", output)
		for _, w := range want {
			if output != "json" && !strings.Contains(out, w) {
				t.Errorf("show --rows --output %s lacks %q:\n%s", output, w, out)
			}
		}
		if output == "json" && !strings.Contains(out, "--user alice show d2") {
			t.Errorf("show --rows json: no pasteable command:\n%s", out)
		}
	}
	text, _, _ := run(t, dir, "--user", "alice", "--output", "text", "decide", file, "--id", "again")
	if !strings.HasPrefix(text, "Decide run again ·") || !strings.Contains(text, want[1]) {
		t.Errorf("decide text report:\n%s\nwant it titled \"Decide run again\" with the row errors resume prints", text)
	}
	_, stderr, _ := run(t, dir, "--user", "ci-bot", "approvers", "revoke", "ci-bot")
	if strings.Contains(stderr, "grant another") || !strings.Contains(stderr, "owns the tasks") {
		t.Errorf("revoke of oneself: %q; want no word of granting", stderr)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestUserNamesRefuseInvisibleCharacters: a user name holding a character
// that prints as nothing or as a blank (a Hangul filler, the Braille
// blank, a combining grapheme joiner, a variation selector, a soft
// hyphen) is refused wherever a user name enters: --user, ASSISTANT_USER,
// approvers grant and revoke, the user column of an orders file; one
// line, exit 2, no file changed. Names that differ in case stay distinct
// users.
func TestUserNamesRefuseInvisibleCharacters(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	for _, name := range []string{"\u3164", "\u2800", "ali\u034fce", "bo\ufe0fb", "\u115fx", "a\u00adb", "\uffa0"} {
		refused(t, dir, 2, "user name", "--user", "ci-bot", "approvers", "grant", name)
		refused(t, dir, 2, "user name", "--user", "ci-bot", "approvers", "revoke", name)
		refused(t, dir, 2, "--user: user name", "--user", name, "list")
		before := fileSums(t, dir)
		c := exec.Command(assistantBin(), "--data", dir, "list")
		c.Env = append(os.Environ(), "ASSISTANT_USER="+name)
		stderr, code := new(strings.Builder), 0
		c.Stderr = stderr
		code = exitOf(t, c.Run())
		if code != 2 || !strings.Contains(stderr.String(), "ASSISTANT_USER: user name") {
			t.Errorf("ASSISTANT_USER=%q list: exit %d, %q", name, code, stderr)
		}
		sameFiles(t, dir, before, "ASSISTANT_USER list")
		file := t.TempDir() + "/orders.csv"
		if err := os.WriteFile(file, []byte("order_id,user,item,delivered_days_ago,final_sale\nZ1,"+name+",x,2,false\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, 2, "invisible", "--user", "ci-bot", "orders", "import", file, "--operator")
	}
	as(t, dir, "ci-bot", 0, "approvers", "grant", "Alice")
	as(t, dir, "ci-bot", 0, "approvers", "grant", "alice")
}

// TestHistoryEscapesAsShowDoes: a comment holding characters that print
// as nothing (the Arabic letter mark, a soft hyphen, the Mongolian vowel
// separator, a tag character) is printed escaped by history's text as
// show's card escapes it, never raw.
func TestHistoryEscapesAsShowDoes(t *testing.T) {
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "start", "h1", "C1", "--reason", "broken")
	comment := "fix\u061c it\u00ad now\u180e please\U000e0041"
	as(t, dir, "ci-bot", 0, "resume", "h1", "--action", "revise", "--comment", comment)
	for _, cmd := range [][]string{{"history", "h1"}, {"show", "h1"}} {
		out, _, code := run(t, dir, append([]string{"--user", "ci-bot", "--output", "text"}, cmd...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d", cmd, code)
		}
		for _, r := range []string{"\u061c", "\u00ad", "\u180e", "\U000e0041"} {
			if strings.Contains(out, r) {
				t.Errorf("%v prints %U raw:\n%s", cmd, []rune(r)[0], out)
			}
		}
		if !strings.Contains(out, `\u061c`) || !strings.Contains(out, `\U000e0041`) {
			t.Errorf("%v does not escape the comment as \\u061c … \\U000e0041:\n%s", cmd, out)
		}
	}
}

// TestListEndedAfterCrashByStatus: a task whose run ended (its last
// checkpoint written) but whose holder was killed before it let go is
// recorded running; list --status done shows it as show does, beside the
// tasks recorded done, in creation order, and --status running and
// --status cancelled do not, list writing nothing.
func TestListEndedAfterCrashByStatus(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "e1", "A3001", "--reason", "damaged")
	mustRun(t, dir, "start", "e2", "A3002", "--reason", "damaged")
	mustRun(t, dir, "start", "e3", "A3004", "--reason", "damaged")
	mustRun(t, dir, "resume", "e2", "--action", "cancel")
	mustRun(t, dir, "resume", "e3", "--action", "approve")
	if _, code, _ := faultRun(t, dir, "after-checkpoint:submit", []string{"resume", "e1", "--action", "approve"}); code != 137 {
		t.Fatalf("approve killed after submit's checkpoint: exit %d, want 137", code)
	}
	if got := record(t, dir, "e1", "status"); got != "running" {
		t.Fatalf("e1 recorded %s, want running (its holder killed before it let go)", got)
	}
	// The first command after the crash merges the -wal the killed
	// process left into the files (docs/storage.md): show does here.
	if v := mustRun(t, dir, "show", "e1"); v["status"] != "done" {
		t.Fatalf("show e1 after the crash: %v, want done", v["status"])
	}
	before := fileSums(t, dir)
	for _, c := range []struct{ status, want string }{
		{"done", "e1=done e3=done"},
		{"cancelled", "e2=cancelled"},
		{"running", ""},
	} {
		if got := listed(t, dir, "--status", c.status); got != c.want {
			t.Errorf("list --status %s = %q, want %q", c.status, got, c.want)
		}
	}
	if got := listed(t, dir); got != "e1=done e2=cancelled e3=done" {
		t.Errorf("list = %q, want every task as show says", got)
	}
	sameFiles(t, dir, before, "list")
}
