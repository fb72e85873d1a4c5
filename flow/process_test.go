//go:build unix

package flow_test

import (
	"assistant/internal/testkit"

	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"assistant/checkpoints"
	"assistant/flow"
)

// The tests below run parts of themselves in child processes
// (testkit.Child). Real processes are the point: each has its own
// connection to the SQLite file, and a SIGKILL leaves nothing behind.

// TestHelperProcess is not a test: it is the body of a child process.
func TestHelperProcess(t *testing.T) {
	switch testkit.HelperPart() {
	case "":
		t.Skip("runs only as a child process of another test")
	case "resume":
		helperResume()
	case "die":
		helperDie()
	}
	os.Exit(0)
}

// helper returns a command that runs the named helper with env added.
func helper(t *testing.T, name string, env ...string) *exec.Cmd {
	t.Helper()
	return testkit.Child(t, name, env...)
}

// helperResume answers the thread's question with FLOW_ANSWER. It prints
// "ready" when it has read the thread's head, waits for a line on stdin, and prints "result ok", "result conflict" or "result error: …".
func helperResume() {
	ctx := context.Background()
	cp, err := checkpoints.OpenSQLite(ctx, os.Getenv("FLOW_DB"), checkpoints.SQLiteOptions{})
	if err != nil {
		fmt.Println("result error:", err)
		return
	}
	defer cp.Close()
	gate := &readGate{Checkpointer: cp, wait: func() {
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	}}
	r, err := approval(newCalls()).Compile(flow.Options{Checkpointer: gate})
	if err != nil {
		fmt.Println("result error:", err)
		return
	}
	_, err = r.Resume(ctx, "t1", flow.Command{Resume: os.Getenv("FLOW_ANSWER")})
	switch {
	case err == nil:
		fmt.Println("result ok")
	case errors.Is(err, flow.ErrConflict):
		fmt.Println("result conflict")
	default:
		fmt.Println("result error:", err)
	}
}

// TestTwoProcessesResumeOneThread is TestConcurrentResume with two
// processes over one SQLite file.
func TestTwoProcessesResumeOneThread(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
	c := newCalls()
	r := mustCompile(t, approval(c), flow.Options{Checkpointer: mustOpenSQLite(t, path)})
	must(t)(r.Invoke(t.Context(), "t1", St{}))

	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		lines  *bufio.Scanner
		answer string
	}
	children := make([]*child, 2)
	for i := range children {
		ch := &child{answer: fmt.Sprintf("from process %d", i)}
		ch.cmd = helper(t, "resume", "FLOW_DB="+path, "FLOW_ANSWER="+ch.answer)
		var err error
		if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := ch.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		ch.lines = bufio.NewScanner(out)
		if err := ch.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = ch
	}
	// next returns the child's next line of its own output.
	next := func(ch *child) string {
		for ch.lines.Scan() {
			if l := ch.lines.Text(); l == "ready" || strings.HasPrefix(l, "result ") {
				return l
			}
		}
		return "eof"
	}
	var wg sync.WaitGroup
	readies := make([]string, 2)
	for i, ch := range children {
		wg.Go(func() { readies[i] = next(ch) })
	}
	wg.Wait() // both processes have read the same head
	for i, l := range readies {
		if l != "ready" {
			t.Fatalf("process %d: %q, want ready", i, l)
		}
	}
	for _, ch := range children {
		fmt.Fprintln(ch.stdin, "go")
	}
	winner := -1
	for i, ch := range children {
		res := next(ch)
		if err := ch.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		switch res {
		case "result ok":
			if winner >= 0 {
				t.Fatalf("both processes committed")
			}
			winner = i
		case "result conflict":
		default:
			t.Fatalf("process %d: %s", i, res)
		}
	}
	if winner < 0 {
		t.Fatal("no process committed")
	}
	snap := must(t)(r.State(t.Context(), "t1"))
	if !snap.Done() || snap.Values.Answers["review"] != children[winner].answer {
		t.Fatalf("values %+v done %v, want the answer of process %d", snap.Values, snap.Done(), winner)
	}
	if want := []string{"review", "submit"}; !slices.Equal(snap.Values.Trace, want) {
		t.Fatalf("trace %v, want %v", snap.Values.Trace, want)
	}
}

// race builds Start → {fast, slow} → end → End with the given slow node.
func race(c *calls, slow flow.NodeFunc[St]) *flow.Graph[St] {
	return flow.NewGraph(reduce).
		AddNode("fast", step(c, "fast")).AddNode("slow", slow).AddNode("end", step(c, "end")).
		AddEdge(flow.Start, "fast").AddEdge(flow.Start, "slow").
		AddEdge("fast", "end").AddEdge("slow", "end").AddEdge("end", flow.End)
}

// savedWatch is a Checkpointer that closes saved once node's update is
// stored as a pending write.
type savedWatch struct {
	flow.Checkpointer
	node  string
	once  sync.Once
	saved chan struct{}
}

func (s *savedWatch) PutWrites(ctx context.Context, thread, checkpoint string, ws []flow.Write) error {
	err := s.Checkpointer.PutWrites(ctx, thread, checkpoint, ws)
	for _, w := range ws {
		if err == nil && w.Kind == flow.WriteUpdate && w.Node == s.node {
			s.once.Do(func() { close(s.saved) })
		}
	}
	return err
}

// helperDie starts the race graph and is killed (SIGKILL) by its slow node
// once the fast sibling's update is saved.
func helperDie() {
	ctx := context.Background()
	cp, err := checkpoints.OpenSQLite(ctx, os.Getenv("FLOW_DB"), checkpoints.SQLiteOptions{Create: true})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	w := &savedWatch{Checkpointer: cp, node: "fast", saved: make(chan struct{})}
	r, err := race(newCalls(), func(ctx context.Context, s St) (St, error) {
		<-w.saved
		// The process dies mid-superstep: no error write, no checkpoint.
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}).Compile(flow.Options{Checkpointer: w})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	_, err = r.Invoke(ctx, "t1", St{})
	fmt.Println("error: not killed:", err)
}

func TestProcessDiesFinishedSiblingNotRunAgain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "checkpoints.sqlite")
	err := helper(t, "die", "FLOW_DB="+path).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed by SIGKILL", err)
	}
	c := newCalls()
	r := mustCompile(t, race(c, step(c, "slow")), flow.Options{Checkpointer: mustOpenSQLite(t, path)})
	snap := must(t)(r.State(t.Context(), "t1"))
	if len(snap.Tasks) != 2 || !snap.Tasks[0].Done || snap.Tasks[1].Done {
		t.Fatalf("tasks after the crash %+v, want fast done and slow not", snap.Tasks)
	}
	snap = must(t)(r.Resume(t.Context(), "t1", flow.Command{}))
	if want := []string{"fast", "slow", "end"}; !snap.Done() || !slices.Equal(snap.Values.Trace, want) {
		t.Fatalf("trace %v done %v, want %v", snap.Values.Trace, snap.Done(), want)
	}
	c.want(t, map[string]int{"fast": 0, "slow": 1, "end": 1})
}
