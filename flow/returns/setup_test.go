package returns_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"assistant/business"
	"assistant/checkpoints"
	"assistant/flow"
	"assistant/flow/returns"
	"assistant/runs"
)

// The users of testdata/orders.csv. demo-user's A3001–A3004 and A3008 may
// be returned; A3005 and A3010 are past the window, A3006 is not delivered,
// A3007 is final sale, A3009 has an open application. B4001 and B4002 are
// other-user's.
const (
	user      = "demo-user"
	otherUser = "other-user"
)

// deadPID is above Linux's PID_MAX_LIMIT (2^22), so no process has it: a
// lease naming it on this host is held by a process known to be gone.
const deadPID = 1 << 30

// bundle is what a test needs beside the Service: the stores it was opened
// over and the clock it reads.
type bundle struct {
	ctx   context.Context
	dir   string
	cps   flow.Checkpointer
	clock *clock
	host  string
}

// clock is a settable wall clock, safe for the lease heartbeat's goroutine.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// setup opens a Service over a fresh data dir seeded with the teaching
// orders, an in-memory checkpoint store and a fake clock.
func setup(tb testing.TB) (*returns.Service, *bundle) {
	tb.Helper()
	return setupWith(tb, tb.TempDir(), checkpoints.NewMemory())
}

// setupSQLite is setup over checkpoints.sqlite, whose store can buffer a
// batch chunk (flow.Bufferer) and prune (flow.Pruner).
func setupSQLite(tb testing.TB) (*returns.Service, *bundle) {
	tb.Helper()
	dir := tb.TempDir()
	return setupWith(tb, dir, openCheckpoints(tb, dir))
}

// openCheckpoints opens (creating it) dir's checkpoints.sqlite, closed at
// the test's end.
func openCheckpoints(tb testing.TB, dir string) *checkpoints.SQLite {
	tb.Helper()
	cps, err := checkpoints.OpenSQLite(context.Background(), filepath.Join(dir, returns.CheckpointsFile), checkpoints.SQLiteOptions{Create: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cps.Close() })
	return cps
}

// setupWith opens a Service over dir and cps.
func setupWith(tb testing.TB, dir string, cps flow.Checkpointer) (*returns.Service, *bundle) {
	tb.Helper()
	host := returns.ThisHost()
	b := &bundle{
		ctx:   context.Background(),
		dir:   dir,
		cps:   cps,
		clock: &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		host:  host,
	}
	svc, err := returns.Open(b.ctx, returns.Config{Business: returns.DataDir{Dir: dir, Mode: returns.CreateIfMissing, Seed: mustReadSeed(tb)}, Checkpoints: cps, Now: b.clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close() })
	return svc, b
}

func mustReadSeed(tb testing.TB) []byte {
	tb.Helper()
	seed, err := os.ReadFile("../../testdata/orders.csv")
	if err != nil {
		tb.Fatal(err)
	}
	return seed
}

// mustStart starts task for demo-user and fails the test on an error.
func mustStart(tb testing.TB, svc *returns.Service, task, order, reason string) *returns.View {
	tb.Helper()
	v, err := svc.Start(context.Background(), returns.StartOptions{Task: task, User: user, Order: order, Reason: reason})
	if err != nil {
		tb.Fatalf("start %s: %v", task, err)
	}
	return v
}

// mustResume resumes o (User defaults to demo-user) and fails the test on
// an error.
func mustResume(tb testing.TB, svc *returns.Service, o returns.ResumeOptions) *returns.View {
	tb.Helper()
	if o.User == "" {
		o.User = user
	}
	v, err := svc.Resume(context.Background(), o)
	if err != nil {
		tb.Fatalf("resume %s: %v", o.Task, err)
	}
	return v
}

func approve(task string) returns.ResumeOptions {
	return returns.ResumeOptions{Task: task, User: user, Action: returns.ActionApprove}
}

func cancel(task string) returns.ResumeOptions {
	return returns.ResumeOptions{Task: task, User: user, Action: returns.ActionCancel}
}

func reason(task, r string) returns.ResumeOptions {
	return returns.ResumeOptions{Task: task, User: user, Reason: r, HasReason: true}
}

func wantErr(tb testing.TB, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("error %v, want one matching %v", err, target)
	}
}

func wantView(tb testing.TB, v *returns.View, status, stage string) {
	tb.Helper()
	if v.Status != status || v.Stage != stage {
		tb.Fatalf("status %s, stage %s; want %s, %s", v.Status, v.Stage, status, stage)
	}
}

// wantRecord checks the status and stage the task's record holds.
func wantRecord(tb testing.TB, svc *returns.Service, task, status, stage string) {
	tb.Helper()
	t, err := svc.Runs().Task(context.Background(), task)
	if err != nil {
		tb.Fatal(err)
	}
	if t.Status != status || t.Stage != stage {
		tb.Fatalf("record of %s: status %s, stage %s; want %s, %s", task, t.Status, t.Stage, status, stage)
	}
}

// wantNoTask checks that task has no record and no checkpoint.
func wantNoTask(tb testing.TB, svc *returns.Service, b *bundle, task string) {
	tb.Helper()
	if _, err := svc.Runs().Task(b.ctx, task); !errors.Is(err, runs.ErrNotFound) {
		tb.Fatalf("record of %s: %v, want none", task, err)
	}
	if cps, err := b.cps.List(b.ctx, task, flow.ListOptions{}); err != nil || len(cps) > 0 {
		tb.Fatalf("checkpoints of %s: %d (%v), want none", task, len(cps), err)
	}
}

// deadLease is a lease held by a process of this host that no longer
// exists.
func (b *bundle) deadLease() runs.Lease {
	return runs.Lease{Owner: "dead-process", PID: deadPID, Host: b.host, Until: b.clock.Now().Add(returns.DefaultLeaseTTL)}
}

// liveLease is a lease held by a process of another host, alive until the
// lease lapses (nothing on this host can tell it died).
func (b *bundle) liveLease() runs.Lease {
	return runs.Lease{Owner: "elsewhere-process", PID: 4242, Host: "elsewhere", Until: b.clock.Now().Add(returns.DefaultLeaseTTL)}
}

// leftRunning records task (demo-user's) as a run that holder began and
// left part-way, as a process killed mid-run leaves it: the record, running
// and held by holder, and the checkpoints of a run that paused before node
// stopBefore ("" for none: killed before its first checkpoint;
// returns.NodeSubmit: it reached its approval question).
func (b *bundle) leftRunning(tb testing.TB, svc *returns.Service, holder runs.Lease, task, order, reason, stopBefore string) {
	tb.Helper()
	t := runs.TaskRecord{ID: task, User: user, OrderID: order, Reason: reason, Fingerprint: returns.Fingerprint(user, order, reason)}
	if err := svc.Runs().CreateLeasedTask(b.ctx, t, runs.KindReturn, business.DefaultDraftTTL, holder); err != nil {
		tb.Fatal(err)
	}
	if stopBefore == "" {
		return
	}
	in := returns.State{Task: task, User: user, Order: order, Reason: reason, TTLSeconds: int64(business.DefaultDraftTTL / time.Second)}
	if _, err := b.graph(tb, svc, stopBefore).Invoke(b.ctx, task, in); err != nil {
		tb.Fatal(err)
	}
}

// graph compiles the return graph over the Service's stores, pausing
// before the nodes stopBefore: the process that leftRunning imitates.
func (b *bundle) graph(tb testing.TB, svc *returns.Service, stopBefore ...string) *flow.Runnable[returns.State] {
	tb.Helper()
	g, err := returns.Build(returns.Deps{Desk: svc.Desk(), Now: b.clock.Now}).Compile(flow.Options{
		Checkpointer: b.cps, Now: b.clock.Now, InterruptBefore: stopBefore,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// putHead writes a new head of task holding values as its state, the
// way a newer build or a bad correction might leave it.
func (b *bundle) putHead(tb testing.TB, task, values string) {
	tb.Helper()
	head, err := b.cps.Get(b.ctx, task, "")
	if err != nil || head == nil {
		tb.Fatalf("head of %s: %v, %v", task, head, err)
	}
	cp := &flow.Checkpoint{
		ThreadID: task, ID: "put-by-test", ParentID: head.ID, Format: returns.StateFormat,
		Values: json.RawMessage(values), Next: head.Next,
		Metadata: flow.Metadata{Source: flow.SourceUpdate, Step: head.Metadata.Step + 1}, CreatedAt: b.clock.Now(),
	}
	if err := b.cps.Put(b.ctx, cp); err != nil {
		tb.Fatal(err)
	}
}

// flagWords names an input as a flag and words a hint plainly, so that a
// test reads which input a message names ("--draft d_1") and which hint
// it gives, each apart (returns.Describe).
type flagWords struct{}

func (flagWords) Input(i returns.Input) string { return "--" + string(i) }

func (flagWords) Hint(h returns.Hint) string { return returns.PlainWords.Hint(h) }

// wantHint fails tb unless err's hint (returns.HintOf) is want.
func wantHint(tb testing.TB, err error, want returns.Hint) {
	tb.Helper()
	if got, _ := returns.HintOf(err); !reflect.DeepEqual(got, want) {
		tb.Errorf("hint of %q = %+v, want %+v", err, got, want)
	}
}
