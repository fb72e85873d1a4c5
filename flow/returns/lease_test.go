package returns

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProcessRunsOnlyForLiveProcesses checks the holder rule of
// docs/recovery.md: a killed holder is gone at once, also while it is a
// zombie its parent has not reaped yet.
func TestProcessRunsOnlyForLiveProcesses(t *testing.T) {
	running := exec.Command("sleep", "30")
	if err := running.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	t.Cleanup(func() { _ = running.Process.Kill(); _ = running.Wait() })

	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zombie.Wait() })
	waitForState(t, zombie.Process.Pid, 'Z')

	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		pid  int
		want bool
	}{
		{"this process", os.Getpid(), true},
		{"a running child", running.Process.Pid, true},
		{"a zombie not yet reaped", zombie.Process.Pid, false},
		{"a reaped child", reaped.Process.Pid, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := processRuns(c.pid); got != c.want {
				t.Errorf("processRuns(%d) = %v, want %v", c.pid, got, c.want)
			}
		})
	}
}

// waitForState waits up to 5 s for pid's state in /proc/PID/stat.
func waitForState(t *testing.T, pid int, state byte) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Skip("no /proc:", err)
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == state {
			return
		}
	}
	t.Fatalf("pid %d never reached state %c", pid, state)
}
