// Package e2e holds the end-to-end tests of assistant: the real binary,
// built once by TestMain, run in separate processes, with nothing mocked
// between the command line and the stores. This file is the harness:
// building the binary, running it (run, runIn, mustRun, background),
// waiting on what another process does to the files (eventually,
// waitPosition, startPaused), reading the stores (query, record), the
// stores a test runs on (a data dir or a PostgreSQL database), and the
// custom commands of the testscript files in testdata/script. Every
// other file holds the tests of one rule family, named after the doc
// heading it checks.
package e2e

import (
	"assistant/flow/returns"
	"assistant/internal/pgtest"
	"assistant/internal/testkit"
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite"
)

var binDir string

// TestMain builds the binary under test once, lets the tests run, and
// stops the PostgreSQL server they started, if any.
func TestMain(m *testing.M) {
	// The tests start processes that must not inherit a fault point.
	os.Unsetenv("ASSISTANT_FAULT")
	os.Unsetenv("ASSISTANT_CLOCK") // nor the test clock (docs/ci.md "A test clock")
	systemTempDir = os.TempDir()
	dir, err := os.MkdirTemp("", "assistant-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// Open to every user, as an installed binary is: a test runs it as
	// another user (TestStorageReadOnlyDataDir).
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	memDir := useMemoryTempDir()
	// The binary is on PATH, as an installed one is: a test runs it by its
	// full path, which PATH finds by its name, so the next commands it
	// prints start "assistant" (docs/cli.md "Text output").
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Built as README.md builds it: static, without cgo; beside it the
	// command query runs, which must not be a race build.
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "..", "./internal/sqlquery")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build assistant:", err)
		os.Exit(1)
	}
	// pgtest.Run: the PostgreSQL tests (newPGStore) get their databases
	// from a server it starts once and stops here; it also lets 4 tests a
	// CPU run at once, unless -parallel says (these wait on processes,
	// their locks, leases, timeouts and signals, far more than they
	// compute).
	code := pgtest.Run(m)
	dropPGFixtures()
	os.RemoveAll(dir)
	if memDir != "" {
		os.RemoveAll(memDir)
	}
	os.Exit(code)
}

// systemTempDir is the temporary directory of the system, before
// useMemoryTempDir moved TMPDIR: what outlives the run (the screenshots)
// goes there.
var systemTempDir string

// memoryTempDir is where useMemoryTempDir makes the tests' temporary
// directory: a memory file system on Linux.
const memoryTempDir = "/dev/shm"

// memoryTempMin is the free space, in bytes, memoryTempDir must have for
// the tests to use it.
const memoryTempMin = 2 << 30

// useMemoryTempDir points TMPDIR (every t.TempDir, and the processes the
// tests start) at a directory of its own under memoryTempDir, unless
// TMPDIR is set or memoryTempDir is not there or has less than
// memoryTempMin free. The tests kill processes,
// never the machine, so the fsyncs of a disk prove nothing here; on a disk
// they cost the package about a fifth of its CPU time. It returns the
// directory to remove at the end, "" when it changed nothing.
func useMemoryTempDir() string {
	if os.Getenv("TMPDIR") != "" {
		return ""
	}
	if fi, err := os.Stat(memoryTempDir); err != nil || !fi.IsDir() {
		return ""
	}
	// A small one (a container's 64 MiB /dev/shm) would fill up.
	var fs syscall.Statfs_t
	if err := syscall.Statfs(memoryTempDir, &fs); err != nil || fs.Bavail*uint64(fs.Bsize) < memoryTempMin {
		return ""
	}
	dir, err := os.MkdirTemp(memoryTempDir, "assistant-e2e-tmp-")
	if err != nil {
		return ""
	}
	// Open to every user, as /tmp is: a test may run the binary as
	// another user (TestStorageReadOnlyDataDir).
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		os.Remove(dir)
		return ""
	}
	os.Setenv("TMPDIR", dir)
	return dir
}

// assistantBin is the path of the binary under test.
func assistantBin() string { return filepath.Join(binDir, "assistant") }

// TestScripts runs each script of testdata/script, every exec line a
// process of the binary.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
		Cmds: scriptCmds,
	})
}

// scriptCmds are the custom commands of the scripts.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"json":        cmdJSON,
	"jsonsave":    cmdJSONSave,
	"apps":        cmdApps,
	"exitcode":    cmdExitCode,
	"sleep":       cmdSleep,
	"sha256":      cmdSHA256,
	"sqlexec":     cmdSQLExec,
	"sqlval":      cmdSQLVal,
	"truncate":    cmdTruncate,
	"fixtures":    cmdFixtures,
	"mask":        cmdMask,
	"verifyclean": cmdVerifyClean,
	"paired":      cmdPaired,
}

// lookupJSON reads stdout of the last command and follows a dot path
// ("interrupts.0.value.draft_id"). It returns the value as JSON text.
func lookupJSON(ts *testscript.TestScript, path string) (string, bool) {
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &v); err != nil {
		ts.Fatalf("stdout is not JSON: %v", err)
	}
	for _, part := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			next, ok := cur[part]
			if !ok {
				return "", false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(cur) {
				return "", false
			}
			v = cur[i]
		default:
			return "", false
		}
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	b, _ := json.Marshal(v)
	return string(b), true
}

// json PATH VALUE: the field at PATH of stdout equals VALUE (strings compare
// unquoted, everything else as compact JSON: null, [], ["review"], true).
// ! json PATH VALUE: it differs.
func cmdJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: json PATH VALUE")
	}
	got, ok := lookupJSON(ts, args[0])
	if !ok {
		got = "<missing>"
	}
	if (got == args[1]) == neg {
		ts.Fatalf("json %s = %s, want %s%s", args[0], got, map[bool]string{true: "not ", false: ""}[neg], args[1])
	}
}

// jsonsave PATH VAR: stores the field at PATH of stdout in $VAR.
func cmdJSONSave(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: jsonsave PATH VAR")
	}
	got, ok := lookupJSON(ts, args[0])
	if !ok {
		ts.Fatalf("jsonsave: %s missing in stdout", args[0])
	}
	ts.Setenv(args[1], got)
}

// apps DATADIR TASK N: business.sqlite holds exactly N applications for the
// drafts of TASK.
func cmdApps(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: apps DATADIR TASK N")
	}
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(filepath.Join(args[0], "business.sqlite"))+"?mode=ro")
	ts.Check(err)
	defer db.Close()
	var n int
	ts.Check(db.QueryRow(`SELECT count(*) FROM applications a JOIN drafts d ON d.draft_id = a.draft_id WHERE d.task_id = ?`, args[1]).Scan(&n))
	if strconv.Itoa(n) != args[2] {
		ts.Fatalf("task %s has %d applications, want %s", args[1], n, args[2])
	}
}

// exitcode N ARGS...: runs assistant with ARGS and checks its exit code (a
// process killed by a signal counts 128+signal, as a shell reports it).
// Its stdout and stderr are not kept; use exec for output checks.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: exitcode N ARGS...")
	}
	c := exec.Command(assistantBin(), args[1:]...)
	c.Dir = ts.Getenv("WORK")
	c.Env = append(os.Environ(), "ASSISTANT_FAULT="+ts.Getenv("ASSISTANT_FAULT"))
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		ts.Fatalf("run assistant: %v", err)
	}
	if strconv.Itoa(code) != args[0] {
		ts.Fatalf("assistant %s: exit %d, want %s\n%s", strings.Join(args[1:], " "), code, args[0], out.String())
	}
}

// sleep DURATION: lets wall-clock time pass (a draft's expiry is wall-clock
// UTC by design, so the test waits for it rather than faking a clock).
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// fileSHA256 returns the hex SHA-256 of the file at path ("" when missing).
func fileSHA256(ts *testscript.TestScript, path string) string {
	sum, err := testkit.FileSum(ts.MkAbs(path))
	ts.Check(err)
	return sum
}

// sha256 save FILE...: remembers each file's SHA-256.
// sha256 same FILE...: each file's SHA-256 is the one remembered
// (! sha256 same: at least one differs).
func cmdSHA256(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || (args[0] != "save" && args[0] != "same") || (neg && args[0] == "save") {
		ts.Fatalf("usage: sha256 save|same FILE...")
	}
	changed := false
	for _, f := range args[1:] {
		key := "SHA256_" + hex.EncodeToString([]byte(f))
		sum := fileSHA256(ts, f)
		if args[0] == "save" {
			ts.Setenv(key, sum)
			continue
		}
		want := ts.Getenv(key)
		if want == "" {
			ts.Fatalf("sha256 same %s: no saved hash (run sha256 save first)", f)
		}
		if sum != want {
			changed = true
			if !neg {
				ts.Fatalf("%s changed: sha256 %s, was %s", f, sum, want)
			}
		}
	}
	if neg && !changed {
		ts.Fatalf("no file changed")
	}
}

// openRaw opens a SQLite file with no pragmas beyond the driver's defaults.
func openRaw(ts *testscript.TestScript, file string, params string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(file)+params)
	ts.Check(err)
	db.SetMaxOpenConns(1)
	return db
}

// sqlexec FILE SQL...: runs each statement on FILE (created if missing), as
// another program or a newer build of assistant would.
func cmdSQLExec(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: sqlexec FILE SQL...")
	}
	db := openRaw(ts, args[0], "")
	defer db.Close()
	for _, q := range args[1:] {
		if _, err := db.Exec(q); err != nil {
			ts.Fatalf("sqlexec %s: %q: %v", args[0], q, err)
		}
	}
	ts.Check(db.Close())
}

// sqlval FILE QUERY WANT: the query's single value, read only, is WANT.
func cmdSQLVal(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: sqlval FILE QUERY WANT")
	}
	db := openRaw(ts, args[0], "?mode=ro")
	defer db.Close()
	var got sql.NullString
	ts.Check(db.QueryRow(args[1]).Scan(&got))
	if (got.String == args[2]) == neg {
		ts.Fatalf("%s: %q = %q, want %s%q", args[0], args[1], got.String, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

// truncate FILE N: cuts FILE to N bytes, or to half its size for N "half".
func cmdTruncate(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: truncate FILE N|half")
	}
	path := ts.MkAbs(args[0])
	var n int64
	if args[1] == "half" {
		fi, err := os.Stat(path)
		ts.Check(err)
		n = fi.Size() / 2
	} else {
		var err error
		n, err = strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
	}
	ts.Check(os.Truncate(path, n))
}

// fixtures VERSION DIR: copies the repository's
// testdata/fixtures/VERSION/*.sqlite (the files an older schema version
// wrote; see scripts/gen-fixtures-v1.sh) into DIR, mode 0600, DIR 0700.
func cmdFixtures(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: fixtures VERSION DIR")
	}
	src := filepath.Join("..", "testdata", "fixtures", args[0])
	files, err := filepath.Glob(filepath.Join(src, "*.sqlite"))
	ts.Check(err)
	if len(files) == 0 {
		ts.Fatalf("no fixtures in %s", src)
	}
	dir := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(dir, 0o700))
	for _, f := range files {
		b, err := os.ReadFile(f)
		ts.Check(err)
		ts.Check(os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600))
	}
}

var (
	uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timePattern = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?`)
)

// mask FILE OUT: writes FILE (or stdout/stderr of the last command) to OUT
// with every UUID replaced by xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx and every
// time by <time>, so output can be compared with a golden file.
func cmdMask(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: mask FILE OUT")
	}
	s := ts.ReadFile(args[0])
	s = uuidPattern.ReplaceAllString(s, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	s = timePattern.ReplaceAllString(s, "<time>")
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(s), 0o600))
}

// verifyclean DIR: `assistant --data DIR verify` finds no error.
func cmdVerifyClean(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: verifyclean DIR")
	}
	c := exec.Command(assistantBin(), "--data", ts.MkAbs(args[0]), "--output", "json", "verify")
	out, err := c.CombinedOutput()
	if err != nil {
		ts.Fatalf("verify %s: %v\n%s", args[0], err, out)
	}
}

// paired DIR: both files of data dir DIR carry one data dir identity.
func cmdPaired(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: paired DIR")
	}
	var ids []string
	for _, f := range []string{"checkpoints.sqlite", "business.sqlite"} {
		db := openRaw(ts, filepath.Join(args[0], f), "?mode=ro")
		var id string
		ts.Check(db.QueryRow(`SELECT id FROM data_dir`).Scan(&id))
		db.Close()
		ids = append(ids, id)
	}
	if len(ids[0]) != 36 || ids[0] != ids[1] {
		ts.Fatalf("data dir identities: checkpoints.sqlite %q, business.sqlite %q", ids[0], ids[1])
	}
}

// run runs the binary with args in data dir dir and returns stdout, stderr
// and the exit code (128+signal for a killed process).
func run(tb testing.TB, dir string, args ...string) (string, string, int) {
	tb.Helper()
	c := exec.Command(assistantBin(), withDefaults(args, "--data", dir, "--output", "json")...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), exitOf(tb, err)
}

func exitOf(tb testing.TB, err error) int {
	tb.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	tb.Fatalf("run assistant: %v", err)
	return -1
}

// runEnv runs the binary with args and env added to the environment, in
// dir, without --data or --user.
func runEnv(tb testing.TB, dir string, env []string, args ...string) (string, string, int) {
	tb.Helper()
	return runCmd(tb, exec.Command(assistantBin(), args...), dir, env)
}

// runCmd runs c in dir with env added to the environment; its stdout,
// stderr and exit code.
func runCmd(tb testing.TB, c *exec.Cmd, dir string, env []string) (string, string, int) {
	tb.Helper()
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), exitOf(tb, err)
}

// runIn is run with env (KEY=VALUE items) added to the environment.
func runIn(tb testing.TB, dir string, env []string, args ...string) (string, string, int) {
	tb.Helper()
	return runEnv(tb, "", env, withDefaults(args, "--data", dir, "--output", "json")...)
}

// runAs runs the binary on dir as user, with json output; stdout, stderr
// and the exit code.
func runAs(tb testing.TB, dir, user string, args ...string) (string, string, int) {
	tb.Helper()
	return run(tb, dir, append([]string{"--user", user}, args...)...)
}

// runText runs the binary with text output.
func runText(tb testing.TB, dir string, args ...string) (string, string, int) {
	tb.Helper()
	return run(tb, dir, append([]string{"--output", "text"}, args...)...)
}

// mustRun runs the binary and fails unless it exits 0; it decodes stdout.
func mustRun(tb testing.TB, dir string, args ...string) map[string]any {
	tb.Helper()
	out, errOut, code := run(tb, dir, args...)
	return wantJSON(tb, args, out, errOut, code)
}

// wantJSON fails tb unless the run of the binary with args exited 0
// (code) and printed a JSON object (out), and returns it decoded.
func wantJSON(tb testing.TB, args []string, out, errOut string, code int) map[string]any {
	tb.Helper()
	if code != 0 {
		tb.Fatalf("assistant %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		tb.Fatalf("assistant %s: stdout is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// background starts the binary with args in dir and returns it with its
// stdout and stderr; the test waits for it (wait) or kills it at the end.
func background(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), withDefaults(args, "--data", dir, "--output", "json")...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c, &out, &errb
}

// backgroundEnv is background with env (KEY=VALUE items) added to the
// process's environment.
func backgroundEnv(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), withDefaults(args, "--data", dir, "--output", "json")...)
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGCONT)
		_ = c.Process.Kill()
		_ = c.Wait()
	})
	return c, &out, &errb
}

// wait waits for c and returns its exit code.
func wait(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	return exitOf(t, c.Wait())
}

// eventually polls cond (a query of another process's files: there is
// nothing to wait on but the files) until it holds or 15 s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// proc is a process of the binary started in the background (startProc),
// or parked by a fault point (pausedAt, startPaused).
type proc struct {
	*exec.Cmd
	stderr *bytes.Buffer
	done   <-chan int // its exit code, once it exited
}

// startProc starts c in the background, its stderr kept, and returns it.
func startProc(t *testing.T, c *exec.Cmd) proc {
	t.Helper()
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- exitOf(t, c.Wait()) }()
	return proc{c, &errb, done}
}

// goOn lets p, a paused process, go on (SIGCONT) and returns its exit
// code, failing t when it does not exit within 30 s.
func (p proc) goOn(t *testing.T) int {
	t.Helper()
	if err := p.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	return exitWithin(t, p.done, 30*time.Second)
}

// startPaused starts c, whose environment parks it at the fault point
// (ASSISTANT_FAULT=point+FaultPause), and returns it once it is stopped
// there, failing t when it is not within 30 s. The process is let go and
// killed when t ends.
func startPaused(t *testing.T, c *exec.Cmd, point string) proc {
	t.Helper()
	p := startProc(t, c)
	t.Cleanup(func() { c.Process.Signal(syscall.SIGCONT); c.Process.Kill() })
	deadline := time.Now().Add(30 * time.Second)
	for !stopped(c.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%v did not reach %s", c.Args[1:], point)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// rowsPartWay starts c, a batch or decide command, parked at the end of
// its first chunk (after-checkpoint:rows@pause: the chunk's rows saved and
// the batch's position checkpointed), and returns it stopped there. A cut
// (a signal, a stop, a kill, a second command) then lands part-way on
// every machine, however fast or loaded, with no need of thousands of
// rows to make the run last. The same point parks it at each later
// chunk's end: letRun lets it go on to its end.
func rowsPartWay(t *testing.T, c *exec.Cmd) proc {
	t.Helper()
	const point = "after-checkpoint:" + returns.NodeRows
	c.Env = append(c.Environ(), returns.FaultEnv+"="+point+returns.FaultPause)
	return startPaused(t, c, point)
}

// letRun lets p, parked by rowsPartWay, go on (SIGCONT), and goes on
// continuing it each time it parks again, until it exits or t ends; it
// returns at once. Signals sent before it are delivered as p goes on.
func (p proc) letRun(t *testing.T) {
	t.Helper()
	pid := p.Process.Pid
	if err := p.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	t.Cleanup(func() { close(ended) })
	go func() {
		path := fmt.Sprintf("/proc/%d/stat", pid)
		for {
			switch procState(path) {
			case 0, 'Z', 'X':
				return
			case 'T':
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
			select {
			case <-ended:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
}

// viewPausedAt starts the binary in dir with args (JSON output), parked
// at the fault point (point@pause: a view between its reads), and
// returns it stopped there with the buffer its stdout goes to.
func viewPausedAt(t *testing.T, dir, point string, args ...string) (proc, *bytes.Buffer) {
	t.Helper()
	c := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json"}, args...)...)
	c.Env = append(os.Environ(), returns.FaultEnv+"="+point+returns.FaultPause)
	out := &bytes.Buffer{}
	c.Stdout = out
	return startPaused(t, c, point), out
}

// stopped reports whether process pid is stopped by a signal (state T).
func stopped(pid int) bool { return procState(fmt.Sprintf("/proc/%d/stat", pid)) == 'T' }

// pause sends proc SIGSTOP and returns once every thread of it is stopped
// (state T): the signal is delivered asynchronously, and on a busy
// machine a thread may still write between the kill and its stop.
func pause(t *testing.T, proc *exec.Cmd) {
	t.Helper()
	if err := proc.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the process stops on SIGSTOP", func() bool { return allStopped(proc.Process.Pid) })
}

// allStopped reports whether every thread of process pid is stopped by a
// signal (state T).
func allStopped(pid int) bool { return everyThread(pid, 'T') }

// asleep reports whether every thread of process pid sleeps (state S):
// none runs, waits to run, or waits for the disk. A process that waits
// on a timer for its next look is asleep; one that opens its files or
// reads them is not, however slowly the machine runs it.
func asleep(pid int) bool { return everyThread(pid, 'S') }

// everyThread reports whether process pid has threads and each is in
// state (a /proc stat state letter).
func everyThread(pid int, state byte) bool {
	threads, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(threads) == 0 {
		return false
	}
	for _, th := range threads {
		if procState(fmt.Sprintf("/proc/%d/task/%s/stat", pid, th.Name())) != state {
			return false
		}
	}
	return true
}

// procState is the state letter of the /proc stat file at path (R, S, D,
// T, …), or 0 when it cannot be read.
func procState(path string) byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) <= i+2 {
		return 0
	}
	return s[i+2]
}

// exitWithin waits for a process's exit code.
func exitWithin(t *testing.T, done <-chan int, d time.Duration) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(d):
		t.Fatalf("the process did not exit within %v", d)
	}
	return -1
}

// exited runs c in the background and returns a channel that gets its exit
// code once it ends.
func exited(t *testing.T, c *exec.Cmd) <-chan int {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- exitOf(t, c.Wait()) }()
	t.Cleanup(func() { _ = c.Process.Kill() })
	return done
}

// stillRunning fails the test if the process behind done has ended.
func stillRunning(t *testing.T, what string, done <-chan int) {
	t.Helper()
	select {
	case code := <-done:
		t.Fatalf("%s ended (exit %d) before anything decided the task", what, code)
	default:
	}
}

// hasOpen reports whether process pid has a file named name open (Linux
// /proc).
func hasOpen(pid int, name string) bool {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && filepath.Base(target) == name {
			return true
		}
	}
	return false
}

// makeDataDir creates the data dir dir as a command that makes one would
// (read-only commands make none): it imports one order, INIT0, delivered
// two days ago, that no test uses. A new data dir is a copy of the
// fixture that import made.
func makeDataDir(t *testing.T, dir string) {
	t.Helper()
	importInit := func(tb testing.TB, dir string) {
		tb.Helper()
		file := filepath.Join(tb.TempDir(), "init-orders.csv")
		row := "order_id,user,item,delivered_at,final_sale\nINIT0,demo-user,Data dir maker," + time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339) + ",false\n"
		if err := os.WriteFile(file, []byte(row), 0o600); err != nil {
			tb.Fatal(err)
		}
		mustRun(tb, dir, "orders", "import", file)
	}
	if !fromLastingFixture(t, dir, "init", importInit) {
		importInit(t, dir)
	}
}

// A fixture is a data dir that many tests start from: made once by the
// commands that make it, then copied into each test's new data dir, which
// costs a copy of two files instead of the commands. One that holds
// drafts (fromFixture) is made again once older than fixtureMaxAge, so
// that the drafts a test finds in it are as fresh as if it had made them
// (a draft is valid for 300 s by default); one that holds nothing that
// expires (fromLastingFixture: orders, grants) is made once.
type fixture struct {
	mu  sync.Mutex
	dir string    // the data dir; "" until made
	at  time.Time // when its making began
}

const fixtureMaxAge = time.Minute

var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*fixture{}
)

// fromFixture makes dir, when it does not exist or is empty, a copy of the
// fixture name, which build makes in a new directory the first time it is
// asked for (and again once it is older than fixtureMaxAge), and reports
// true; it copies nothing and reports false when dir holds files: a
// fixture makes a data dir, it does not add to one.
func fromFixture(tb testing.TB, dir, name string, build func(tb testing.TB, dir string)) bool {
	tb.Helper()
	return fromFixtureAged(tb, dir, name, fixtureMaxAge, build)
}

// fromLastingFixture is fromFixture for a fixture that holds nothing that
// expires (orders delivered days ago, grants; no draft, no lease): made the
// first time it is asked for, and never again.
func fromLastingFixture(tb testing.TB, dir, name string, build func(tb testing.TB, dir string)) bool {
	tb.Helper()
	return fromFixtureAged(tb, dir, name, 0, build)
}

// fromFixtureAged is fromFixture with the age past which the fixture is
// made again (0: never).
func fromFixtureAged(tb testing.TB, dir, name string, maxAge time.Duration, build func(tb testing.TB, dir string)) bool {
	tb.Helper()
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return false
	}
	fixturesMu.Lock()
	f := fixtures[name]
	if f == nil {
		f = &fixture{}
		fixtures[name] = f
	}
	fixturesMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dir == "" || (maxAge > 0 && time.Since(f.at) > maxAge) {
		parent, err := os.MkdirTemp(binDir, "fixture-"+name+"-")
		if err != nil {
			tb.Fatal(err)
		}
		at := time.Now()
		build(tb, filepath.Join(parent, "data"))
		f.dir, f.at = filepath.Join(parent, "data"), at
	}
	copyDataDir(tb, f.dir, dir)
	return true
}

// copyDataDir copies the data dir src, closed cleanly, to dst as a clean
// close leaves it: the two files, then each one's empty -wal, written
// after the file, so that the next open finds it as left by a clean close
// (no -wal, or one older than its file, would make it check the file).
func copyDataDir(tb testing.TB, src, dst string) {
	tb.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		tb.Fatal(err)
	}
	copyTo(tb, src, dst, "checkpoints.sqlite", "business.sqlite")
	for _, name := range []string{"checkpoints.sqlite-wal", "business.sqlite-wal"} {
		wal, err := os.Stat(filepath.Join(src, name))
		if err != nil || wal.Size() != 0 {
			tb.Fatalf("fixture %s: %s is not as a clean close leaves it (%v)", src, name, err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), nil, 0o600); err != nil {
			tb.Fatal(err)
		}
		now := time.Now()
		if err := os.Chtimes(filepath.Join(dst, name), now, now); err != nil {
			tb.Fatal(err)
		}
	}
}

// query runs one SQL query on a file of the data dir (read-only) and returns
// the first column of the first row as text. It runs in a process of its
// own (internal/sqlquery): in this race build SQLite is many times slower.
func query(tb testing.TB, dir, file, q string, args ...any) string {
	tb.Helper()
	in, err := json.Marshal(args)
	if err != nil {
		tb.Fatal(err)
	}
	c := exec.Command(filepath.Join(binDir, "sqlquery"), filepath.Join(dir, file), q)
	c.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		tb.Fatalf("%s: %s: %v: %s", file, q, err, strings.TrimSpace(errb.String()))
	}
	return out.String()
}

// record returns a column of task's record.
func record(t *testing.T, dir, task, column string) string {
	t.Helper()
	return query(t, dir, "business.sqlite", `SELECT coalesce(`+column+`, '') FROM tasks WHERE task_id = ?`, task)
}

// recordOf is task's record in dir's business file, as "status/stage".
func recordOf(tb testing.TB, dir, task string) string {
	tb.Helper()
	return query(tb, dir, "business.sqlite", `SELECT status || '/' || stage FROM tasks WHERE task_id = ?`, task)
}

// applications counts the applications made from task's draft.
func applications(t *testing.T, dir, task string) string {
	t.Helper()
	return query(t, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = ?`, task)
}

// appsOf counts the applications of task's draft in dir's business file.
func appsOf(tb testing.TB, dir, task string) string {
	tb.Helper()
	return query(tb, dir, "business.sqlite", `SELECT count(*) FROM applications a JOIN drafts d USING (draft_id) WHERE d.task_id = ?`, task)
}

// rawExecBusiness runs a statement on dir's business file as another
// program would.
func rawExecBusiness(t *testing.T, dir, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// holdWriteLock makes dir's files (a first command) and holds the write lock
// of file in it, as another process in a long write transaction would,
// until release is called or the test ends.
func holdWriteLock(t *testing.T, dir, file string) (release func()) {
	t.Helper()
	makeDataDir(t, dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, file)+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin() // BEGIN IMMEDIATE: takes the write lock
	if err != nil {
		t.Fatal(err)
	}
	release = func() { _ = tx.Rollback() }
	t.Cleanup(release)
	return release
}

// holdOn sets the lease of task in data dir dir to last ttl from now,
// keeping its holder: a paused holder renews nothing, and the test must
// not depend on how fast it runs before the lease would lapse.
func holdOn(t *testing.T, dir, task string, ttl time.Duration) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE tasks SET lease_until = ? WHERE task_id = ?`, time.Now().UTC().Add(ttl).Format(time.RFC3339Nano), task); err != nil {
		t.Fatal(err)
	}
}

// setLease makes process pid on this host the holder of task's lease for
// the next ttl, as a live process driving it would be.
func setLease(dir, task string, pid int, ttl time.Duration) error {
	host := returns.ThisHost()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "business.sqlite")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(`UPDATE tasks SET lease_owner = 'other', lease_pid = ?, lease_host = ?, lease_until = ? WHERE task_id = ?`,
		pid, host, time.Now().UTC().Add(ttl).Format(time.RFC3339Nano), task)
	return err
}

// fileSums is the SHA-256 of each store file of dir and its -wal, by name
// (a missing file is ""), to tell that a command changed no file.
func fileSums(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	sums := map[string]string{}
	for _, f := range []string{"business.sqlite", "checkpoints.sqlite"} {
		for _, name := range []string{f, f + "-wal"} {
			sums[name] = testkit.FileSHA256(tb, filepath.Join(dir, name))
		}
	}
	return sums
}

// sameFiles fails the test when a store file of dir changed since before.
func sameFiles(t *testing.T, dir string, before map[string]string, what string) {
	t.Helper()
	for name, sum := range fileSums(t, dir) {
		if sum != before[name] {
			t.Errorf("%s changed %s", what, name)
		}
	}
}

// sums returns the SHA-256 of each of dir's files named (a missing one is
// "").
func sums(tb testing.TB, dir string, names ...string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	for _, n := range names {
		out[n] = testkit.FileSHA256(tb, filepath.Join(dir, n))
	}
	return out
}

// sameSums fails the test when a file changed since before.
func sameSums(tb testing.TB, dir string, before map[string]string, what string) {
	tb.Helper()
	for n, want := range before {
		if got := testkit.FileSHA256(tb, filepath.Join(dir, n)); got != want {
			tb.Errorf("%s changed %s", what, n)
		}
	}
}

// copyTo copies the named files of src into dst, replacing them, and
// removes their -wal and -shm in dst, as a person restoring a file does.
func copyTo(tb testing.TB, src, dst string, names ...string) {
	tb.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			tb.Fatal(err)
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			os.Remove(filepath.Join(dst, n+suffix))
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

// snapshotFiles copies dir's closed .sqlite files into a new directory and
// returns it: an older copy of the files, as a restore would put back.
func snapshotFiles(tb testing.TB, dir string) string {
	tb.Helper()
	out := tb.TempDir()
	copyTo(tb, dir, out, "checkpoints.sqlite", "business.sqlite")
	return out
}

// refused runs args, which must exit with code and print one line on
// stderr holding want, and change no file.
func refused(t *testing.T, dir string, code int, want string, args ...string) {
	t.Helper()
	before := fileSums(t, dir)
	_, stderr, got := run(t, dir, args...)
	if got != code || !strings.Contains(stderr, want) || strings.Count(strings.TrimSuffix(stderr, "\n"), "\n") != 0 {
		t.Errorf("assistant %s: exit %d, stderr %q; want exit %d and one line with %q", strings.Join(args, " "), got, stderr, code, want)
	}
	sameFiles(t, dir, before, "assistant "+strings.Join(args, " "))
}

// wantRefused checks a command's failure: exit code, the error code of the
// JSON error object, and what stderr must say.
func wantRefused(tb testing.TB, dir string, code int, errCode string, says []string, args ...string) {
	tb.Helper()
	out, errOut, got := run(tb, dir, args...)
	if got != code {
		tb.Fatalf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), got, code, out, errOut)
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Error.Code != errCode {
		tb.Errorf("%s: error %+v (%v), want code %s", strings.Join(args, " "), e.Error, err, errCode)
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		tb.Errorf("%s: stderr is not one line:\n%s", strings.Join(args, " "), errOut)
	}
	for _, s := range says {
		if !strings.Contains(errOut, s) {
			tb.Errorf("%s: stderr lacks %q:\n%s", strings.Join(args, " "), s, errOut)
		}
	}
}

// listed runs list with args and returns "task=status" of each task, in
// order, joined by spaces.
func listed(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, stderr, code := run(t, dir, append([]string{"list"}, args...)...)
	if code != 0 {
		t.Fatalf("list %v: exit %d, %s", args, code, stderr)
	}
	var v struct {
		Tasks []struct{ Task, Status string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("list %v: %v\n%s", args, err, out)
	}
	var got []string
	for _, tk := range v.Tasks {
		got = append(got, tk.Task+"="+tk.Status)
	}
	return strings.Join(got, " ")
}

// statusOf decodes the status of a printed view.
func statusOf(t *testing.T, out string) string {
	t.Helper()
	var v struct{ Status string }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout is not one JSON view: %v\n%s", err, out)
	}
	return v.Status
}

// writeShop writes an orders CSV (the header, then rows) and returns its path.
func writeShop(tb testing.TB, rows ...string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "shop.csv")
	content := "order_id,user,item,delivered_at,final_sale\n" + strings.Join(rows, "\n") + "\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// writeFile writes text to name in a new temporary directory and returns
// its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// batchFile writes a batch CSV of n rows, each for an eligible order of its
// own that it imports into data dir dir, each with a reason, so that every
// row's task parks at approval with one draft, and returns its path. A new
// data dir is a copy of the fixture that import made.
func batchFile(tb testing.TB, dir string, n int) string {
	tb.Helper()
	path, ordersPath := rowFiles(tb, n)
	importOrders := func(tb testing.TB, dir string) {
		tb.Helper()
		mustRun(tb, dir, "orders", "import", ordersPath)
	}
	if !fromLastingFixture(tb, dir, fmt.Sprintf("orders-%d", n), importOrders) {
		importOrders(tb, dir)
	}
	return path
}

// rowFiles writes, in a fresh directory, a batch CSV of n rows (tasks
// row-0000, row-0001, …, each with a reason) and an orders CSV with an
// eligible order of demo-user for each row (R00000, R00001, …), and
// returns their paths.
func rowFiles(tb testing.TB, n int) (rows, orders string) {
	tb.Helper()
	// Each row has an order of its own: a batch runs only the first row
	// of an order (later ones are duplicate_order). Two days ago, with
	// its zone (an import refuses a bare date).
	day := time.Now().UTC().AddDate(0, 0, -2).Format(time.RFC3339)
	var b, o strings.Builder
	b.WriteString("task,order,reason\n")
	o.WriteString("order_id,user,item,delivered_at,final_sale\n")
	for i := range n {
		fmt.Fprintf(&b, "row-%04d,R%05d,reason %d\n", i, i, i)
		fmt.Fprintf(&o, "R%05d,demo-user,Row item %d,%s,false\n", i, i, day)
	}
	tmp := tb.TempDir()
	rows, orders = filepath.Join(tmp, "rows.csv"), filepath.Join(tmp, "orders.csv")
	if err := os.WriteFile(rows, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(orders, []byte(o.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return rows, orders
}

// checkBatchDone checks the invariants of a finished n-row batch: one task
// and one draft per row, no duplicate, both files intact.
func checkBatchDone(t *testing.T, dir, batch string, n int) {
	t.Helper()
	v := mustRun(t, dir, "show", batch)
	if v["status"] != "done" {
		t.Fatalf("batch status = %v, want done: %v", v["status"], v)
	}
	want := fmt.Sprint(n)
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE kind = 'return'`); got != want {
		t.Errorf("return tasks = %s, want %s", got, want)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM drafts WHERE task_id LIKE 'row-%'`); got != want {
		t.Errorf("drafts = %s, want %s (one per row)", got, want)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(DISTINCT task_id) FROM drafts WHERE task_id LIKE 'row-%'`); got != want {
		t.Errorf("distinct draft tasks = %s, want %s", got, want)
	}
	// Every row task has its run: a crash between a chunk's business
	// commit and its checkpoint commit must not leave records without one.
	if got := query(t, dir, "checkpoints.sqlite", `SELECT count(*) FROM threads WHERE thread_id LIKE 'row-%'`); got != want {
		t.Errorf("row runs in checkpoints.sqlite = %s, want %s", got, want)
	}
	// Each row's timeline: numbered without gaps, nothing left running, and
	// its last step the approval question it waits at.
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM (SELECT task_id FROM steps WHERE task_id LIKE 'row-%'
		GROUP BY task_id HAVING max(seq) = count(*) AND sum(status = 'running') = 0
		AND (SELECT node || ' ' || status FROM steps l WHERE l.task_id = steps.task_id ORDER BY seq DESC LIMIT 1) = 'review waiting')`); got != want {
		t.Errorf("rows with a whole timeline = %s, want %s", got, want)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE lease_owner IS NOT NULL`); got != "0" {
		t.Errorf("%s tasks still hold a lease after the batch", got)
	}
	if got := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks WHERE kind = 'return' AND status != 'waiting'`); got != "0" {
		t.Errorf("%s row tasks are not waiting at approval", got)
	}
	for _, f := range []string{"business.sqlite", "checkpoints.sqlite"} {
		if got := query(t, dir, f, `PRAGMA integrity_check`); got != "ok" {
			t.Errorf("%s integrity_check: %s", f, got)
		}
	}
	verifyClean(t, dir)
}

// waitPosition polls show until the batch has handled at least min rows:
// the batch process tells its progress only through the files.
func waitPosition(t *testing.T, dir, batch string, min int, proc *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, _, code := run(t, dir, "show", batch)
		if code == 0 {
			var v struct {
				Batch struct{ Position int } `json:"batch"`
			}
			if json.Unmarshal([]byte(out), &v) == nil && v.Batch.Position >= min {
				return
			}
		}
		if proc.ProcessState != nil {
			t.Fatalf("batch process ended before row %d", min)
		}
		// Each look is a process of its own: look often enough to catch
		// the batch part-way, not so often that the looks slow it down.
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("batch did not reach row %d", min)
}

// startBatch starts batch b1 over rows as a background process whose JSON
// output lands in the returned buffer. The data dir is made first, so that
// show can poll it from the first moment.
func startBatch(t *testing.T, dir, rows string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	makeDataDir(t, dir)
	proc := exec.Command(assistantBin(), "--data", dir, "--output", "json", "batch", "b1", rows)
	out := &bytes.Buffer{}
	proc.Stdout = out
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	return proc, out
}

// pausedBatch is startBatch, with flags after the rows, parked at the
// batch's first chunk's end (rowsPartWay); its stderr is the proc's.
func pausedBatch(t *testing.T, dir, rows string, flags ...string) (proc, *bytes.Buffer) {
	t.Helper()
	makeDataDir(t, dir)
	c := exec.Command(assistantBin(), append([]string{"--data", dir, "--output", "json", "batch", "b1", rows}, flags...)...)
	out := &bytes.Buffer{}
	c.Stdout = out
	return rowsPartWay(t, c), out
}

// stopPaused stops task id from another process while p, its holder, is
// parked (rowsPartWay): the stop is committed (the record says
// interrupted) before p is let run, so it lands part-way. It returns the
// stop's JSON view, printed once p let go; a stop that fails fails t.
func stopPaused(t *testing.T, dir, id string, p proc) map[string]any {
	t.Helper()
	c := exec.Command(assistantBin(), "--data", dir, "--output", "json", "stop", id)
	var out bytes.Buffer
	c.Stdout = &out
	stop := startProc(t, c)
	eventually(t, "the stop of "+id+" committed", func() bool { return record(t, dir, id, "status") == "interrupted" })
	p.letRun(t)
	if code := exitWithin(t, stop.done, time.Minute); code != 0 {
		t.Fatalf("stop %s: exit %d, %s", id, code, stop.stderr)
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("stop %s printed %q: %v", id, out.String(), err)
	}
	return v
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// jsonText is s as it reads inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// verifyReport is the JSON of `assistant verify` (docs/storage.md "Verify").
type verifyReport struct {
	Clean bool `json:"clean"`
	Files []struct {
		File      string  `json:"file"`
		DataDirID *string `json:"data_dir_id"`
		Integrity string  `json:"integrity"`
	} `json:"files"`
	Findings []struct {
		Severity, Task, File, Problem, Fix string
	} `json:"findings"`
}

// verify runs `assistant verify` on dir and returns its report and exit
// code.
func verify(tb testing.TB, dir string) (verifyReport, int, string) {
	tb.Helper()
	out, errOut, code := run(tb, dir, "verify")
	var rep verifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		tb.Fatalf("verify %s: exit %d, stdout is not its report: %v\n%s%s", dir, code, err, out, errOut)
	}
	return rep, code, out + errOut
}

// listAgreesWithShow fails t unless, on data dir dir, list gives every
// task of tasks the status show gives it, and list --awaiting-me holds
// exactly those of them that show says are waiting (docs/json.md "The
// state as it is now"), whatever a crash left.
func listAgreesWithShow(t *testing.T, dir string, tasks []string) {
	t.Helper()
	var list, awaiting struct {
		Tasks []struct{ Task, Status string }
	}
	for _, l := range []struct {
		into any
		args []string
	}{{&list, []string{"list"}}, {&awaiting, []string{"list", "--awaiting-me"}}} {
		out, errOut, code := run(t, dir, l.args...)
		if err := json.Unmarshal([]byte(out), l.into); err != nil || code != 0 {
			t.Fatalf("%v: exit %d, %v\n%s%s", l.args, code, err, out, errOut)
		}
	}
	listed, asks := map[string]string{}, map[string]bool{}
	for _, x := range list.Tasks {
		listed[x.Task] = x.Status
	}
	for _, x := range awaiting.Tasks {
		asks[x.Task] = true
	}
	for _, task := range tasks {
		out, errOut, code := run(t, dir, "show", task)
		if code == 4 { // unknown: never started
			if _, ok := listed[task]; ok {
				t.Errorf("%s: list lists it, show does not know it", task)
			}
			continue
		}
		shown := wantJSON(t, []string{"show", task}, out, errOut, code)["status"]
		if listed[task] != shown {
			t.Errorf("%s: list says %q, show %q", task, listed[task], shown)
		}
		if asks[task] != (shown == "waiting") {
			t.Errorf("%s: in list --awaiting-me %v, show says %v", task, asks[task], shown)
		}
	}
}

// historyAgreesWithShow fails t unless history on p names a holder of
// each of tasks (owned by user) exactly when show does, and says it is
// gone exactly when show does (docs/json.md "The state as it is now").
func historyAgreesWithShow(t *testing.T, p place, user string, tasks []string) {
	t.Helper()
	for _, task := range tasks {
		out, errOut, code := p.cli(t, nil, "--user", user, "show", task)
		shown, _ := wantJSON(t, []string{"show", task}, out, errOut, code)["holder"].(map[string]any)
		out, errOut, code = p.cli(t, nil, "--user", user, "history", task)
		told, _ := wantJSON(t, []string{"history", task}, out, errOut, code)["holder"].(map[string]any)
		if (shown == nil) != (told == nil) || (shown != nil && shown["alive"] != told["alive"]) {
			t.Errorf("%s: show names the holder %v, history %v", task, shown, told)
		}
	}
}

// runStatus finds the status a verify finding gives a task's run.
var runStatus = regexp.MustCompile(`\bits run (\w+)`)

// verifyAgreesWithShow fails t unless verify on p, before anything sets
// the killed tasks right, tells of each of tasks (owned by user) what show
// tells: a finding's run status is show's, and a task show reports ended
// is offered no question to answer (docs/recovery.md "A recorded end").
func verifyAgreesWithShow(t *testing.T, p place, user string, tasks []string) {
	t.Helper()
	out, errOut, code := p.cli(t, nil, "verify")
	var rep verifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("verify: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	shown := map[string]string{}
	for _, task := range tasks {
		out, errOut, code := p.cli(t, nil, "--user", user, "show", task)
		shown[task] = wantJSON(t, []string{"show", task}, out, errOut, code)["status"].(string)
	}
	for _, f := range rep.Findings {
		status, ok := shown[f.Task]
		if !ok {
			continue
		}
		if m := runStatus.FindStringSubmatch(f.Problem); m != nil && m[1] != status {
			t.Errorf("verify of %s: %q; show says %s", f.Task, f.Problem, status)
		}
		if status != "waiting" && strings.Contains(f.Fix, "answer its question") {
			t.Errorf("verify of %s, which show says is %s, offers a question to answer: %s", f.Task, status, f.Fix)
		}
	}
}

// verifyClean fails the test unless `assistant verify` finds no error in
// the data dir dir: every data dir an end-to-end test leaves must verify
// clean (docs/recovery.md "Verification points"). Warnings (states the flow sets
// right by itself) are logged.
func verifyClean(tb testing.TB, dir string) {
	tb.Helper()
	rep, code, out := verify(tb, dir)
	if code != 0 || !rep.Clean {
		tb.Errorf("verify %s: exit %d, not clean:\n%s", dir, code, out)
		return
	}
	for _, f := range rep.Findings {
		tb.Logf("verify %s: %s %s%s: %s", dir, f.Severity, f.Task, f.File, f.Problem)
	}
}

// faultRun runs one command of the walkthrough in data dir dir, with point
// switched on ("" for none), and returns stdout, exit code and wall time.
func faultRun(tb testing.TB, dir, point string, args []string) (string, int, time.Duration) {
	tb.Helper()
	return faultRunOn(tb, dirStore(dir), point, args)
}

// killedAt runs a command with the fault point switched on and checks
// that it died there (SIGKILL: exit 137).
func killedAt(tb testing.TB, dir, point string, args ...string) {
	tb.Helper()
	if _, code, _ := faultRun(tb, dir, point, args); code != 137 {
		tb.Fatalf("%s with %s: exit %d, want 137 (killed at the point)", strings.Join(args, " "), point, code)
	}
}

// approvalView is the part of a start/show/resume JSON these tests read.
type approvalView struct {
	Status     string
	Stage      string
	Kind       *string
	Interrupts []struct {
		ID    string
		Kind  string
		Value struct {
			DraftID     string `json:"draft_id"`
			Version     int
			Approver    int
			Comment     string
			RequestedBy string `json:"requested_by"`
		}
	}
	Draft *struct {
		DraftID string `json:"draft_id"`
		Version int
		Reason  string
	}
	Decisions []struct {
		By      string
		Action  string
		DraftID *string `json:"draft_id"`
		Version *int
	}
	Result *struct {
		ApplicationID string `json:"application_id"`
	}
	Error *struct{ Code string }
}

// as runs the binary as user and decodes its view; it fails unless the
// exit code is want.
func as(t *testing.T, dir, user string, want int, args ...string) (approvalView, string) {
	t.Helper()
	out, stderr, code := run(t, dir, append([]string{"--user", user}, args...)...)
	if code != want {
		t.Fatalf("--user %s %s: exit %d, want %d\n%s%s", user, strings.Join(args, " "), code, want, out, stderr)
	}
	var v approvalView
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("--user %s %s: %v\n%s", user, strings.Join(args, " "), err, out)
		}
	}
	return v, stderr
}

// ciBotOrders imports returnable orders C1..C9 of ci-bot into dir. A new
// data dir is a copy of the fixture that import made.
func ciBotOrders(t *testing.T, dir string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("order_id,user,item,delivered_days_ago,final_sale\n")
	for _, id := range []string{"C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9"} {
		b.WriteString(id + ",ci-bot,Build agent parts,2,false\n")
	}
	file := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	importOrders := func(tb testing.TB, dir string) {
		tb.Helper()
		mustRun(tb, dir, "--user", "ci-bot", "orders", "import", file)
	}
	if !fromLastingFixture(t, dir, "ci-bot-orders", importOrders) {
		importOrders(t, dir)
	}
}

// listedAs is list as user with args: "task=owner" of each task.
func listedAs(t *testing.T, dir, user string, args ...string) string {
	t.Helper()
	out, stderr, code := run(t, dir, append([]string{"--user", user, "list"}, args...)...)
	if code != 0 {
		t.Fatalf("list %v: exit %d, %s", args, code, stderr)
	}
	var v struct {
		Tasks []struct{ Task, Owner string }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("list: %v\n%s", err, out)
	}
	var got []string
	for _, tk := range v.Tasks {
		got = append(got, tk.Task+"="+tk.Owner)
	}
	return strings.Join(got, " ")
}

// pgStore is a test's PostgreSQL database, the place its commands keep
// both stores.
type pgStore struct{ url string }

// newPGStore gives the test a new, empty database.
func newPGStore(t *testing.T) pgStore {
	t.Helper()
	return pgStore{url: pgtest.Database(t)}
}

// cmd is the binary with args on the store, env added to this process's.
func (s pgStore) cmd(env []string, args ...string) *exec.Cmd {
	c := exec.Command(assistantBin(), withDefaults(args, "--store", s.url, "--output", "json")...)
	c.Env = append(os.Environ(), env...)
	return c
}

// run runs the binary on the store and returns stdout, stderr and the exit
// code (128+signal for a killed process). Every error line it prints is
// checked to say each context once and name every id (wantOneContext).
func (s pgStore) run(tb testing.TB, env []string, args ...string) (string, string, int) {
	tb.Helper()
	c := s.cmd(env, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := exitOf(tb, err)
	wantOneContext(tb, args, errb.String())
	return out.String(), errb.String(), code
}

// wantOneContext fails tb for each error line of stderr (args' run) that
// contextFault finds fault with.
func wantOneContext(tb testing.TB, args []string, stderr string) {
	tb.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if fault := contextFault(line); fault != "" {
			tb.Errorf("%v: %s: %q", args, fault, line)
		}
	}
}

// emptyID is an id left empty in a message: "thread/" before a colon, a
// space or the end, or an empty quoted name.
var emptyID = regexp.MustCompile(`\w/(:|\s|$)|""|''`)

// contextFault says what is wrong with one error line, "" for nothing: a
// message says each of its contexts once ("task g1: task g1: …" wraps the
// same context twice) and names every id it speaks of ("get checkpoint
// g1/: …" leaves one empty). The contexts are the message's parts between
// ": ", before the hint ("; " and what follows).
func contextFault(line string) string {
	msg, ok := strings.CutPrefix(line, "assistant: ")
	if !ok {
		return ""
	}
	msg, _, _ = strings.Cut(msg, "; ")
	seen := map[string]bool{}
	for _, part := range strings.Split(msg, ": ") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if seen[part] {
			return fmt.Sprintf("the context %q is said twice", part)
		}
		seen[part] = true
	}
	if loc := emptyID.FindStringIndex(msg); loc != nil {
		return fmt.Sprintf("an id is left empty at %q", msg[max(0, loc[0]-20):loc[1]])
	}
	return ""
}

// must runs the binary on the store and fails unless it exits 0; it
// decodes stdout.
func (s pgStore) must(tb testing.TB, env []string, args ...string) map[string]any {
	tb.Helper()
	out, errOut, code := s.run(tb, env, args...)
	return wantJSON(tb, args, out, errOut, code)
}

// query runs one SQL query on the database and returns the first column
// of the first row as text.
func (s pgStore) query(tb testing.TB, q string, args ...any) string {
	tb.Helper()
	var v any
	s.session(tb, func(ctx context.Context, conn *pgx.Conn) {
		if err := conn.QueryRow(ctx, q, args...).Scan(&v); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	})
	return fmt.Sprint(v)
}

// session runs fn on a session of its own on the database, closed once
// fn returns (or fails tb).
func (s pgStore) session(tb testing.TB, fn func(ctx context.Context, conn *pgx.Conn)) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	fn(ctx, conn)
}

// apps counts the applications of task's drafts.
func (s pgStore) apps(tb testing.TB, task string) string {
	tb.Helper()
	return s.query(tb, `SELECT count(*) FROM business.applications a JOIN business.drafts d ON d.draft_id = a.draft_id WHERE d.task_id = $1`, task)
}

// wantApps checks that task's drafts have want applications.
func (s pgStore) wantApps(tb testing.TB, task, want string) {
	tb.Helper()
	if got := s.apps(tb, task); got != want {
		tb.Errorf("applications of %s = %s, want %s", task, got, want)
	}
}

// verifyClean checks that verify finds the two schemas agree.
func (s pgStore) verifyClean(tb testing.TB) {
	tb.Helper()
	out, errOut, code := s.run(tb, nil, "verify")
	if code != 0 || !strings.Contains(out, `"clean": true`) {
		tb.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
}

// contents is every row of both schemas' tables, one md5 per table, and
// every table's columns: a database left unchanged gives the same text.
// Schemas that do not exist give nothing.
func (s pgStore) contents(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	s.session(tb, func(ctx context.Context, conn *pgx.Conn) {
		rows, err := conn.Query(ctx, `SELECT table_schema, table_name, string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema IN ('checkpoints', 'business')
		GROUP BY 1, 2 ORDER BY 1, 2`)
		if err != nil {
			tb.Fatal(err)
		}
		type table struct{ schema, name, cols string }
		var tables []table
		for rows.Next() {
			var t table
			if err := rows.Scan(&t.schema, &t.name, &t.cols); err != nil {
				tb.Fatal(err)
			}
			tables = append(tables, t)
		}
		if err := rows.Err(); err != nil {
			tb.Fatal(err)
		}
		var schemas string
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(nspname, ' ' ORDER BY nspname), '') FROM pg_namespace WHERE nspname IN ('checkpoints', 'business')`).Scan(&schemas); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, "schemas: %s\n", schemas)
		for _, t := range tables {
			name := pgx.Identifier{t.schema, t.name}.Sanitize()
			var sum string
			if err := conn.QueryRow(ctx, `SELECT coalesce(md5(string_agg(r::text, E'\n' ORDER BY r::text)), 'empty') FROM `+name+` r`).Scan(&sum); err != nil {
				tb.Fatalf("%s: %v", name, err)
			}
			fmt.Fprintf(&b, "%s (%s): %v\n", name, t.cols, sum)
		}
	})
	return b.String()
}

// exec runs SQL statements on the database.
func (s pgStore) exec(tb testing.TB, sql string) {
	tb.Helper()
	s.session(tb, func(_ context.Context, conn *pgx.Conn) { pgtest.Exec(tb, conn, sql) })
}

// pausedAt starts the binary on env's machine with args, parked by the
// fault point (FaultPause: SIGSTOP) while it holds the task's lease, and
// returns the stopped process.
func (s pgStore) pausedAt(t *testing.T, point string, env []string, args ...string) proc {
	t.Helper()
	return startPaused(t, s.cmd(append([]string{returns.FaultEnv + "=" + point + returns.FaultPause}, env...), args...), point)
}

// A PostgreSQL fixture is a database that many tests start from, as a
// data dir's fixture is (fromLastingFixture): made once by the commands
// that make it, kept until the tests end, and copied (CREATE DATABASE …
// TEMPLATE) into each test's database in place of the commands. It holds
// nothing that expires.
type pgFixture struct {
	mu    sync.Mutex
	name  string // the database; "" until made
	admin string // a connection string to the server's postgres database
}

var (
	pgFixturesMu sync.Mutex
	pgFixtures   = map[string]*pgFixture{}
)

// fromPGFixture makes the database of s, when it holds neither store's
// schema, a copy of the fixture name, which build makes on a database of
// its own the first time it is asked for, and reports true; it copies
// nothing and reports false when s holds a store. No session may be open
// on s's database: it is dropped and made again under its name.
func fromPGFixture(t *testing.T, s pgStore, name string, build func(t *testing.T, s pgStore)) bool {
	t.Helper()
	if s.query(t, `SELECT count(*) FROM pg_namespace WHERE nspname IN ('checkpoints', 'business')`) != "0" {
		return false
	}
	db, err := databaseName(s.url)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgtest.WithDatabase(s.url, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	pgFixturesMu.Lock()
	f := pgFixtures[name]
	if f == nil {
		f = &pgFixture{}
		pgFixtures[name] = f
	}
	pgFixturesMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.name == "" {
		made := newPGStore(t)
		build(t, made)
		from, err := databaseName(made.url)
		if err != nil {
			t.Fatal(err)
		}
		fixture := from + "_fixture_" + name
		pgStore{admin}.exec(t, pgtest.CreateFrom(fixture, from))
		f.name, f.admin = fixture, admin
	}
	ident := pgx.Identifier{db}.Sanitize()
	pgStore{admin}.exec(t, `DROP DATABASE `+ident+` WITH (FORCE)`)
	pgStore{admin}.exec(t, pgtest.CreateFrom(db, f.name))
	return true
}

// dropPGFixtures drops the databases of the PostgreSQL fixtures, once the
// tests have ended. A server the tests started is gone by then, and its
// databases with it: a drop that fails is only reported.
func dropPGFixtures() {
	pgFixturesMu.Lock()
	defer pgFixturesMu.Unlock()
	for _, f := range pgFixtures {
		if f.name == "" {
			continue
		}
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, f.admin)
		if err != nil {
			continue // the server the tests started is gone
		}
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{f.name}.Sanitize()+` WITH (FORCE)`); err != nil {
			fmt.Fprintf(os.Stderr, "drop fixture database %s: %v\n", f.name, err)
		}
		conn.Close(ctx)
	}
}

// cliStore is where a test's commands keep both stores: a data dir, or a
// PostgreSQL database.
type cliStore struct {
	dir string // the data dir; "" on PostgreSQL
	pg  pgStore
}

// cliStores returns the two kinds of store, each made for t.
func cliStores(t *testing.T) map[string]func(t *testing.T) cliStore {
	return map[string]func(t *testing.T) cliStore{
		"DataDir":  func(t *testing.T) cliStore { return cliStore{dir: t.TempDir()} },
		"Postgres": func(t *testing.T) cliStore { return cliStore{pg: newPGStore(t)} },
	}
}

// run runs the binary as user with args (and env added) on the store, and
// returns stdout, stderr and the exit code.
func (s cliStore) run(t *testing.T, env []string, user string, args ...string) (string, string, int) {
	t.Helper()
	args = append([]string{"--user", user}, args...)
	if s.dir == "" {
		return s.pg.run(t, env, args...)
	}
	c := exec.Command(assistantBin(), withDefaults(args, "--data", s.dir, "--output", "json")...)
	c.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	return out.String(), errb.String(), exitOf(t, err)
}

// want runs the binary as user and fails t unless it exits code; it
// returns stdout decoded (when it exits 0) and stderr.
func (s cliStore) want(t *testing.T, env []string, code int, user string, args ...string) (map[string]any, string) {
	t.Helper()
	out, errOut, got := s.run(t, env, user, args...)
	if got != code {
		t.Fatalf("--user %s %s: exit %d, want %d\n%s%s", user, strings.Join(args, " "), got, code, out, errOut)
	}
	var v map[string]any
	if code == 0 {
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("--user %s %s: %v\n%s", user, strings.Join(args, " "), err, out)
		}
	}
	return v, errOut
}

// ownerOrders imports owner's returnable orders Z1..Z5 and grants alice,
// bob and carol. A new data dir is a copy of the fixture those commands
// made.
func (s cliStore) ownerOrders(t *testing.T) {
	t.Helper()
	var b strings.Builder
	b.WriteString("order_id,user,item,delivered_days_ago,final_sale\n")
	for _, id := range []string{"Z1", "Z2", "Z3", "Z4", "Z5"} {
		b.WriteString(id + ",owner,Desk lamp,2,false\n")
	}
	file := filepath.Join(t.TempDir(), "orders.csv")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	build := func(tb testing.TB, dir string) {
		tb.Helper()
		mustRun(tb, dir, "--user", "owner", "orders", "import", file)
		for _, u := range []string{"alice", "bob", "carol"} {
			mustRun(tb, dir, "--user", "owner", "approvers", "grant", u)
		}
	}
	if s.dir != "" && fromLastingFixture(t, s.dir, "owner-orders", build) {
		return
	}
	buildPG := func(t *testing.T, db pgStore) {
		t.Helper()
		db.must(t, nil, "--user", "owner", "orders", "import", file)
		for _, u := range []string{"alice", "bob", "carol"} {
			db.must(t, nil, "--user", "owner", "approvers", "grant", u)
		}
	}
	if s.dir == "" && fromPGFixture(t, s.pg, "owner_orders", buildPG) {
		return
	}
	s.want(t, nil, 0, "owner", "orders", "import", file)
	for _, u := range []string{"alice", "bob", "carol"} {
		s.want(t, nil, 0, "owner", "approvers", "grant", u)
	}
}

var answeredInterrupt = regexp.MustCompile(`\(interrupt ([0-9a-f]{16})\)`)

// approveAs gives user's approve of task and returns the interrupt it
// answered, as its line on stderr names it.
func (s cliStore) approveAs(t *testing.T, env []string, user, task string) string {
	t.Helper()
	_, errOut := s.want(t, env, 0, user, "resume", task, "--action", "approve")
	m := answeredInterrupt.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("%s's approve of %s names no interrupt: %q", user, task, errOut)
	}
	return m[1]
}

// docBlock is a fenced code block of a Markdown file in the repository:
// its language (the word after the opening fence), its text, the heading
// it stands under and the line its text starts on.
type docBlock struct {
	file, heading, lang, text string
	line                      int
	// notRun is the reason of the marker `<!-- not run: REASON -->` on
	// the line before the block's opening fence; "" without one.
	notRun string
	// withPG is set by the marker `<!-- run with PostgreSQL -->` there:
	// the block runs on databases of the test server (docs/README.md
	// "Examples").
	withPG bool
}

// docBlocks returns the fenced code blocks of the Markdown file path
// (relative to the repository root), in order.
func docBlocks(tb testing.TB, path string) []docBlock {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		tb.Fatal(err)
	}
	var out []docBlock
	var cur *docBlock
	heading, prev := "", ""
	for i, line := range strings.Split(string(data), "\n") {
		before := prev
		prev = line
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &docBlock{file: path, heading: heading, lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: i + 2}
			if r, ok := strings.CutPrefix(strings.TrimSpace(before), "<!-- not run: "); ok {
				cur.notRun = strings.TrimSuffix(r, " -->")
			}
			cur.withPG = strings.TrimSpace(before) == "<!-- run with PostgreSQL -->"
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	return out
}

// docScript is the text of the first ```sh block under heading in the
// Markdown file path; the test fails without one.
func docScript(tb testing.TB, path, heading string) string {
	tb.Helper()
	for _, b := range docBlocks(tb, path) {
		if b.heading == heading && b.lang == "sh" {
			return b.text
		}
	}
	tb.Fatalf("%s has no sh block under %q", path, heading)
	return ""
}

// runShell runs script with bash in dir, the binary under test on PATH
// (TestMain), env added to the environment; stdout, stderr and the exit
// code.
func runShell(tb testing.TB, dir, script string, env ...string) (string, string, int) {
	tb.Helper()
	return runCmd(tb, exec.Command("bash", "-c", script), dir, env)
}

// withDefaults is args after the flags of defaults (pairs of a flag and
// its value) that args does not give itself: a flag takes one value
// (docs/cli.md "Conventions"), so a test's own --output or --data replaces
// the harness's.
func withDefaults(args []string, defaults ...string) []string {
	var out []string
	for i := 0; i+1 < len(defaults); i += 2 {
		if !givesFlag(args, defaults[i]) {
			out = append(out, defaults[i], defaults[i+1])
		}
	}
	return append(out, args...)
}

// givesFlag reports whether args holds flag, as "--flag" or "--flag=…".
func givesFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// lockWhileParked waits until proc, started with point+"@pause" in
// ASSISTANT_FAULT, is stopped at that point, takes the write lock of dir's
// checkpoints.sqlite (holdWriteLock, without making the data dir) and lets
// proc go on, so that it meets the lock at its next checkpoint write.
func lockWhileParked(t *testing.T, dir string, proc *exec.Cmd, point string) (release func()) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !stopped(proc.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%v did not reach %s", proc.Args[1:], point)
		}
		time.Sleep(20 * time.Millisecond)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "checkpoints.sqlite")+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin() // BEGIN IMMEDIATE: takes the write lock
	if err != nil {
		t.Fatal(err)
	}
	release = func() { _ = tx.Rollback() }
	t.Cleanup(release)
	if err := proc.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	return release
}
