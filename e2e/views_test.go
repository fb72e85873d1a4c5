package e2e

// The state as it is now (docs/json.md "The state as it is now"): every
// view of a task (show, the text card, list in JSON, text and CSV, list
// --awaiting-me, wait, history, orders show) tells it as it is at the
// moment of the view, offers only what can succeed then, and names the
// same status as every other view.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nowState is one state of a task and what every view must tell of it.
type nowState struct {
	name  string
	order string // the task's order
	// setup makes task "v1" in this state in dir and returns what every
	// view is run with in its environment (the test clock).
	setup func(t *testing.T, dir string) []string
	// viewer is who the card, show, list --awaiting-me, the decide file
	// (list --output csv; --awaiting-me for another user than the
	// owner) and history are run as; "" is the owner, demo-user.
	viewer string
	// status is what show, the card, list, wait and orders show name;
	// exit is show --exit-status's and wait's exit code.
	status string
	exit   int
	// offers are the commands the card offers on its Next:, or: and
	// Recover: lines (cardOffers), in order; questions is how many
	// questions show's JSON asks (interrupts).
	offers    []string
	questions int
	// actions are show's actions for the viewer: what they may do now,
	// each one the card offers too.
	actions []string
	// awaitingSubmit are the approvers show's awaiting_submit names (the
	// approvals the head carries to a submit not finished), in order;
	// uncounted those of them the submit would no longer count.
	awaitingSubmit, uncounted []string
	// countdown: the card counts down to the draft's expiry.
	countdown bool
	// cardHas are further lines of text the card must hold.
	cardHas []string
	// awaiting: list --awaiting-me lists the task; decidable: list
	// --output csv (the rows a decide run takes) lists it.
	awaiting, decidable bool
	// holderAlive is show's holder.alive and list's holder_alive (nil:
	// the task names no holder).
	holderAlive *bool
	// says is what wait's and show --exit-status's stderr must name (""
	// for nothing).
	says string
	// check checks show's JSON further (may be nil).
	check func(t *testing.T, v map[string]any)
	// history checks history's steps and holder (may be nil).
	history func(t *testing.T, steps []map[string]any, holder map[string]any)
	// stored checks the stored records of dir (may be nil).
	stored func(t *testing.T, dir string)
}

// noStepRunning fails t when a step of the timeline reads running.
func noStepRunning(t *testing.T, steps []map[string]any) {
	t.Helper()
	for _, st := range steps {
		if st["status"] == "running" {
			t.Errorf("step %v %v still reads running: %v", st["seq"], st["node"], st)
		}
	}
}

// stepOf is the last timeline step of node, failing t when there is none.
func stepOf(t *testing.T, steps []map[string]any, node string) map[string]any {
	t.Helper()
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i]["node"] == node {
			return steps[i]
		}
	}
	t.Fatalf("no step %s in %v", node, steps)
	return nil
}

// cardOffers is what card offers to run, in order: for every command the
// card gives on a Next:, or: or Recover: line, its resume action
// ("approve", "cancel", …), "resume" for a resume without one, or the
// command's name (recover, start, stop).
func cardOffers(card string) []string {
	var out []string
	for _, line := range strings.Split(card, "\n") {
		if strings.HasPrefix(line, "Error:") {
			continue // the error's hint restates what the Next: lines offer
		}
		// A command the card offers names the data dir it was shown for.
		for _, part := range strings.Split(line, "assistant --data ")[1:] {
			f := strings.Fields(part)[1:]
			if len(f) > 1 && f[0] == "--user" {
				f = f[2:]
			}
			if len(f) == 0 {
				continue
			}
			what := f[0]
			if what == "resume" {
				if i := slices.Index(f, "--action"); i >= 0 && i+1 < len(f) {
					what = f[i+1]
				}
			}
			out = append(out, what)
		}
	}
	return out
}

// stoppedMidStep starts a resume that approves v1 and parks it past its
// step check before the submit, and stops the task with --wait 0, which
// must say what is true when it returns: stopped, its process still
// holding it. It returns the parked process.
func stoppedMidStep(t *testing.T, dir string) proc {
	t.Helper()
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "resume", "v1", "--action", "approve")
	c.Env = append(os.Environ(), "ASSISTANT_FAULT=before:submit@pause")
	p := startPaused(t, c, "before:submit")
	out, errOut, code := run(t, dir, "stop", "v1", "--wait", "0")
	if code != 0 {
		t.Fatalf("stop --wait 0: exit %d, %s", code, errOut)
	}
	var v struct {
		Status string
		Holder *struct{ Alive bool }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stop --wait 0: %v\n%s", err, out)
	}
	if v.Status != "interrupted" || v.Holder == nil || !v.Holder.Alive {
		t.Errorf("stop --wait 0: status %s holder %+v, want interrupted with its paused process still holding it", v.Status, v.Holder)
	}
	return p
}

// stoppedStored checks what a stop that cut a step short stored: no step
// left running (the stop ended it in its own commit, whatever its
// process does next), and no application.
func stoppedStored(t *testing.T, dir string) {
	t.Helper()
	running := query(t, dir, "business.sqlite", `SELECT count(*) FROM steps WHERE task_id = ? AND status = 'running'`, "v1")
	if strings.TrimSpace(running) != "0" {
		t.Errorf("%s steps stored running after the stop, want 0: the stop ends the step it cut short", running)
	}
	if got := strings.TrimSpace(applications(t, dir, "v1")); got != "0" {
		t.Errorf("%s applications after a stop that said interrupted, want 0", got)
	}
}

// cutByTheStop checks that the timeline's submit step reads ended by the
// stop.
func cutByTheStop(t *testing.T, steps []map[string]any, _ map[string]any) {
	t.Helper()
	noStepRunning(t, steps)
	st := stepOf(t, steps, "submit")
	if st["status"] != "failed" || st["ended_at"] == nil || !strings.Contains(st["error"].(string), "interrupted") {
		t.Errorf("submit %v, want ended by the stop (failed, ended_at set, run interrupted)", st)
	}
}

func nowStates() []nowState {
	no, yes := false, true
	return []nowState{
		{
			name: "DraftExpired", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
				return []string{"ASSISTANT_CLOCK=+2h"}
			},
			status: "failed", exit: 6,
			offers:  []string{"start", "recover"},
			actions: []string{"start", "recover"},
			cardHas: []string{"(expired)"},
			check: func(t *testing.T, v map[string]any) {
				e, _ := v["error"].(map[string]any)
				if e == nil || e["code"] != "draft_expired" || !strings.Contains(e["hint"].(string), "recover") {
					t.Errorf("error %v, want draft_expired with a hint naming recover", v["error"])
				}
				if d, _ := v["draft"].(map[string]any); d == nil || d["expired"] != true {
					t.Errorf("draft %v, want expired", v["draft"])
				}
			},
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
		},
		{
			name: "OrderNoLongerReturnable", order: "Z1",
			setup: func(t *testing.T, dir string) []string {
				delivered := time.Now().UTC().AddDate(0, 0, -3).Format(time.RFC3339)
				mustRun(t, dir, "orders", "import", writeShop(t, "Z1,demo-user,Mug,"+delivered+",false"))
				mustRun(t, dir, "start", "v1", "Z1", "--reason", "size", "--draft-ttl", "1h")
				// The shop operator marks the item final sale.
				mustRun(t, dir, "orders", "import", writeShop(t, "Z1,demo-user,Mug,"+delivered+",true"))
				return nil
			},
			status: "waiting", exit: 7,
			offers: []string{"cancel"}, questions: 1,
			actions:  []string{"cancel"},
			cardHas:  []string{"cannot be returned now: final_sale", "submits nothing"},
			awaiting: true,
			check: func(t *testing.T, v map[string]any) {
				if d, _ := v["draft"].(map[string]any); d == nil || d["not_returnable"] != "final_sale" {
					t.Errorf("draft %v, want not_returnable final_sale", v["draft"])
				}
				qs, _ := v["interrupts"].([]any)
				if len(qs) != 1 || !strings.Contains(jsonText(mustJSON(t, qs[0])), "approve submits nothing") {
					t.Errorf("interrupts %v, want the question whose effect says approve submits nothing", qs)
				}
			},
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
		},
		{
			name: "Done", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
				mustRun(t, dir, "resume", "v1", "--action", "approve")
				return nil
			},
			status: "done", exit: 0,
			cardHas: []string{"no longer expires", "Submitted: application"},
			check: func(t *testing.T, v map[string]any) {
				if r, _ := v["result"].(map[string]any); r == nil || r["application_id"] == nil {
					t.Errorf("result %v, want the application", v["result"])
				}
			},
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
		},
		{
			name: "Cancelled", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
				mustRun(t, dir, "resume", "v1", "--action", "cancel")
				return nil
			},
			status: "cancelled", exit: 5,
			cardHas: []string{"no longer expires", "cancel by demo-user"},
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
			stored: func(t *testing.T, dir string) {
				if got := strings.TrimSpace(applications(t, dir, "v1")); got != "0" {
					t.Errorf("%s applications of a cancelled task, want 0", got)
				}
			},
		},
		{
			name: "HolderGone", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				killedAt(t, dir, "before:prepare", "start", "v1", "A3001", "--reason", "size")
				return nil
			},
			status: "running", exit: 8, holderAlive: &no,
			offers:  []string{"recover", "resume"},
			actions: []string{"recover", "resume"},
			cardHas: []string{"is gone"},
			says:    "is running (holder gone): it was left running by a process that is gone; continue it with",
			history: func(t *testing.T, steps []map[string]any, holder map[string]any) {
				noStepRunning(t, steps)
				if st := stepOf(t, steps, "prepare"); st["status"] != "failed" || !strings.Contains(st["error"].(string), "process gone") {
					t.Errorf("prepare %v, want failed: process gone", st)
				}
				if holder == nil || holder["alive"] != false {
					t.Errorf("history holder %v, want alive false", holder)
				}
			},
		},
		{
			name: "StoppedStillHeld", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
				stoppedMidStep(t, dir) // parked until the test ends
				return nil
			},
			status: "interrupted", exit: 8, holderAlive: &yes,
			offers: []string{"resume"}, countdown: true,
			// Nothing succeeds until its process lets go.
			actions: []string{}, awaitingSubmit: []string{"demo-user"},
			cardHas: []string{"Stopped", "still holds it until it lets go", "Then continue it", "approve by demo-user (version 1); its submit has not finished, nothing is submitted yet; a resume continues it once its process lets go"},
			says:    "resume v1",
			history: cutByTheStop,
			stored:  stoppedStored,
		},
		{
			name: "StoppedMidStep", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
				p := stoppedMidStep(t, dir)
				// The stopped process dies without letting go.
				if err := p.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				exitWithin(t, p.done, 30*time.Second)
				return nil
			},
			status: "interrupted", exit: 8, holderAlive: &no,
			offers: []string{"resume"}, countdown: true,
			actions: []string{"resume"}, awaitingSubmit: []string{"demo-user"},
			cardHas: []string{"Stopped", "(next: submit)", "approve by demo-user (version 1); its submit has not finished, nothing is submitted yet; a resume continues it"},
			says:    "resume v1",
			history: cutByTheStop,
			stored:  stoppedStored,
		},
		{
			// Four-eyes: the requester's approve never counts.
			name: "TwoApprovalsShownToTheRequester", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h", "--approvals", "2")
				return nil
			},
			status: "waiting", exit: 7,
			offers: []string{"cancel", "edit", "revise"}, questions: 2, countdown: true,
			actions: []string{"cancel", "edit", "revise"},
			cardHas: []string{"yours cannot count: demo-user is the task's requester"},
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
		},
		{
			name: "FirstApprovalRevokedShownToTheOwner", order: "A3001",
			setup:  revokedFirstApproval,
			status: "waiting", exit: 7,
			offers: []string{"cancel", "edit", "revise"}, questions: 1, countdown: true,
			actions: []string{"cancel", "edit", "revise"},
			cardHas: []string{"(not counted: revoked at", "yours cannot count: demo-user is the task's requester"},
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
		},
		{
			name: "FirstApprovalRevokedShownToAnotherApprover", order: "A3001",
			setup: revokedFirstApproval, viewer: "dave",
			status: "waiting", exit: 7,
			offers: []string{"approve", "cancel", "edit", "revise"}, questions: 1, countdown: true,
			actions:  []string{"approve", "cancel", "edit", "revise"},
			cardHas:  []string{"(not counted: revoked at"},
			awaiting: true, decidable: true,
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
		},
		{
			// The approval of a task that needs one is in the trail once
			// its submit ran; before, awaiting_submit and the card name
			// it, and that recover carries it out.
			name: "ApprovalOfOneKilledBeforeItsSubmit", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
				mustRun(t, dir, "approvers", "grant", "bob")
				killedAt(t, dir, "before:submit", "--user", "bob", "resume", "v1", "--action", "approve")
				return nil
			},
			status: "running", exit: 8, holderAlive: &no,
			// A recover may still submit it before it expires.
			offers: []string{"recover", "resume"}, countdown: true,
			actions: []string{"recover", "resume"}, awaitingSubmit: []string{"bob"},
			cardHas: []string{"is gone", "(next: submit)", "approve by bob (version 1); its submit has not finished, nothing is submitted yet; recover continues it"},
			says:    "is running (holder gone)",
			check: func(t *testing.T, v map[string]any) {
				if ds, _ := v["decisions"].([]any); len(ds) != 0 {
					t.Errorf("decisions %v, want none: the trail holds none before the submit", ds)
				}
			},
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
		},
		{
			// The approver's grant is revoked after their approve was
			// recorded and before its submit ran: every view tells that
			// the submit will not carry it out.
			name: "ApprovalOfOneKilledBeforeItsSubmitThenRevoked", order: "A3001",
			setup: func(t *testing.T, dir string) []string {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
				mustRun(t, dir, "approvers", "grant", "bob")
				killedAt(t, dir, "before:submit", "--user", "bob", "resume", "v1", "--action", "approve")
				mustRun(t, dir, "approvers", "revoke", "bob")
				return nil
			},
			status: "running", exit: 8, holderAlive: &no,
			offers: []string{"recover", "resume"}, countdown: true,
			actions: []string{"recover", "resume"}, awaitingSubmit: []string{"bob"}, uncounted: []string{"bob"},
			cardHas: []string{"approve by bob (version 1); its submit has not finished, nothing is submitted yet; it no longer counts (revoked at", "the task waits for another approval"},
			says:    "is running (holder gone)",
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) { noStepRunning(t, steps) },
			stored: func(t *testing.T, dir string) {
				if got := strings.TrimSpace(applications(t, dir, "v1")); got != "0" {
					t.Errorf("%s applications, want 0", got)
				}
			},
		},
	}
}

// revokedFirstApproval makes v1, a task that needs two approvals, whose
// first approval (bob's) no longer counts: the owner revoked bob's grant
// before carol gave the second, so the task waits for another approval.
// dave holds a grant too.
func revokedFirstApproval(t *testing.T, dir string) []string {
	t.Helper()
	mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h", "--approvals", "2")
	for _, u := range []string{"bob", "carol", "dave"} {
		mustRun(t, dir, "approvers", "grant", u)
	}
	mustRun(t, dir, "--user", "bob", "resume", "v1", "--action", "approve")
	mustRun(t, dir, "approvers", "revoke", "bob")
	mustRun(t, dir, "--user", "carol", "resume", "v1", "--action", "approve")
	return nil
}

// sameJSON is the JSON text s as one line, whatever its indentation.
func sameJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// stringsOf is v, a JSON list of strings, as a Go list (nil for none).
func stringsOf(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, jsonString(x))
	}
	return out
}

// jsonString is v, a JSON string, as a Go string ("" for anything else).
func jsonString(v any) string {
	s, _ := v.(string)
	return s
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestViewsTellTheStateAsItIsNow is the matrix of docs/json.md "The state
// as it is now": for each state a task can be in that its last command
// did not write (a draft expired, an order no longer returnable, a holder
// gone, a step cut short by a stop) and a finished task (done,
// cancelled), each view tells the state as it is now, offers only what
// can succeed, counts down only to what can still expire, and names the
// same status as every other view.
func TestViewsTellTheStateAsItIsNow(t *testing.T) {
	t.Parallel()
	for _, s := range nowStates() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			env := s.setup(t, dir)
			// view runs a view as the viewer; owner as the task's owner
			// (list, wait and orders show are the owner's alone).
			owner := func(args ...string) (string, string, int) {
				t.Helper()
				return runIn(t, dir, env, args...)
			}
			view := owner
			if s.viewer != "" {
				view = func(args ...string) (string, string, int) {
					t.Helper()
					return runIn(t, dir, env, append([]string{"--user", s.viewer}, args...)...)
				}
			}
			shownDecisions := func(t *testing.T) string {
				out, _, _ := view("show", "v1")
				var v struct{ Decisions json.RawMessage }
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("show: %v\n%s", err, out)
				}
				return string(v.Decisions)
			}
			t.Run("Show", func(t *testing.T) {
				var shown map[string]any
				out, errOut, code := view("show", "v1", "--exit-status")
				if code != s.exit {
					t.Errorf("show --exit-status: exit %d, want %d; %s", code, s.exit, errOut)
				}
				if s.says != "" && !strings.Contains(errOut, s.says) {
					t.Errorf("show --exit-status: stderr %q does not name %q", errOut, s.says)
				}
				if err := json.Unmarshal([]byte(out), &shown); err != nil {
					t.Fatalf("show: %v\n%s", err, out)
				}
				if shown["status"] != s.status {
					t.Errorf("show: status %v, want %s", shown["status"], s.status)
				}
				if qs, _ := shown["interrupts"].([]any); len(qs) != s.questions {
					t.Errorf("show: %d questions, want %d: %v", len(qs), s.questions, qs)
				}
				h, _ := shown["holder"].(map[string]any)
				switch {
				case s.holderAlive == nil && h != nil && h["alive"] == false:
					t.Errorf("show: holder %v gone, want none or alive", h)
				case s.holderAlive != nil && (h == nil || h["alive"] != *s.holderAlive):
					t.Errorf("show: holder %v, want alive %v", h, *s.holderAlive)
				}
				if got := stringsOf(shown["actions"]); !slices.Equal(got, s.actions) && len(got)+len(s.actions) > 0 {
					t.Errorf("show: actions %q, want %q (what the viewer may do now)", got, s.actions)
				}
				var by, uncounted []string
				ws, _ := shown["awaiting_submit"].([]any)
				for _, w := range ws {
					w, _ := w.(map[string]any)
					by = append(by, jsonString(w["by"]))
					if w["not_counted_because"] != nil {
						uncounted = append(uncounted, jsonString(w["by"]))
					}
				}
				if shown["awaiting_submit"] == nil || !slices.Equal(by, s.awaitingSubmit) || !slices.Equal(uncounted, s.uncounted) {
					t.Errorf("show: awaiting_submit %v, want by %q, not counted %q", shown["awaiting_submit"], s.awaitingSubmit, s.uncounted)
				}
				if s.check != nil {
					s.check(t, shown)
				}
			})
			t.Run("Card", func(t *testing.T) {
				out, errOut, code := view("--output", "text", "show", "v1")
				if code != 0 {
					t.Fatalf("show --output text: exit %d, %s", code, errOut)
				}
				if !strings.Contains(out, "Status: "+s.status+" ") {
					t.Errorf("card does not say Status: %s:\n%s", s.status, out)
				}
				if got := cardOffers(out); !slices.Equal(got, s.offers) {
					t.Errorf("card offers %q, want %q (only what can succeed now):\n%s", got, s.offers, out)
				}
				for _, a := range s.actions {
					if !slices.Contains(cardOffers(out), a) {
						t.Errorf("show's action %s is not on the card:\n%s", a, out)
					}
				}
				if got := strings.Contains(out, "(in "); got != s.countdown {
					t.Errorf("card counts down: %v, want %v:\n%s", got, s.countdown, out)
				}
				for _, want := range s.cardHas {
					if !strings.Contains(out, want) {
						t.Errorf("card lacks %q:\n%s", want, out)
					}
				}
			})
			t.Run("List", func(t *testing.T) {
				out, errOut, code := owner("list")
				var l struct{ Tasks []map[string]any }
				if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil || len(l.Tasks) != 1 {
					t.Fatalf("list: exit %d %v\n%s%s", code, err, out, errOut)
				}
				if got := l.Tasks[0]["status"]; got != s.status {
					t.Errorf("list: status %v, want %s as show says", got, s.status)
				}
				got := l.Tasks[0]["holder_alive"]
				if s.holderAlive != nil && got != *s.holderAlive || s.holderAlive == nil && got == false {
					t.Errorf("list: holder_alive %v, want %v (nil: none or alive)", got, s.holderAlive)
				}
				text, _, _ := owner("--output", "text", "list")
				want := s.status
				if s.status == "running" && s.holderAlive != nil && !*s.holderAlive {
					want = "running (holder gone)"
				}
				if !strings.Contains(text, " "+want+" ") {
					t.Errorf("list --output text does not say %q:\n%s", want, text)
				}
			})
			t.Run("ListCSV", func(t *testing.T) {
				args := []string{"--output", "csv", "list"}
				if s.viewer != "" {
					args = append(args, "--awaiting-me") // their decide file
				}
				out, errOut, code := view(args...)
				if code != 0 {
					t.Fatalf("list --output csv: exit %d, %s", code, errOut)
				}
				if got := strings.Contains(out, "\nv1,"); got != s.decidable {
					t.Errorf("list --output csv lists v1: %v, want %v (a row a decide run could approve now):\n%s", got, s.decidable, out)
				}
			})
			t.Run("AwaitingMe", func(t *testing.T) {
				out, errOut, code := view("list", "--awaiting-me")
				var l struct {
					Tasks []struct{ Task, Status string }
				}
				if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil {
					t.Fatalf("list --awaiting-me: exit %d %v\n%s%s", code, err, out, errOut)
				}
				if got := len(l.Tasks) == 1 && l.Tasks[0].Status == s.status; got != s.awaiting || len(l.Tasks) > 1 {
					t.Errorf("list --awaiting-me: %+v, want v1 listed %s: %v", l.Tasks, s.status, s.awaiting)
				}
			})
			t.Run("Wait", func(t *testing.T) {
				args := []string{"wait", "v1"}
				if s.exit == 7 {
					args = append(args, "--timeout", "200ms")
				}
				out, errOut, code := owner(args...)
				if code != s.exit {
					t.Errorf("wait: exit %d, want %d; %s", code, s.exit, errOut)
				}
				if got := statusOf(t, out); got != s.status {
					t.Errorf("wait: status %s, want %s as show says", got, s.status)
				}
				if s.says != "" && !strings.Contains(errOut, s.says) {
					t.Errorf("wait: stderr %q does not name %q", errOut, s.says)
				}
			})
			t.Run("History", func(t *testing.T) {
				out, errOut, code := view("history", "v1")
				if code != 0 {
					t.Fatalf("history: exit %d, %s", code, errOut)
				}
				var h struct {
					Steps     []map[string]any
					Holder    map[string]any
					Decisions json.RawMessage
				}
				if err := json.Unmarshal([]byte(out), &h); err != nil {
					t.Fatalf("history: %v\n%s", err, out)
				}
				// Both read the decision trail the business store holds.
				if shown := shownDecisions(t); sameJSON(shown) != sameJSON(string(h.Decisions)) {
					t.Errorf("history's decisions %s, show's %s: every view lists the same trail", h.Decisions, shown)
				}
				if s.history != nil {
					s.history(t, h.Steps, h.Holder)
				}
			})
			t.Run("OrdersShow", func(t *testing.T) {
				out, errOut, code := owner("orders", "show", s.order)
				var o struct {
					Tasks []struct{ Task, Status string }
				}
				if err := json.Unmarshal([]byte(out), &o); code != 0 || err != nil {
					t.Fatalf("orders show: exit %d %v\n%s%s", code, err, out, errOut)
				}
				if len(o.Tasks) != 1 || o.Tasks[0].Task != "v1" || o.Tasks[0].Status != s.status {
					t.Errorf("orders show %s: tasks %+v, want v1 %s as show says", s.order, o.Tasks, s.status)
				}
			})
			t.Run("Stored", func(t *testing.T) {
				if s.stored != nil {
					s.stored(t, dir)
				}
			})
		})
	}
}

// TestHolderThatEndsWhileViewedIsNotGone: a view that read a task's
// record and head while a process held it, and judges that holder only
// after it finished the task, let go and exited, tells the task as it is
// now (done), not running with its holder gone; wait, built on show's
// view, ends 0, not 8 (interrupted); history names no holder and no step
// cut short by a process gone. The view is paused at its fault point
// (show:, list:, history:before-holder) while the holder, paused before
// submit, goes on and ends.
func TestHolderThatEndsWhileViewedIsNotGone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		point string
		view  []string
	}{
		{"show:before-holder", []string{"show", "r1"}},
		{"show:before-holder", []string{"wait", "r1", "--timeout", "1m"}},
		{"list:before-holder", []string{"list"}},
		{"history:before-holder", []string{"history", "r1"}},
	} {
		t.Run(tc.view[0], func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mustRun(t, dir, "start", "r1", "A3003", "--reason", "too small")
			holder := pausedAnswer(t, dir, "before:submit", "demo-user", "r1")
			c := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json"}, tc.view...)...)
			c.Env = append(os.Environ(), "ASSISTANT_FAULT="+tc.point+"@pause")
			var out bytes.Buffer
			c.Stdout = &out
			viewer := startPaused(t, c, tc.point)
			if code := holder.goOn(t); code != 0 {
				t.Fatalf("the holder's approve: exit %d, %s", code, holder.stderr)
			}
			code := viewer.goOn(t)
			var v struct {
				Status      string
				Holder      *struct{ Alive bool }
				HolderAlive *bool `json:"holder_alive"`
				Steps       []struct{ Node, Status, Error string }
			}
			got := out.Bytes()
			if tc.view[0] == "list" {
				var l struct{ Tasks []json.RawMessage }
				if err := json.Unmarshal(got, &l); err != nil || len(l.Tasks) != 1 {
					t.Fatalf("list: exit %d, stdout %q, stderr %q: %v; want one task", code, out.String(), viewer.stderr, err)
				}
				got = l.Tasks[0]
			}
			if err := json.Unmarshal(got, &v); err != nil {
				t.Fatalf("%v: exit %d, stdout %q, stderr %q: %v", tc.view, code, out.String(), viewer.stderr, err)
			}
			if tc.view[0] == "history" {
				v.Status = "done" // history names no status: its holder and steps tell
			}
			if code != 0 || v.Status != "done" || v.Holder != nil || v.HolderAlive != nil {
				t.Errorf("%v after its holder ended: exit %d, status %s, holder %+v, holder_alive %v; want 0, done, no holder", tc.view, code, v.Status, v.Holder, v.HolderAlive)
			}
			for _, st := range v.Steps {
				if st.Status == "failed" || st.Status == "running" {
					t.Errorf("%v after its holder ended: step %s %s (%s); want none failed or running", tc.view, st.Node, st.Status, st.Error)
				}
			}
		})
	}
}

// TestViewsOfASubmitPastItsBusinessCommit (docs/json.md "result"): a run
// whose submit made its application but has not recorded its end — killed
// right after the submit's business commit, or paused there while its
// process lives — is shown submitted: show's result names the
// application the business file holds, nothing awaits a submit, no stop
// is offered (it would be too late), and the
// card says "Submitted" with no countdown on the draft and no "nothing is
// submitted yet".
func TestViewsOfASubmitPastItsBusinessCommit(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, dir string) {
		t.Helper()
		v := mustRun(t, dir, "show", "s1")
		app := query(t, dir, "business.sqlite", `SELECT application_id FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = 's1'`)
		result, _ := v["result"].(map[string]any)
		if app == "" || result == nil || result["application_id"] != app || len(v["awaiting_submit"].([]any)) != 0 {
			t.Errorf("show: result %v, awaiting_submit %v; want the application %s and nothing awaiting", v["result"], v["awaiting_submit"], app)
		}
		if slices.Contains(v["actions"].([]any), any("stop")) {
			t.Errorf("show offers stop, which is too late once the application is made: %v", v["actions"])
		}
		card, errOut, code := run(t, dir, "show", "s1", "--output", "text")
		if code != 0 || !strings.Contains(card, "Submitted: application "+app) || strings.Contains(card, "nothing is submitted") || strings.Contains(card, "(in ") {
			t.Errorf("the card (exit %d, %s):\n%s\nwant it submitted as %s, with no countdown", code, errOut, card, app)
		}
	}
	t.Run("Killed", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "s1", "A3003", "--reason", "too small")
		killedAt(t, dir, "submit:after-business-commit", "resume", "s1", "--action", "approve")
		check(t, dir)
	})
	t.Run("Paused", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		mustRun(t, dir, "start", "s1", "A3003", "--reason", "too small")
		holder := pausedAnswer(t, dir, "submit:after-business-commit", "demo-user", "s1")
		check(t, dir)
		if code := holder.goOn(t); code != 0 {
			t.Fatalf("the approve: exit %d, %s", code, holder.stderr)
		}
	})
}
