package returns

import (
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// FaultEnv names the environment variable that switches fault points on: a
// comma-separated list such as "submit:after-business-commit" or
// "after:prepare,before:review" (docs/recovery.md "Verification points").
const FaultEnv = "ASSISTANT_FAULT"

// FaultPause, appended to a fault point ("before:submit@pause"), stops the
// process there with SIGSTOP instead of killing it: a test can then take
// the task over from another process and let this one go on with SIGCONT,
// as a holder paused past its lease (a long GC, a frozen VM) would.
const FaultPause = "@pause"

// FaultHold, appended to a fault point ("recover:before-lease@hold"),
// stops only the goroutine that reaches the point, until the process
// gets SIGCONT; the rest of the process runs on. A server whose start-up
// recovery scan waits there still answers /readyz (503), so a test sees
// the server while its scan runs. One SIGCONT lets one goroutine waiting
// at a point go on; a SIGCONT that comes while none waits lets the next
// one through. The process watches SIGCONT from its first fault point on
// (before that point's FaultTrace line is written), so a signal sent
// once the trace names the point is never lost.
const FaultHold = "@hold"

// FaultClock, as an item of ASSISTANT_FAULT followed by a signed
// duration ("clock:+1h", "clock:-90s"; time.ParseDuration), sets this
// process's wall clock (WallClock) off by that much, as on a machine
// whose clock is wrong. It is not a point: nothing stops there. An item
// whose duration does not parse is ignored.
const FaultClock = "clock:"

// FaultTrace, as an item of ASSISTANT_FAULT followed by a file's path
// ("trace:/tmp/points"), makes every fault point the process passes add
// its name and a newline to that file (made 0600 if missing) before the
// point acts, whether it is switched on or not. It is not a point either:
// a test learns from one run which points a command reaches, instead of
// switching each on in a run of its own. A file that cannot be written is
// ignored.
const FaultTrace = "trace:"

var faultTrace = sync.OnceValue(func() string {
	path := ""
	for _, p := range strings.Split(os.Getenv(FaultEnv), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(p), FaultTrace); ok {
			path = v
		}
	}
	return path
})

// traceFault adds point to the trace file at path (FaultTrace): one
// write of the whole line, appended, so that the lines of points passed
// at once by the nodes of one superstep do not mix.
func traceFault(path, point string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	_, _ = f.WriteString(point + "\n")
	_ = f.Close()
}

// WallClock is this process's wall clock: time.Now, moved by the skew
// that ASSISTANT_FAULT's FaultClock item sets (none without one). The
// Service's default clock and the clock of a store on a server
// (docs/postgres.md "Many machines") read it.
func WallClock() time.Time { return time.Now().Add(clockSkew()) }

var clockSkew = sync.OnceValue(func() time.Duration {
	var skew time.Duration
	for _, p := range strings.Split(os.Getenv(FaultEnv), ",") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(p), FaultClock); ok {
			if v, err := time.ParseDuration(d); err == nil {
				skew = v
			}
		}
	}
	return skew
})

// faultAct is what a point switched on does; the zero value, a point
// switched off, does nothing.
type faultAct int

const (
	faultKill  faultAct = iota + 1 // SIGKILL to the process
	faultPause                     // SIGSTOP to the process (FaultPause)
	faultHold                      // the goroutine waits for SIGCONT (FaultHold)
)

var faults = sync.OnceValue(func() map[string]faultAct {
	m := map[string]faultAct{}
	for _, p := range strings.Split(os.Getenv(FaultEnv), ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "", strings.HasPrefix(p, FaultClock), strings.HasPrefix(p, FaultTrace):
		case strings.HasSuffix(p, FaultPause):
			m[strings.TrimSuffix(p, FaultPause)] = faultPause
		case strings.HasSuffix(p, FaultHold):
			m[strings.TrimSuffix(p, FaultHold)] = faultHold
			faultHolds() // watched from now on: no SIGCONT sent from here is lost
		default:
			m[p] = faultKill
		}
	}
	return m
})

// faultHolds is the channel of the SIGCONTs that let goroutines held at
// a FaultHold point go on; it keeps one signal that came while none
// waited.
var faultHolds = sync.OnceValue(func() chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGCONT)
	return c
})

// faultResumeWait is how long a point paused by FaultPause waits, once
// continued, for the signals that came while it was stopped.
const faultResumeWait = 50 * time.Millisecond

// Fault kills the process with SIGKILL when point is switched on by
// ASSISTANT_FAULT; otherwise it costs one map lookup. SIGKILL, not exit:
// no deferred function, no flush, exactly what a crash leaves behind. A
// point switched on with FaultPause stops the process instead, and it goes
// on from the point once it gets SIGCONT; one switched on with FaultHold
// stops only the goroutine that reaches it, until SIGCONT. With
// FaultTrace the point is written to the trace file first.
func Fault(point string) {
	// The points are read before the trace is written: a hold's SIGCONT
	// is watched before a test can learn from the trace that the point
	// is reached.
	act := faults()[point]
	if path := faultTrace(); path != "" {
		traceFault(path, point)
	}
	switch act {
	case faultHold:
		<-faultHolds()
	case faultKill:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; never run past the point
	case faultPause:
		// To this thread, locked to the goroutine: the stop is delivered
		// as the call returns, so the goroutine runs nothing past the
		// point. kill(2) lets the process pick a thread, and this one
		// may go on for a while (into the node's transaction).
		runtime.LockOSThread()
		_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
		runtime.UnlockOSThread()
		// A SIGINT or SIGTERM sent while the process was stopped is
		// delivered with SIGCONT, and Go hands it to its handler on
		// another thread: a moment for that, so that the point goes on
		// as a process that got the signal just then would, its context
		// cancelled (a command whose last step is quick would else end
		// before it, and exit 0).
		time.Sleep(faultResumeWait)
	}
}
