package cmd

// The command line through Run, without a process: argv in; exit code,
// stdout and stderr out (docs/cli.md "Commands"). Every test has its own
// data dir under t.TempDir() and the teaching orders the binary embeds as
// its seed. Where the output is the contract it is compared with a golden
// file in testdata/, after the values that change from run to run (ids,
// times, the temporary path) are masked; `go test ./cmd -update` rewrites
// them.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"assistant/flow/returns"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the output of the tests")

// seedFile holds the teaching orders that main.go embeds in the binary.
const seedFile = "../testdata/orders.csv"

// storeFiles are the two SQLite files of a data dir (docs/storage.md).
var storeFiles = []string{"checkpoints.sqlite", "business.sqlite"}

// result is what one command line produced.
type result struct {
	code           int
	stdout, stderr string
}

// cli is one test's data dir and seed: root is its t.TempDir() (CSV files
// go there), data is root/data, the --data of every command.
type cli struct {
	tb   testing.TB
	root string
	data string
	seed []byte
	// vars are substituted in args: $ROOT and, once a command has printed
	// a draft, $DRAFT.
	vars map[string]string
}

func newCLI(tb testing.TB) *cli {
	tb.Helper()
	seed, err := os.ReadFile(seedFile)
	if err != nil {
		tb.Fatalf("read the teaching orders: %v", err)
	}
	root := tb.TempDir()
	data := filepath.Join(root, "data")
	return &cli{tb: tb, root: root, data: data, seed: seed,
		vars: map[string]string{"$ROOT": root}}
}

// run runs `assistant --data DATA args...` with ctx and returns what it
// printed; args that give --data themselves run without DATA (a flag is
// given once).
func (c *cli) run(ctx context.Context, args ...string) result {
	c.tb.Helper()
	argv := []string{"--data", c.data}
	if slices.Contains(args, "--data") {
		argv = nil
	}
	for _, a := range args {
		for k, v := range c.vars {
			a = strings.ReplaceAll(a, k, v)
		}
		argv = append(argv, a)
	}
	var stdout, stderr bytes.Buffer
	code := Run(ctx, argv, &stdout, &stderr, c.seed)
	r := result{code, stdout.String(), stderr.String()}
	var v struct {
		Draft *struct {
			DraftID string `json:"draft_id"`
		} `json:"draft"`
	}
	if json.Unmarshal(stdout.Bytes(), &v) == nil && v.Draft != nil {
		c.vars["$DRAFT"] = v.Draft.DraftID
	}
	return r
}

// mustRun runs a command that has to succeed (exit 0, nothing on stderr).
func (c *cli) mustRun(args ...string) result {
	c.tb.Helper()
	r := c.run(context.Background(), args...)
	if r.code != ExitOK || r.stderr != "" {
		c.tb.Fatalf("assistant %s: exit %d, stderr %q, stdout:\n%s", strings.Join(args, " "), r.code, r.stderr, r.stdout)
	}
	return r
}

// write creates the file name under root and returns its path.
func (c *cli) write(name, content string) string {
	c.tb.Helper()
	path := filepath.Join(c.root, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		c.tb.Fatal(err)
	}
	return path
}

// hashes is the sha256 of each store file of the data dir (and of its
// -wal, which holds committed pages too), by name; a missing file is left out.
func (c *cli) hashes() map[string]string {
	c.tb.Helper()
	got := map[string]string{}
	for _, f := range storeFiles {
		for _, name := range []string{f, f + "-wal"} {
			b, err := os.ReadFile(filepath.Join(c.data, name))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				c.tb.Fatal(err)
			}
			sum := sha256.Sum256(b)
			got[name] = hex.EncodeToString(sum[:])
		}
	}
	return got
}

// Volatile values, masked before a comparison with a golden file, in this
// order: ids (draft d_…, application app_…, checkpoint), interrupt ids,
// times, dates, the time left to a draft, the size of pruned rows. Masks of
// values that text output aligns in columns keep their width.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b([a-z]+_)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "${1}xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"},
	{regexp.MustCompile(`\b[0-9a-f]{16}\b`), "<IID>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<TIME>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}`), "YYYY-MM-DD hh:mm:ss.mmm"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`), "YYYY-MM-DD hh:mm:ss"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d UTC`), "YYYY-MM-DD hh:mm UTC"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d`), "YYYY-MM-DD"},
	{regexp.MustCompile(`\(in [0-9hms.]+\)`), "(in <LEFT>)"},
	{regexp.MustCompile(`("bytes": )\d+`), "${1}<N>"},
	{regexp.MustCompile(`(rows, )\d+( bytes)`), "${1}<N>${2}"},
}

// mask replaces the volatile values of out, and the test's temporary path.
func (c *cli) mask(out string) string {
	out = strings.ReplaceAll(out, c.root, "$ROOT")
	for _, m := range masks {
		out = m.re.ReplaceAllString(out, m.with)
	}
	return out
}

// goldenMu keeps parallel tests that share a golden file from writing it at once.
var goldenMu sync.Mutex

// checkGolden compares got with testdata/NAME.golden, or rewrites it with -update.
func checkGolden(tb testing.TB, name, got string) {
	tb.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		goldenMu.Lock()
		defer goldenMu.Unlock()
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test ./cmd -update to write it)", err)
	}
	if got != string(want) {
		tb.Errorf("stdout differs from %s (masked):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// outputOf is the --output args ask for; "json" when they ask for none,
// since a test's stdout is not a terminal.
func outputOf(args []string) string {
	out := "json"
	for i, a := range args {
		if a == "--output" && i+1 < len(args) {
			out = args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--output="); ok {
			out = v
		}
	}
	return out
}

// checkFailure checks a failed command's output: one line on stderr with
// the prefix "assistant: " holding want, and with json output the error
// object on stdout with the code of the exit code and the same message.
func checkFailure(tb testing.TB, args []string, r result, want string) {
	tb.Helper()
	line, ok := strings.CutPrefix(r.stderr, "assistant: ")
	if !ok || !strings.HasSuffix(line, "\n") || strings.Count(r.stderr, "\n") != 1 {
		tb.Errorf("stderr is not one line starting with %q: %q", "assistant: ", r.stderr)
	}
	line = strings.TrimSuffix(line, "\n")
	if !strings.Contains(line, want) {
		tb.Errorf("stderr = %q, want it to hold %q", r.stderr, want)
	}
	if outputOf(args) != "json" {
		if r.stdout != "" {
			tb.Errorf("stdout of a failed command with %s output = %q, want nothing", outputOf(args), r.stdout)
		}
		return
	}
	got, err := errorObject(r.stdout)
	if err != nil {
		tb.Fatalf("stdout is not {\"error\": {\"code\", \"message\"[, \"hint\"]}}: %v\n%s", err, r.stdout)
	}
	if got.SchemaVersion != returns.SchemaVersion {
		tb.Errorf("schema_version = %d, want %d", got.SchemaVersion, returns.SchemaVersion)
	}
	if want := errorCode(r.code); got.Error.Code != want {
		tb.Errorf("error.code = %q, want %q for exit %d", got.Error.Code, want, r.code)
	}
	if got.Error.Message == "" {
		tb.Errorf("error.message is empty")
	}
	if got.Error.Hint != nil && *got.Error.Hint == "" {
		tb.Errorf("error.hint is empty; an error without a hint has none")
	}
	// The stderr line is the message and the hint: "message; hint".
	if whole := returns.Line(got.Error.Message, got.hint()); !strings.Contains(got.Error.Message, "\n") && whole != line {
		tb.Errorf("error.message and error.hint = %q, stderr says %q", whole, line)
	}
}

// errorJSON is the JSON of a failed command (docs/json.md "Errors").
type errorJSON struct {
	SchemaVersion int `json:"schema_version"`
	Error         struct {
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Hint    *string `json:"hint"` // nil when absent
	} `json:"error"`
}

func (e errorJSON) hint() string {
	if e.Error.Hint == nil {
		return ""
	}
	return *e.Error.Hint
}

// errorObject decodes stdout, the error object and nothing else.
func errorObject(stdout string) (errorJSON, error) {
	var got errorJSON
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		return got, err
	}
	if dec.More() {
		return got, errors.New("stdout holds more than the error object")
	}
	return got, nil
}

// checkHint fails tb unless the error object on stdout (r) holds exactly
// message and hint (hint "": none, and no hint field).
func checkHint(tb testing.TB, r result, message, hint string) {
	tb.Helper()
	got, err := errorObject(r.stdout)
	if err != nil {
		tb.Fatalf("stdout is no error object: %v\n%s", err, r.stdout)
	}
	if got.Error.Message != message || got.hint() != hint || (hint == "" && got.Error.Hint != nil) {
		tb.Errorf("error message %q, hint %v; want %q, %q", got.Error.Message, got.Error.Hint, message, hint)
	}
}

const (
	batchCSV  = "task,order,reason\nb-r1,A3001,too small\nb-r2,A3004,\nb-r3,A3006,broken\n"
	ordersCSV = "order_id,user,item,delivered_at,final_sale\nC1,demo-user,Kettle,2026-01-20T00:00:00Z,false\nC2,demo-user,Toaster,,true\n"
)

// runCase is one command line and what it must print.
type runCase struct {
	name string
	// files are written under $ROOT, then setup runs, each command to exit 0.
	files map[string]string
	setup [][]string
	args  []string
	code  int
	// golden names testdata/GOLDEN.golden, the masked stdout; without it
	// stdout must hold stdout (a failure's stdout is checked by checkFailure).
	golden string
	stdout string
	// stderr is empty for a command that succeeds; for one that fails, a
	// part of its one line after "assistant: ".
	stderr string
	// bug, when set, skips a case that fails because of a known bug.
	bug string
}

var (
	startR1 = []string{"start", "r1", "A3003", "--reason", "size"}
	startR2 = []string{"start", "r2", "A3004"}
)

func TestRun(t *testing.T) {
	for _, tc := range []runCase{
		// start, with and without a reason
		{name: "start_reason_json", args: startR1, golden: "start_reason_json"},
		{name: "start_reason_text", args: slices.Concat(startR1, []string{"--output", "text"}), golden: "start_reason_text"},
		{name: "start_no_reason_json", args: startR2, golden: "start_no_reason_json"},
		{name: "start_no_reason_text", args: slices.Concat(startR2, []string{"--output", "text"}), golden: "start_no_reason_text"},
		{name: "start_again_same_input", setup: [][]string{startR1}, args: startR1, golden: "start_reason_json"},
		{name: "start_again_other_input", setup: [][]string{startR1}, args: []string{"start", "r1", "A3004", "--reason", "size"},
			code: ExitConflict, stderr: "r1"},
		{name: "start_ineligible_order", args: []string{"start", "r5", "A3005", "--reason", "size"}, golden: "start_window_closed_json"},
		{name: "start_unknown_order", args: []string{"start", "r1", "NOPE", "--reason", "size"}, code: ExitNotFound, stderr: "NOPE"},
		{name: "start_other_users_order", args: []string{"start", "r1", "B4001", "--reason", "size"}, code: ExitNotFound, stderr: "B4001"},

		// show
		{name: "show_json", setup: [][]string{startR1}, args: []string{"show", "r1"}, golden: "start_reason_json"},
		{name: "show_text", setup: [][]string{startR1}, args: []string{"show", "r1", "--output", "text"}, golden: "start_reason_text"},
		{name: "show_text_other_user_flag", setup: [][]string{{"--user", "other-user", "start", "o1", "B4001", "--reason", "size"}},
			args: []string{"--user", "other-user", "show", "o1", "--output", "text"}, golden: "show_other_user_text"},
		{name: "show_text_quotes_data_dir", args: []string{"--data", "$ROOT/my data", "start", "r1", "A3003", "--reason", "size", "--output", "text"},
			golden: "start_quoted_data_dir_text"},
		{name: "show_unknown_task", setup: [][]string{startR1}, args: []string{"show", "nosuch"}, code: ExitNotFound, stderr: "task nosuch: not found for user demo-user"},
		{name: "show_bad_task_id", setup: [][]string{startR1}, args: []string{"show", "a b"}, code: ExitUsage, stderr: `task id "a b"`},

		// resume: a reason, approve, cancel
		{name: "resume_reason", setup: [][]string{startR2}, args: []string{"resume", "r2", "--reason", "broken"}, golden: "resume_reason_json"},
		{name: "resume_blank_reason_asks_again", setup: [][]string{startR2}, args: []string{"resume", "r2", "--reason", " ", "--output", "text"},
			golden: "resume_blank_reason_text"},
		{name: "resume_approve", setup: [][]string{startR1}, args: []string{"resume", "r1", "--action", "approve", "--draft", "$DRAFT"}, golden: "resume_approve_json"},
		{name: "resume_approve_text", setup: [][]string{startR1}, args: []string{"resume", "r1", "--action", "approve", "--output", "text"}, golden: "resume_approve_text"},
		{name: "resume_approve_again_reuses", setup: [][]string{startR1, {"resume", "r1", "--action", "approve"}},
			args: []string{"resume", "r1", "--action", "approve", "--output", "text"}, golden: "resume_approve_again_text"},
		{name: "resume_cancel", setup: [][]string{startR1}, args: []string{"resume", "r1", "--action", "cancel"}, golden: "resume_cancel_json"},
		{name: "resume_wrong_kind", setup: [][]string{startR1}, args: []string{"resume", "r1", "--reason", "size"}, code: ExitUsage, stderr: "is waiting for approval, not a reason"},
		{name: "resume_wrong_draft", setup: [][]string{startR1}, args: []string{"resume", "r1", "--action", "approve", "--draft", "d_wrong"}, code: ExitUsage, stderr: "d_wrong"},
		// docs/cli.md: an answer to a task that has ended changes nothing:
		// the answer it recorded again prints the outcome, any other is
		// exit 3 saying how it ended, a --draft not its own is exit 2.
		{name: "resume_after_cancel_cancel", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}},
			args: []string{"resume", "r1", "--action", "cancel"}, golden: "resume_cancel_json"},
		{name: "resume_after_cancel_approve", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}},
			args: []string{"resume", "r1", "--action", "approve"}, code: ExitConflict, stderr: "task r1 ended as cancelled; the answer approve changes nothing"},
		{name: "resume_after_cancel_approve_wrong_draft", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}},
			args: []string{"resume", "r1", "--action", "approve", "--draft", "d_wrong"}, code: ExitUsage, stderr: "--draft d_wrong is not the draft of task r1"},

		// list
		{name: "list_json", setup: [][]string{startR1, startR2}, args: []string{"list"}, golden: "list_json"},
		{name: "list_text", setup: [][]string{startR1, startR2}, args: []string{"list", "--output", "text"}, golden: "list_text"},
		{name: "list_status_done", setup: [][]string{startR1, startR2, {"resume", "r1", "--action", "approve"}},
			args: []string{"list", "--status", "done", "--output", "text"}, golden: "list_status_done_text"},
		{name: "list_status_none", setup: [][]string{startR1}, args: []string{"list", "--status", "failed"}, golden: "list_empty_json"},
		{name: "list_other_user", setup: [][]string{startR1}, args: []string{"--user", "other-user", "list"}, golden: "list_empty_json"},
		{name: "list_status_comma_and_repeated", setup: [][]string{startR1, startR2, {"resume", "r1", "--action", "approve"}},
			args: []string{"list", "--status", "done,failed", "--status", "expired", "--output", "text"}, golden: "list_status_done_text"},
		{name: "list_limit", setup: [][]string{startR1, startR2}, args: []string{"list", "--limit", "1", "--output", "text"}, golden: "list_limit_text"},
		{name: "list_unknown_status_names_them", setup: [][]string{startR1}, args: []string{"list", "--status", "waiting,sleeping"}, code: ExitUsage,
			stderr: "--status must be one of running, waiting, expired, interrupted, done, cancelled, failed"},
		{name: "list_unknown_batch", setup: [][]string{startR1}, args: []string{"list", "--batch", "b9"}, code: ExitNotFound, stderr: "b9"},

		// history
		{name: "history_json", setup: [][]string{startR1, {"resume", "r1", "--action", "approve"}}, args: []string{"history", "r1"}, golden: "history_json"},
		{name: "history_text", setup: [][]string{startR1, {"resume", "r1", "--action", "approve"}}, args: []string{"history", "r1", "--output", "text"}, golden: "history_text"},

		// stop, recover
		{name: "stop_waiting_task", setup: [][]string{startR1}, args: []string{"stop", "r1"}, code: ExitConflict, stderr: "stop r1: it is not running: it waits for a person's answer"},
		{name: "stop_done_task_text", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}}, args: []string{"stop", "r1", "--output", "text"},
			code: ExitConflict, stderr: "stop r1: it already ended (cancelled); there is nothing to stop"},
		{name: "recover_nothing_json", setup: [][]string{startR1}, args: []string{"recover"}, golden: "recover_nothing_json"},
		{name: "recover_nothing_text", setup: [][]string{startR1}, args: []string{"recover", "--output", "text"}, golden: "recover_nothing_text"},

		// batch
		{name: "batch_json", files: map[string]string{"rows.csv": batchCSV}, args: []string{"batch", "b1", "$ROOT/rows.csv"}, golden: "batch_json"},
		{name: "batch_text", files: map[string]string{"rows.csv": batchCSV}, args: []string{"batch", "b1", "$ROOT/rows.csv", "--output", "text", "--chunk", "2"}, golden: "batch_text"},
		{name: "batch_show", files: map[string]string{"rows.csv": batchCSV}, setup: [][]string{{"batch", "b1", "$ROOT/rows.csv"}},
			args: []string{"show", "b1"}, golden: "batch_json"},
		{name: "batch_rows_listed", files: map[string]string{"rows.csv": batchCSV}, setup: [][]string{{"batch", "b1", "$ROOT/rows.csv"}},
			args: []string{"list", "--output", "text"}, golden: "batch_list_text"},
		{name: "batch_bad_file", files: map[string]string{"rows.csv": "task,order\nt1,A3001\n"}, args: []string{"batch", "b1", "$ROOT/rows.csv"},
			code: ExitUsage, stderr: "batch file: line 1: missing column reason"},
		{name: "batch_missing_file", args: []string{"batch", "b1", "$ROOT/nosuch.csv"}, code: ExitUsage, stderr: "batch file"},
		{name: "batch_answer_refused", files: map[string]string{"rows.csv": batchCSV}, setup: [][]string{{"batch", "b1", "$ROOT/rows.csv"}},
			args: []string{"resume", "b1", "--action", "approve"}, code: ExitUsage, stderr: "b1 is a batch; it asks no question"},

		// orders
		{name: "orders_import_json", files: map[string]string{"shop.csv": ordersCSV}, args: []string{"orders", "import", "$ROOT/shop.csv"}, golden: "orders_import_json"},
		{name: "orders_import_twice_text", files: map[string]string{"shop.csv": ordersCSV}, setup: [][]string{{"orders", "import", "$ROOT/shop.csv"}},
			args: []string{"orders", "import", "$ROOT/shop.csv", "--output", "text"}, golden: "orders_import_twice_text"},
		{name: "orders_list_json", setup: [][]string{startR1}, args: []string{"orders", "list"}, golden: "orders_list_json"},
		{name: "orders_list_text", files: map[string]string{"shop.csv": ordersCSV}, setup: [][]string{{"orders", "import", "$ROOT/shop.csv"}},
			args: []string{"orders", "list", "--output", "text"}, golden: "orders_list_text"},
		{name: "orders_list_other_user", setup: [][]string{startR1}, args: []string{"--user", "other-user", "orders", "list", "--output", "text"}, golden: "orders_list_other_user_text"},
		{name: "orders_import_bad_file", files: map[string]string{"shop.csv": "order_id,user,item,delivered_at,final_sale\nZ1,demo-user,Kettle,yesterday,false\n"},
			args: []string{"orders", "import", "$ROOT/shop.csv"}, code: ExitUsage, stderr: "line 2"},

		// prune
		{name: "prune_nothing_text", setup: [][]string{startR1}, args: []string{"prune", "--finished-before", "720h", "--output", "text"}, golden: "prune_nothing_text"},
		{name: "prune_finished_text", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}},
			args: []string{"prune", "--finished-before", "1ns", "--keep", "2", "--output", "text"}, golden: "prune_finished_text"},
		{name: "prune_dry_run_text", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}},
			args: []string{"prune", "--finished-before", "1ns", "--dry-run", "--output", "text"}, golden: "prune_dry_run_text"},
		{name: "prune_finished_json", setup: [][]string{startR1, startR2, {"resume", "r1", "--action", "approve"}},
			args: []string{"prune", "--finished-before", "1ns"}, golden: "prune_finished_json"},

		// variants
		{name: "variants_static_json", args: []string{"variants", "static"}, golden: "variants_static_json"},
		{name: "variants_parallel_json", args: []string{"variants", "parallel"}, golden: "variants_parallel_json"},
		{name: "variants_static_text", args: []string{"variants", "static", "--output", "text"}, golden: "variants_static_text"},
		{name: "variants_parallel_text", args: []string{"variants", "parallel", "--output", "text"}, golden: "variants_parallel_text"},
		{name: "variants_unknown", args: []string{"variants", "dynamic"}, code: ExitUsage, stderr: `not "dynamic"`},

		// another user's task is reported exactly like an unknown one
		{name: "other_user_show", setup: [][]string{startR1}, args: []string{"--user", "other-user", "show", "r1"}, code: ExitNotFound, stderr: "task r1: not found for user other-user"},
		{name: "other_user_show_text", setup: [][]string{startR1}, args: []string{"--user", "other-user", "show", "r1", "--output", "text"}, code: ExitNotFound, stderr: "task r1: not found for user other-user"},
		{name: "other_user_resume", setup: [][]string{startR1}, args: []string{"--user", "other-user", "resume", "r1", "--action", "approve"}, code: ExitNotFound, stderr: "task r1: not found for user other-user"},
		{name: "other_user_history", setup: [][]string{startR1}, args: []string{"--user", "other-user", "history", "r1"}, code: ExitNotFound, stderr: "task r1: not found for user other-user"},
		{name: "other_user_stop", setup: [][]string{startR1}, args: []string{"--user", "other-user", "stop", "r1"}, code: ExitNotFound, stderr: "task r1: not found for user other-user"},
		{name: "other_user_start_same_task", setup: [][]string{startR1}, args: []string{"--user", "other-user", "start", "r1", "B4001", "--reason", "size"}, code: ExitConflict, stderr: "r1"},

		// usage: unknown command, wrong argument count, bad output
		{name: "unknown_command", args: []string{"frobnicate"}, code: ExitUsage, stderr: `unknown command "frobnicate"`},
		{name: "unknown_command_text", args: []string{"frobnicate", "--output", "text"}, code: ExitUsage, stderr: `unknown command "frobnicate"`,
			bug: "bug: cmd/root.go:200 an unknown command is found before the flags are parsed, so fail sees no --output and prints the JSON error object although --output text was given"},
		{name: "unknown_flag", args: []string{"show", "r1", "--frob"}, code: ExitUsage, stderr: "--frob"},
		{name: "start_one_arg", args: []string{"start", "r1"}, code: ExitUsage, stderr: "start needs TASK and ORDER (got 1 argument)"},
		{name: "start_three_args", args: []string{"start", "r1", "A3003", "A3004"}, code: ExitUsage, stderr: "start needs TASK and ORDER (got 3 arguments)"},
		{name: "show_no_arg", args: []string{"show"}, code: ExitUsage, stderr: "show needs TASK (got 0 arguments)"},
		{name: "resume_two_args", args: []string{"resume", "r1", "r2"}, code: ExitUsage, stderr: "resume needs TASK"},
		{name: "history_no_arg", args: []string{"history"}, code: ExitUsage, stderr: "history needs TASK"},
		{name: "stop_no_arg", args: []string{"stop"}, code: ExitUsage, stderr: "stop needs TASK"},
		{name: "list_an_arg", args: []string{"list", "x"}, code: ExitUsage, stderr: "list takes no arguments"},
		{name: "recover_an_arg", args: []string{"recover", "x"}, code: ExitUsage, stderr: "recover takes no arguments"},
		{name: "batch_one_arg", args: []string{"batch", "b1"}, code: ExitUsage, stderr: "batch needs BATCH and FILE"},
		{name: "orders_import_no_arg", args: []string{"orders", "import"}, code: ExitUsage, stderr: "orders import needs FILE"},
		{name: "prune_an_arg", args: []string{"prune", "x", "--finished-before", "1h"}, code: ExitUsage, stderr: "prune takes no arguments"},
		{name: "variants_no_arg", args: []string{"variants"}, code: ExitUsage, stderr: "variants needs static or parallel"},
		{name: "output_yaml", setup: [][]string{startR1}, args: []string{"--output", "yaml", "show", "r1"}, code: ExitUsage, stderr: `--output must be json or text, not "yaml"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bug != "" {
				t.Skip(tc.bug)
			}
			t.Parallel()
			c := newCLI(t)
			for name, content := range tc.files {
				c.write(name, content)
			}
			for _, args := range tc.setup {
				c.mustRun(args...)
			}
			before := c.hashes()
			r := c.run(context.Background(), tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q; stdout:\n%s", r.code, tc.code, r.stderr, r.stdout)
			}
			if tc.code == ExitOK {
				if r.stderr != "" {
					t.Errorf("stderr = %q, want nothing", r.stderr)
				}
			} else {
				checkFailure(t, tc.args, r, tc.stderr)
				// A refused command changes no store file (docs/cli.md
				// "Exit codes"); usage errors create none either. A
				// start of an unknown order may create the data dir
				// with the teaching orders, as any start does.
				if after := c.hashes(); (len(before) > 0 || tc.code == ExitUsage) && !equalHashes(before, after) {
					t.Errorf("store files changed by a refused command:\nbefore %v\nafter  %v", before, after)
				}
			}
			switch {
			case tc.golden != "":
				checkGolden(t, tc.golden, c.mask(r.stdout))
			case tc.code == ExitOK && !strings.Contains(r.stdout, tc.stdout):
				t.Errorf("stdout does not hold %q:\n%s", tc.stdout, r.stdout)
			}
		})
	}
}

func equalHashes(a, b map[string]string) bool { return maps.Equal(a, b) }
