package e2e

// Helpers of the server's tests (serve_test.go): a place the stores are
// (a data dir or a PostgreSQL database), the server started on it in a
// process of its own, and requests to it.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// place is where a test's stores are: the global flags that name them.
type place struct {
	name  string
	flags []string
	pg    *pgStore // nil on a data dir
	dir   string   // "" on PostgreSQL
}

// places are a fresh data dir and, when a server is there, a fresh
// PostgreSQL database.
func places(t *testing.T) []place {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	out := []place{{name: "SQLite", flags: []string{"--data", dir}, dir: dir}}
	if os.Getenv("ASSISTANT_TEST_PG") != "" {
		pg := newPGStore(t)
		out = append(out, place{name: "PostgreSQL", flags: []string{"--store", pg.url}, pg: &pg})
	}
	return out
}

// servedOnEachPlace runs test in a parallel subtest for each of places:
// a server started there with env added and ready, and an access token of
// demo-user (owner) to call it with.
func servedOnEachPlace(t *testing.T, env []string, test func(t *testing.T, p place, s *server, owner string)) {
	t.Helper()
	for _, p := range places(t) {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			_, owner := p.token(t, "demo-user")
			s := serve(t, p, env)
			s.ready(t)
			test(t, p, s, owner)
		})
	}
}

// cli runs the binary on p with json output, env added; stdout, stderr
// and the exit code.
func (p place) cli(tb testing.TB, env []string, args ...string) (string, string, int) {
	tb.Helper()
	c := exec.Command(assistantBin(), append(append(append([]string{}, p.flags...), "--output", "json"), args...)...)
	return runCmd(tb, c, "", env)
}

// token makes an access token for user on p and returns it.
func (p place) token(tb testing.TB, user string, extra ...string) (id, token string) {
	tb.Helper()
	out, errOut, code := p.cli(tb, nil, append([]string{"approvers", "token", user}, extra...)...)
	v := wantJSON(tb, []string{"approvers", "token", user}, out, errOut, code)
	return v["id"].(string), v["token"].(string)
}

// apps counts the applications of task's drafts on p.
func (p place) apps(tb testing.TB, task string) string {
	tb.Helper()
	if p.pg != nil {
		return p.pg.apps(tb, task)
	}
	return appsOf(tb, p.dir, task)
}

// sql runs one query on p's business store: q on SQLite, pgq on
// PostgreSQL; the first column of the first row as text.
func (p place) sql(tb testing.TB, q, pgq string) string {
	tb.Helper()
	if p.pg != nil {
		return p.pg.query(tb, pgq)
	}
	return query(tb, p.dir, "business.sqlite", q)
}

// contents is what p's stores hold: the SHA-256 of each store file (and
// its -wal) of a data dir, every table's rows on PostgreSQL. Stores left
// unchanged give the same text.
func (p place) contents(tb testing.TB) string {
	tb.Helper()
	if p.pg != nil {
		return p.pg.contents(tb)
	}
	return fmt.Sprint(fileSums(tb, p.dir))
}

// server is `assistant serve` running in a process of its own.
type server struct {
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:PORT
	stderr string // the file its stderr (the access log) goes to
	done   <-chan int
}

// serve starts the server on p at a free port with env added, and reads
// the address from its first line on stdout.
func serve(t *testing.T, p place, env []string, args ...string) *server {
	t.Helper()
	c := exec.Command(assistantBin(), append(append(append([]string{}, p.flags...), "serve", "--addr", "127.0.0.1:0"), args...)...)
	c.Env = append(os.Environ(), env...)
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	c.Stderr = logFile
	done := exited(t, c)
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("serve printed no address: %v; stderr:\n%s", err, b)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "serving on ")
	if !ok {
		// A server that could not start prints its error object: all of it, and its log.
		rest, _ := io.ReadAll(out)
		b, _ := os.ReadFile(logPath)
		t.Fatalf("serve's first line %q; want \"serving on URL\"; stdout:\n%s%s\nstderr:\n%s", line, line, rest, b)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return &server{cmd: c, url: url, stderr: logPath, done: done}
}

// ready polls /readyz until it is 200 (there is nothing else to wait
// on: the recovery scan runs in the server's process) and returns the
// statuses it saw before.
func (s *server) ready(t *testing.T) []int {
	t.Helper()
	var before []int
	eventually(t, "the server's /readyz to answer 200", func() bool {
		resp, err := http.Get(s.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			before = append(before, resp.StatusCode)
		}
		return resp.StatusCode == http.StatusOK
	})
	return before
}

// log is what the server wrote on stderr so far.
func (s *server) log(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(s.stderr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stop sends SIGTERM and returns the exit code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return <-s.done
}

// reply is a response of the server: status, headers, the body decoded.
type reply struct {
	status int
	header http.Header
	raw    string
	body   map[string]any
}

// errorCode is the body's error.code, "" without one.
func (r reply) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// call sends method path with body ("" for none) signed in with token
// ("" for none) and the Idempotency-Key key ("" for none); a request
// that gets no reply fails t.
func (s *server) call(t *testing.T, method, path, token, key, body string) reply {
	t.Helper()
	r, err := s.try(method, path, token, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// try is call for a request that may get no reply (a server killed
// meanwhile): the error says why there is none, or that the body is not
// JSON.
func (s *server) try(method, path, token, key, body string) (reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		return reply{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return s.send(req)
}

// do sends req, a request to s made by the caller (headers as it wants
// them), and reads the reply; a request that gets no reply fails t.
func (s *server) do(t *testing.T, req *http.Request) reply {
	t.Helper()
	r, err := s.send(req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send sends req and reads the reply: the error says why there is none,
// or that the body is not JSON.
func (s *server) send(req *http.Request) (reply, error) {
	method, path := req.Method, req.URL.Path
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %d, reading the body: %w", method, path, resp.StatusCode, err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	if len(bytes.TrimSpace(b)) > 0 && json.Unmarshal(b, &r.body) != nil {
		return r, fmt.Errorf("%s %s: %d, body is not JSON:\n%s", method, path, r.status, b)
	}
	return r, nil
}

// want fails t unless r has status.
func (r reply) want(t *testing.T, what string, status int) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d, want %d\n%s", what, r.status, status, r.raw)
	}
	return r
}
