package e2e

// The state as it is now (docs/json.md "The state as it is now"): every
// view of a task (show, the text card, list, list --awaiting-me, wait,
// history) tells it as it is at the moment of the view, and they agree.

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nowState is one state of a task and what every view must tell of it.
type nowState struct {
	name  string
	setup func(t *testing.T, dir string) // makes task "v1" in this state
	// status is what show, list, wait and the card name; exit is show
	// --exit-status's (and wait's, for an outcome) exit code.
	status string
	exit   int
	// card must hold every one of cardHas and none of cardLacks.
	cardHas, cardLacks []string
	// awaiting: list --awaiting-me lists the task.
	awaiting bool
	// holderAlive is show's holder.alive and list's holder_alive (nil:
	// not checked beyond their agreeing).
	holderAlive *bool
	// check checks the view's JSON further (may be nil).
	check func(t *testing.T, v map[string]any)
	// history checks history's steps (may be nil).
	history func(t *testing.T, steps []map[string]any, holder map[string]any)
}

// notRunning fails t when a step of the timeline still reads running.
func notRunning(t *testing.T, steps []map[string]any) {
	t.Helper()
	for _, st := range steps {
		if st["status"] == "running" {
			t.Errorf("step %v %v still reads running: %v", st["seq"], st["node"], st)
		}
	}
}

// stepOf is the timeline step of node, failing t when there is none.
func stepOf(t *testing.T, steps []map[string]any, node string) map[string]any {
	t.Helper()
	for _, st := range steps {
		if st["node"] == node {
			return st
		}
	}
	t.Fatalf("no step %s in %v", node, steps)
	return nil
}

func nowStates() []nowState {
	no := false
	return []nowState{
		{
			name: "DraftExpired",
			setup: func(t *testing.T, dir string) {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1s")
				eventually(t, "the draft expires", func() bool {
					v := mustRun(t, dir, "show", "v1")
					d, _ := v["draft"].(map[string]any)
					return d != nil && d["expired"] == true
				})
			},
			status: "failed", exit: 6,
			cardHas:   []string{"Status: failed", "(expired)", "recover"},
			cardLacks: []string{"--action approve", "--action cancel", "(in "},
			check: func(t *testing.T, v map[string]any) {
				if e, _ := v["error"].(map[string]any); e == nil || e["code"] != "draft_expired" {
					t.Errorf("error %v, want draft_expired", v["error"])
				}
				if qs, _ := v["interrupts"].([]any); len(qs) != 0 {
					t.Errorf("interrupts %v, want none: no answer can submit an expired draft", qs)
				}
			},
		},
		{
			name: "OrderNoLongerReturnable",
			setup: func(t *testing.T, dir string) {
				delivered := time.Now().UTC().AddDate(0, 0, -3).Format(time.RFC3339)
				mustRun(t, dir, "orders", "import", writeShop(t, "Z1,demo-user,Mug,"+delivered+",false"))
				mustRun(t, dir, "start", "v1", "Z1", "--reason", "size", "--draft-ttl", "1h")
				// The shop operator marks the item final sale.
				mustRun(t, dir, "orders", "import", writeShop(t, "Z1,demo-user,Mug,"+delivered+",true"))
			},
			status: "waiting", exit: 7,
			cardHas:   []string{"Status: waiting", "--action cancel", "cannot be returned now: final_sale", "submits nothing"},
			cardLacks: []string{"--action approve", "--action edit", "(in "},
			awaiting:  true,
			check: func(t *testing.T, v map[string]any) {
				if d, _ := v["draft"].(map[string]any); d == nil || d["not_returnable"] != "final_sale" {
					t.Errorf("draft %v, want not_returnable final_sale", v["draft"])
				}
				qs, _ := v["interrupts"].([]any)
				if len(qs) != 1 || !strings.Contains(jsonText(mustJSON(t, qs[0])), "approve submits nothing") {
					t.Errorf("interrupts %v, want the question whose effect says approve submits nothing", qs)
				}
			},
		},
		{
			name: "Finished",
			setup: func(t *testing.T, dir string) {
				mustRun(t, dir, "start", "v1", "A3001", "--reason", "size", "--draft-ttl", "1h")
				mustRun(t, dir, "resume", "v1", "--action", "approve")
			},
			status: "done", exit: 0,
			cardHas:   []string{"Status: done", "no longer expires", "Submitted: application"},
			cardLacks: []string{"(in ", "--action", "recover"},
			history:   func(t *testing.T, steps []map[string]any, _ map[string]any) { notRunning(t, steps) },
		},
		{
			name: "HolderGone",
			setup: func(t *testing.T, dir string) {
				killedAt(t, dir, "before:prepare", "start", "v1", "A3001", "--reason", "size")
			},
			status: "running", exit: 8, holderAlive: &no,
			cardHas:   []string{"Status: running", "is gone", "recover"},
			cardLacks: []string{"Stop it", "(in "},
			check: func(t *testing.T, v map[string]any) {
				if h, _ := v["holder"].(map[string]any); h == nil || h["alive"] != false {
					t.Errorf("holder %v, want alive false", v["holder"])
				}
			},
			history: func(t *testing.T, steps []map[string]any, holder map[string]any) {
				notRunning(t, steps)
				if st := stepOf(t, steps, "prepare"); st["status"] != "failed" || !strings.Contains(st["error"].(string), "process gone") {
					t.Errorf("prepare %v, want failed: process gone", st)
				}
				if holder == nil || holder["alive"] != false {
					t.Errorf("history holder %v, want alive false", holder)
				}
			},
		},
		{
			name: "StoppedMidStep",
			setup: func(t *testing.T, dir string) {
				c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "start", "v1", "A3001", "--reason", "size")
				c.Env = append(os.Environ(), "ASSISTANT_FAULT=before:prepare@pause")
				p := startPaused(t, c, "before:prepare")
				if _, errOut, code := run(t, dir, "stop", "v1", "--wait", "0"); code != 0 {
					t.Fatalf("stop: exit %d, %s", code, errOut)
				}
				// The stopped process dies without letting go: only the
				// stop closed its step.
				if err := c.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				exitWithin(t, p.done, 30*time.Second)
			},
			status: "interrupted", exit: 8,
			cardHas:   []string{"Status: interrupted", "Stopped", "resume v1"},
			cardLacks: []string{"(in ", "Stop it"},
			history: func(t *testing.T, steps []map[string]any, _ map[string]any) {
				notRunning(t, steps)
				st := stepOf(t, steps, "prepare")
				if st["status"] != "failed" || st["ended_at"] == nil || !strings.Contains(st["error"].(string), "interrupted") {
					t.Errorf("prepare %v, want ended by the stop (failed, ended_at set, run interrupted)", st)
				}
			},
		},
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestViewsTellTheStateAsItIsNow: for each state a task can be in that its
// last command did not write (a draft expired, an order no longer
// returnable, a holder gone, a step cut short by a stop) and a finished
// task, each view tells the state as it is now, offers only what can
// succeed, and show, the card, list and wait name the same status.
func TestViewsTellTheStateAsItIsNow(t *testing.T) {
	t.Parallel()
	for _, s := range nowStates() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s.setup(t, dir)
			t.Run("Show", func(t *testing.T) {
				out, errOut, code := run(t, dir, "show", "v1", "--exit-status")
				if code != s.exit {
					t.Errorf("show --exit-status: exit %d, want %d; %s", code, s.exit, errOut)
				}
				var v map[string]any
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("show: %v\n%s", err, out)
				}
				if v["status"] != s.status {
					t.Errorf("show: status %v, want %s", v["status"], s.status)
				}
				if s.check != nil {
					s.check(t, v)
				}
			})
			t.Run("Card", func(t *testing.T) {
				out, errOut, code := runText(t, dir, "show", "v1")
				if code != 0 {
					t.Fatalf("show --output text: exit %d, %s", code, errOut)
				}
				for _, want := range s.cardHas {
					if !strings.Contains(out, want) {
						t.Errorf("card lacks %q:\n%s", want, out)
					}
				}
				for _, not := range s.cardLacks {
					if strings.Contains(out, not) {
						t.Errorf("card offers %q, which cannot succeed now:\n%s", not, out)
					}
				}
			})
			t.Run("List", func(t *testing.T) {
				if got := listed(t, dir); got != "v1="+s.status {
					t.Errorf("list: %s, want v1=%s as show says", got, s.status)
				}
				out, _, _ := run(t, dir, "list")
				var l struct{ Tasks []map[string]any }
				if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Tasks) != 1 {
					t.Fatalf("list: %v\n%s", err, out)
				}
				var shown any // show's holder.alive, null without a holder
				if h, _ := mustRun(t, dir, "show", "v1")["holder"].(map[string]any); h != nil {
					shown = h["alive"]
				}
				if got := l.Tasks[0]["holder_alive"]; got != shown {
					t.Errorf("list: holder_alive %v, want %v as show's holder says", got, shown)
				}
				if s.holderAlive != nil && shown != *s.holderAlive {
					t.Errorf("show: holder alive %v, want %v", shown, *s.holderAlive)
				}
				text, _, _ := runText(t, dir, "list")
				if s.status == "running" && s.holderAlive != nil && !*s.holderAlive && !strings.Contains(text, "holder gone") {
					t.Errorf("list --output text does not say the holder is gone:\n%s", text)
				}
			})
			t.Run("AwaitingMe", func(t *testing.T) {
				want := ""
				if s.awaiting {
					want = "v1=" + s.status
				}
				if got := listed(t, dir, "--awaiting-me"); got != want {
					t.Errorf("list --awaiting-me: %q, want %q", got, want)
				}
			})
			t.Run("Wait", func(t *testing.T) {
				args := []string{"wait", "v1"}
				if s.exit == 7 {
					args = append(args, "--timeout", "200ms")
				}
				out, errOut, code := run(t, dir, args...)
				if code != s.exit {
					t.Errorf("wait: exit %d, want %d; %s", code, s.exit, errOut)
				}
				if got := statusOf(t, out); got != s.status {
					t.Errorf("wait: status %s, want %s as show says", got, s.status)
				}
			})
			t.Run("History", func(t *testing.T) {
				out, errOut, code := run(t, dir, "history", "v1")
				if code != 0 {
					t.Fatalf("history: exit %d, %s", code, errOut)
				}
				var h struct {
					Steps  []map[string]any
					Holder map[string]any
				}
				if err := json.Unmarshal([]byte(out), &h); err != nil {
					t.Fatalf("history: %v\n%s", err, out)
				}
				if s.history != nil {
					s.history(t, h.Steps, h.Holder)
				}
			})
		})
	}
}
