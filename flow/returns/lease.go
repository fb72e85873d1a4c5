package returns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/google/uuid"

	"assistant/flow"
	"assistant/runs"
)

// Lease timing. The holder renews its lease every DefaultHeartbeat; a lease
// not renewed for DefaultLeaseTTL lapses and another process may take the
// task over. The heartbeat also polls for an operator stop, so a stop is
// noticed within DefaultHeartbeat (docs/recovery.md).
const (
	DefaultLeaseTTL  = 5 * time.Second
	DefaultHeartbeat = 250 * time.Millisecond
)

// Cancel causes of a run's context (heartbeat).
var (
	// errStopped: an operator stopped the task.
	errStopped = errors.New("stopped by operator")
	// errLeaseLost: another process took the task over.
	errLeaseLost = errors.New("lease lost")
)

// identity is this process as a lease holder.
type identity struct {
	owner string
	pid   int
	host  string
}

// EnvHost names the environment variable that names this machine in
// leases instead of its host name (docs/recovery.md "Host identity"):
// processes that share one database server from several machines, or
// containers that share a host name, set it to tell their hosts apart.
const EnvHost = "ASSISTANT_HOST"

// MaxHostLen is the longest host identity ValidHost accepts, in bytes.
const MaxHostLen = 200

// newIdentity is this process as a lease holder, on the machine named
// host ("" means ThisHost()).
func newIdentity(host string) identity {
	if host == "" {
		host = ThisHost()
	}
	return identity{owner: uuid.NewString(), pid: os.Getpid(), host: host}
}

// HostIdentity is how a lease names this machine when ASSISTANT_HOST names
// it: the name given, and this boot's id as ThisHost adds it
// ("runner-1/boot-23a32721"), so a lease written before a reboot still
// names another host. name "" is ThisHost(). Errors: ErrInvalid for a name
// ValidHost refuses.
func HostIdentity(name string) (string, error) {
	if name == "" {
		return ThisHost(), nil
	}
	if err := ValidHost(name); err != nil {
		return "", err
	}
	if b, err := os.ReadFile(bootIDFile); err == nil && len(b) >= 8 {
		name += "/boot-" + string(b[:8])
	}
	return name, nil
}

// ValidHost checks a host name given in ASSISTANT_HOST: 1 to MaxHostLen
// bytes of printable ASCII without spaces. Errors: ErrInvalid.
func ValidHost(name string) error {
	if name == "" || len(name) > MaxHostLen {
		return fmt.Errorf("%w: a host name must be 1 to %d characters, not %d", ErrInvalid, MaxHostLen, len(name))
	}
	for _, r := range name {
		if r <= ' ' || r > '~' {
			return fmt.Errorf("%w: a host name is printable ASCII without spaces; %q is not", ErrInvalid, name)
		}
	}
	return nil
}

// bootIDFile is where Linux tells the id of the running boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// ThisHost is how a lease names this machine: its host name and, where
// Linux tells it, the first 8 characters of this boot's id
// ("vm/boot-23a32721"). A lease written before a reboot then names another
// host, so its pid, which after the reboot may belong to any process, is
// never taken for a live holder: the lease's expiry decides, and recover at
// boot takes the task over.
func ThisHost() string {
	host, _ := os.Hostname()
	if b, err := os.ReadFile(bootIDFile); err == nil && len(b) >= 8 {
		host += "/boot-" + string(b[:8])
	}
	return host
}

// liveness is what this process can tell of a lease holder: on this host
// the process table decides (a live pid holds its lease whatever the clock
// says, so a wall clock stepped forward in another process takes over
// nothing); on another host nothing tells, and the lease's expiry decides.
// A pid reused by an unrelated process keeps the lease held until that
// process ends.
func (s *Service) liveness(l runs.Lease) runs.Liveness {
	switch {
	case l.Owner == "":
		return runs.HolderGone
	case l.Host != s.me.host || l.PID <= 0:
		return runs.HolderUnknown
	case l.PID == s.me.pid:
		if l.Owner == s.me.owner {
			return runs.HolderAlive
		}
		return runs.HolderGone // an earlier process with this pid
	case !processRuns(l.PID):
		return runs.HolderGone
	}
	return runs.HolderAlive
}

// processRuns reports whether the process pid on this host still runs. A
// pid that is gone does not; nor does a zombie (state Z or X in
// /proc/PID/stat): a process killed whose parent has not reaped it yet
// holds nothing, though kill(pid, 0) still succeeds for it. Where /proc
// cannot be read, kill decides.
func processRuns(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	// "pid (comm) S …": comm may hold spaces and parentheses, so the state
	// is the first field after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return true
	}
	switch stat[i+2] {
	case 'Z', 'X':
		return false
	}
	return true
}

// holderAlive reports whether a live process holds the lease now: there is
// a holder, and it is known to run, or nothing tells and its lease has not
// lapsed.
func (s *Service) holderAlive(l runs.Lease) bool {
	switch s.liveness(l) {
	case runs.HolderAlive:
		return true
	case runs.HolderUnknown:
		return l.Until.After(s.now())
	}
	return false
}

// stillHolds says, of a stopped task whose lease l a live process still
// holds, who holds it and until when: on this host until that process
// lets go or exits (a paused one holds it until it runs again or is
// killed), on another host until it lets go or its lease lapses at
// l.Until (UTC, RFC 3339).
func (s *Service) stillHolds(l runs.Lease) string {
	if s.liveness(l) == runs.HolderAlive {
		return fmt.Sprintf("its process (pid %d on %s) still holds it until that process lets go of it or exits", l.PID, l.Host)
	}
	return fmt.Sprintf("its process (pid %d on %s) still holds it until that process lets go of it or its lease lapses at %s", l.PID, l.Host, l.Until.UTC().Format(time.RFC3339))
}

// stoppedHeld is the refusal (ErrConflict, and runs.ErrBusy through held)
// of a resume or an answer of a stopped task whose former process, held,
// has not let go yet: it says so, and offers resume for once it has.
func (s *Service) stoppedHeld(held *runs.LeaseHeldError) error {
	return errorf(Hint{Before: "once it has, continue it with", Do: DoResume, Task: held.Task},
		"task %s is stopped, but %s: %w; nothing was done%.0w", held.Task, s.stillHolds(held.Lease), ErrConflict, held)
}

// lease is the lease r takes: this process, for r.policy.leaseTTL from now.
func (r *runner) lease() runs.Lease {
	me := r.svc.me
	return runs.Lease{Owner: me.owner, PID: me.pid, Host: me.host, Until: r.svc.now().UTC().Add(r.policy.leaseTTL)}
}

// settlement is how the steps a former holder left running ended, as its
// head checkpoint tells (runs.Settlement): the holder records a step's end
// in its commit after the checkpoint that holds the step's work, so a
// holder that died between the two left finished steps running. A step of
// a node whose update made the head (and that started before the head was
// written) ended done; one whose update or unanswered question is saved
// against the head ended done or waiting. head nil settles nothing.
func settlement(head *flow.Checkpoint) runs.Settlement {
	var how runs.Settlement
	if head == nil {
		return how
	}
	if head.Metadata.Source == flow.SourceLoop {
		for node := range head.Metadata.Writes {
			how.Finished = append(how.Finished, node)
		}
		how.FinishedAt = head.CreatedAt
	}
	type question struct {
		task string
		idx  int
	}
	answered := map[question]bool{}
	for _, w := range head.PendingWrites {
		if w.Kind == flow.WriteResume {
			answered[question{w.TaskID, w.Idx}] = true
		}
	}
	for _, w := range head.PendingWrites {
		switch w.Kind {
		case flow.WriteUpdate:
			how.Saved = append(how.Saved, w.Node)
		case flow.WriteInterrupt, flow.WriteSubgraphInterrupt:
			if !answered[question{w.TaskID, w.Idx}] {
				how.Asked = append(how.Asked, w.Node)
			}
		}
	}
	return how
}

// fenceBeforeTakeover raises the thread's fence to the epoch a takeover of
// task would take, before the lease is taken, when the task's lease (read
// afresh) is another owner's that may be taken over now. The former holder
// may still run (paused past its lease): once the fence is up, it writes no
// checkpoint, and only then does this process take the lease, so no moment
// exists where this process holds the task and the former holder can still
// write. A fence that cannot be raised (the checkpoint file locked) leaves
// the lease untouched. It returns the epoch fenced, 0 when none.
//
// A record t read without a holder (a task waiting for an answer) needs
// no second read: a holder that came meanwhile is one AcquireLease meets,
// and acquire fences at the epoch it takes over. Under a mode that fences
// first (acquireCommand) it is fenced at the epoch the lease will take,
// so that a checkpoint file another process holds refuses the command
// before the lease is written.
func (r *runner) fenceBeforeTakeover(ctx context.Context, t runs.TaskRecord, now time.Time, m acquireMode) (int64, error) {
	if _, ok := r.cps.(flow.Fencer); !ok {
		return 0, nil
	}
	if t.Lease.Owner == "" {
		if !m.fenceFirst {
			return 0, nil
		}
		if err := r.fence(ctx, t.ID, t.Lease.Epoch+1); err != nil {
			return 0, err
		}
		return t.Lease.Epoch + 1, nil
	}
	task := t.ID
	l, _, err := r.runs.TaskLease(ctx, task)
	if err != nil || l.Owner == "" || l.Owner == r.svc.me.owner || !runs.MayTakeOver(l, now, r.svc.liveness) {
		return 0, nil // AcquireLease reports what is wrong
	}
	if err := r.fence(ctx, task, l.Epoch+1); err != nil {
		return 0, err
	}
	return l.Epoch + 1, nil
}

// fence raises the thread's fence in the checkpoint store to epoch, when
// the store can fence (flow.Fencer). A fence already above it means a
// newer holder exists: ErrConflict.
func (r *runner) fence(ctx context.Context, task string, epoch int64) error {
	f, ok := r.cps.(flow.Fencer)
	if !ok {
		return nil
	}
	if err := f.Fence(ctx, task, epoch); errors.Is(err, flow.ErrFenced) {
		return fmt.Errorf("%w: %v", ErrConflict, err)
	} else if err != nil {
		return err
	}
	return nil
}

// graphFor is the return graph for a run of t by its lease holder: over a
// fenced view of the checkpoint store when the store can fence, so that
// once another process takes the task over this run writes nothing more.
func (r *runner) graphFor(t runs.TaskRecord) *flow.Runnable[State] {
	return fencedGraph(r.graph, r.cps, t)
}

// fencedGraph is g bound to a view of cps fenced at t's lease epoch, when
// cps can fence and t holds a lease; g itself otherwise. The return and
// the batch graph both run this way.
func fencedGraph[S any](g *flow.Runnable[S], cps flow.Checkpointer, t runs.TaskRecord) *flow.Runnable[S] {
	if f, ok := cps.(flow.Fencer); ok && t.Lease.Epoch > 0 {
		return g.WithCheckpointer(f.Fenced(t.ID, t.Lease.Epoch))
	}
	return g
}

// heartbeat renews the lease of task every DefaultHeartbeat until done is
// closed, and cancels the run when an operator stopped the task
// (errStopped) or another process took it over (errLeaseLost).
func (r *runner) heartbeat(ctx context.Context, task string, done <-chan struct{}, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(DefaultHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			until := r.svc.now().UTC().Add(DefaultLeaseTTL)
			err := r.runs.RenewLease(ctx, task, r.svc.me.owner, until)
			switch {
			case err == nil:
				// The run's supersteps renew it next when it is due again.
				if v, ok := r.holds.Load(task); ok {
					l := v.(runs.Lease)
					l.Until = until
					r.holds.Store(task, l)
				}
			case errors.Is(err, runs.ErrLeaseLost):
				cancel(errLeaseLost)
				return
			case errors.Is(err, runs.ErrConflict):
				if _, ended := r.endedHere.Load(task); ended {
					// The run recorded its own failure: the task is no
					// longer running, and nothing stopped it.
					return
				}
				cancel(errStopped)
				return
			}
		}
	}
}
