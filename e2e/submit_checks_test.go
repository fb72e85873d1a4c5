package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"assistant/flow/returns"
)

// cmd is the binary as user with args (and env added) on the store.
func (s cliStore) cmd(env []string, user string, args ...string) *exec.Cmd {
	args = append([]string{"--user", user}, args...)
	if s.dir == "" {
		return s.pg.cmd(env, args...)
	}
	c := exec.Command(assistantBin(), append([]string{"--data", s.dir, "--output", "json"}, args...)...)
	c.Env = append(os.Environ(), env...)
	return c
}

// apps counts the applications of task's drafts in the store.
func (s cliStore) apps(t *testing.T, task string) string {
	t.Helper()
	if s.dir == "" {
		return s.pg.apps(t, task)
	}
	return applications(t, s.dir, task)
}

// TestAStopBeforeTheSubmitWins: an approve paused just before its submit
// (before:submit@pause) is stopped without waiting; the stop commits
// first, so the submit's transaction, which judges the run still running
// under its lease, refuses to make the application when the process goes
// on. A stop that does not say "too late" leaves no application, 20 times
// on each store; the task stays interrupted, and a resume submits it once.
func TestAStopBeforeTheSubmitWins(t *testing.T) {
	t.Parallel()
	const runsPerStore = 20
	for name, newStore := range cliStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i := range runsPerStore {
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					t.Parallel()
					s := newStore(t)
					s.ownerOrders(t)
					s.want(t, nil, 0, "owner", "start", "t", "Z1", "--reason", "too small")
					env := []string{returns.FaultEnv + "=before:submit" + returns.FaultPause}
					holder := startPaused(t, s.cmd(env, "owner", "resume", "t", "--action", "approve"), "before:submit")
					out, stderr, code := s.run(t, nil, "owner", "stop", "t", "--wait", "0")
					late := strings.Contains(stderr, "too late")
					holder.goOn(t)
					if got := s.apps(t, "t"); !late && got != "0" {
						t.Fatalf("stop said %q (exit %d, %s) and the paused submit went on: %s applications, want 0", stderr, code, out, got)
					}
					if late {
						return
					}
					v, _ := s.want(t, nil, 0, "owner", "show", "t")
					if v["status"] != "interrupted" {
						t.Fatalf("after the stop and the paused submit: status %v, want interrupted", v["status"])
					}
					if i == 0 {
						v, _ = s.want(t, nil, 0, "owner", "resume", "t")
						if v["status"] != "done" || s.apps(t, "t") != "1" {
							t.Fatalf("resume after the stop: status %v, %s applications; want done, 1", v["status"], s.apps(t, "t"))
						}
					}
				})
			}
		})
	}
}
