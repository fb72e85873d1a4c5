package e2e

// End-to-end tests: the real binary, built once by TestMain, run in separate
// processes by the scripts in testdata/script (rogpeppe/go-internal
// testscript, as the gh CLI does). Each script gets its own work dir.

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite"

	"assistant/internal/pgtest"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "assistant-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// Built as README.md builds it: static, without cgo.
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "assistant"), "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build assistant:", err)
		os.Exit(1)
	}
	// pgtest.Run: the PostgreSQL tests (main_postgres_test.go) get their
	// databases from a server it starts once and stops here.
	code := pgtest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// assistantBin is the path of the binary under test.
func assistantBin() string { return filepath.Join(binDir, "assistant") }

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
		Cmds: scriptCmds,
	})
}

// scriptCmds are the custom commands of the scripts. Other _test.go files
// of this package add theirs in init functions.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"json":     cmdJSON,
	"jsonsave": cmdJSONSave,
	"apps":     cmdApps,
	"exitcode": cmdExitCode,
	"sleep":    cmdSleep,
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
