package cmd

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

// TestCardExpiredDraft: the card of a task waiting for approval of an
// expired draft says so and prints the commands that go on (a new
// request, recover), with the global flags, instead of the approve
// command that can no longer submit anything.
func TestCardExpiredDraft(t *testing.T) {
	kind := returns.KindApproval
	expires := time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC)
	question, _ := json.Marshal(returns.ApprovalQuestion{Kind: kind, DraftID: "d_1", OrderID: "A3003", Reason: "too small", ExpiresAt: expires, Effect: "approve submits"})
	view := func(expired bool) *returns.View {
		return &returns.View{
			Task: "r1", User: "ci-bot", Order: "A3003", Status: returns.StatusWaiting, Stage: returns.StageDraftReady, Kind: &kind,
			Next:       []string{returns.NodeReview},
			Interrupts: []returns.InterruptView{{ID: "i1", Node: returns.NodeReview, Kind: kind, Value: question}},
			Draft:      &returns.DraftView{DraftID: "d_1", OrderID: "A3003", Reason: "too small", ExpiresAt: expires, Expired: expired},
		}
	}
	var got strings.Builder
	if err := writeCard(&got, view(true), "assistant --data /tmp/ci --user ci-bot", "ci-bot"); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "card_expired_text", got.String())
	if strings.Contains(got.String(), "--action approve") {
		t.Errorf("the card of an expired draft offers approve:\n%s", got.String())
	}

	got.Reset()
	if err := writeCard(&got, view(false), "assistant", "ci-bot"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.String(), "--action approve --draft d_1") || strings.Contains(got.String(), "expired before") {
		t.Errorf("the card of a draft not expired must ask for approval:\n%s", got.String())
	}
}

// TestCardHostileText: every text of the card from input or a store is
// printed escaped, and every command line it prints pastes into bash as
// the very arguments meant: a reason with a bidi override and a quote, an
// id with shell syntax (text output escapes control and bidi
// characters everywhere; pasteable Next: lines).
func TestCardHostileText(t *testing.T) {
	kind := returns.KindApproval
	expires := time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC)
	reason := "it's bidi\u202eevil\x1b[31m"
	task := "$(id)2"
	question, _ := json.Marshal(returns.ApprovalQuestion{Kind: kind, DraftID: "d_1", OrderID: "A3003", Reason: reason, ExpiresAt: expires,
		Effect: "approve submits\x1b]0;t\a", Problem: "refused \u2066x"})
	for _, expired := range []bool{false, true} {
		v := &returns.View{
			Task: task, User: "ci-bot", Order: "A3003", Status: returns.StatusWaiting, Stage: returns.StageDraftReady, Kind: &kind,
			Next:       []string{returns.NodeReview},
			Interrupts: []returns.InterruptView{{ID: "i1", Node: returns.NodeReview, Kind: kind, Value: question}},
			Draft:      &returns.DraftView{DraftID: "d_1", OrderID: "A3003", Reason: reason, ExpiresAt: expires, Expired: expired},
			Decisions:  []returns.DecisionView{{By: "eve\u202e", At: expires, Action: "revise", Comment: "fix\u202e it"}},
			Error:      &returns.Failure{Code: "x", Message: "bad \x1b[2J"},
		}
		var b strings.Builder
		if err := writeCard(&b, v, "assistant --data $'/tmp/d\\e'", "ci-bot"); err != nil {
			t.Fatal(err)
		}
		card := b.String()
		if strings.ContainsFunc(card, func(r rune) bool { return r != '\n' && termtext.NeedsEscape(r) && r != '\\' }) {
			t.Errorf("expired=%v: the card holds raw controls or bidi characters:\n%q", expired, card)
		}
		for _, line := range strings.Split(card, "\n") {
			_, cmdline, ok := strings.Cut(line, "assistant --data $'/tmp/d\\e' ")
			if !ok {
				continue
			}
			cmdline, _, _ = strings.Cut(cmdline, "   (")
			// A text the person writes is a placeholder the shell refuses
			// (docs/cli.md "Text output"): the line is theirs to finish.
			if unfinished, _, ok := strings.Cut(cmdline, " --reason <reason>"); ok {
				cmdline = unfinished
			} else if unfinished, _, ok := strings.Cut(cmdline, " --comment <comment>"); ok {
				cmdline = unfinished
			}
			args := pasteArgs(t, cmdline)
			if len(args) < 2 {
				continue // recover
			}
			switch args[0] {
			case "resume", "stop":
				if args[1] != task {
					t.Errorf("line %q pastes as %q, want task %q", line, args, task)
				}
			case "start":
				if want := []string{"start", NewTaskPlaceholder, "A3003", "--reason", reason}; strings.Join(args, "\x00") != strings.Join(want, "\x00") {
					t.Errorf("line %q pastes as %q, want %q", line, args, want)
				}
			}
		}
	}
}

// pasteArgs pastes line into bash as the arguments of printf and returns
// them as bash passed them. The test is skipped without bash.
func pasteArgs(tb testing.TB, line string) []string {
	tb.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		tb.Skipf("no bash: %v", err)
	}
	c := exec.Command(bash, "-c", `printf '%s\0' `+line)
	c.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	out, err := c.Output()
	if err != nil {
		tb.Fatalf("bash -c %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestCardOffersOnlyWhatTheViewerMayDo: the card of a task waiting for
// the second of two approvals offers the viewer whose approve could not
// be carried out (View.NoApprove: the first approver; two approvals need
// two people) no approve but the cancel, edit and revise they may give;
// another approver gets the approve command.
// The card of a task a live process runs offers stop to its owner only:
// an approver may not stop another user's task.
func TestCardOffersOnlyWhatTheViewerMayDo(t *testing.T) {
	kind := returns.KindApproval
	expires := time.Now().Add(time.Hour).UTC()
	question, _ := json.Marshal(map[string]any{"kind": kind, "draft_id": "d_1", "approver": 2, "approvals": 2, "effect": "approve submits"})
	draft := "d_1"
	one := 1
	waiting := &returns.View{
		Task: "p1", User: "ci-bot", Order: "C1", Status: returns.StatusWaiting, Stage: returns.StageDraftReady, Kind: &kind,
		Interrupts: []returns.InterruptView{{ID: "i2", Node: returns.NodeReview2, Kind: kind, Value: question}},
		Draft:      &returns.DraftView{DraftID: "d_1", Version: 1, OrderID: "C1", Reason: "broken", ExpiresAt: expires},
		Decisions:  []returns.DecisionView{{By: "alice", At: expires, Action: returns.ActionApprove, DraftID: &draft, Version: &one}},
	}
	// The view shown to alice, who gave the first approval (Show sets
	// NoApprove for the person it shows the task to).
	toAlice := *waiting
	toAlice.NoApprove = "alice approved version 1 already; the other approval must come from another person"
	running := &returns.View{Task: "p1", User: "ci-bot", Order: "C1", Status: returns.StatusRunning, Stage: returns.StageDraftReady,
		Holder: &returns.HolderView{PID: 42, Host: "h", Until: expires, Alive: true}}
	for _, c := range []struct {
		name, viewer string
		v            *returns.View
		want, not    []string
	}{
		{"first approver", "alice", &toAlice, []string{"another approver", "--action cancel", "--action edit"}, []string{"--action approve"}},
		{"other approver", "bob", waiting, []string{"--action approve --draft d_1 --interrupt i2", "--action cancel"}, []string{"another approver"}},
		{"owner of a running task", "ci-bot", running, []string{"stop p1"}, nil},
		{"approver of a running task", "alice", running, []string{"show p1"}, []string{" stop "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeCard(&b, c.v, "assistant --user "+c.viewer, c.viewer); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("card for %s lacks %q:\n%s", c.viewer, w, b.String())
				}
			}
			for _, n := range c.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("card for %s holds %q:\n%s", c.viewer, n, b.String())
				}
			}
		})
	}
}
