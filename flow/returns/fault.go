package returns

import (
	"os"
	"strings"
	"sync"
	"syscall"
)

// FaultEnv names the environment variable that switches fault points on: a
// comma-separated list such as "submit:after-business-commit" or
// "after:prepare,before:review" (docs/recovery.md "Verification points").
const FaultEnv = "ASSISTANT_FAULT"

var faults = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(os.Getenv(FaultEnv), ",") {
		if p = strings.TrimSpace(p); p != "" {
			m[p] = true
		}
	}
	return m
})

// Fault kills the process with SIGKILL when point is switched on by
// ASSISTANT_FAULT; otherwise it costs one map lookup. SIGKILL, not exit:
// no deferred function, no flush, exactly what a crash leaves behind.
func Fault(point string) {
	if faults()[point] {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; never run past the point
	}
}
