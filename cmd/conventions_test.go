package cmd

// The conventions (docs/cli.md "Conventions",
// docs/json.md): --json FIELDS, schema_version, null for none, times to the
// millisecond, shell completion, one-line errors with pasteable hints, and
// task ids that do not start with '-'.

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// keysOf returns the top-level keys of a JSON object in their order.
func keysOf(tb testing.TB, out string) []string {
	tb.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		tb.Fatalf("not a JSON object: %v\n%s", err, out)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			tb.Fatalf("%v\n%s", err, out)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			tb.Fatalf("%v\n%s", err, out)
		}
	}
	return keys
}

func TestConventionsJSONFields(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup [][]string
		args  []string
		keys  []string // the top-level keys printed, in order
		items []string // the keys of each element of the list, for list-shaped output
	}{
		{name: "ObjectInStructOrder", setup: [][]string{startR1}, args: []string{"show", "r1", "--json", "stage,status"},
			keys: []string{"schema_version", "status", "stage"}},
		{name: "ImpliesJSON", setup: [][]string{startR1}, args: []string{"show", "r1", "--json", "task"},
			keys: []string{"schema_version", "task"}},
		{name: "StartSelects", args: slices.Concat(startR1, []string{"--json", "draft,status"}),
			keys: []string{"schema_version", "status", "draft"}},
		{name: "AbsentFieldIsNull", setup: [][]string{startR1}, args: []string{"show", "r1", "--json", "holder,result"},
			keys: []string{"schema_version", "result", "holder"}},
		{name: "ListSelectsInEachTask", setup: [][]string{startR1, startR2}, args: []string{"list", "--json", "status,task"},
			keys: []string{"schema_version", "tasks"}, items: []string{"task", "status"}},
		// --json selects top-level fields (docs/json.md); a list command's top
		// level is its list, printed whole.
		{name: "ListTopLevel", setup: [][]string{startR1}, args: []string{"list", "--json", "tasks"},
			keys: []string{"schema_version", "tasks"}, items: []string{"task", "order", "status", "stage", "created_at", "updated_at", "owner", "holder_alive"}},
		{name: "RecoverTopLevel", args: []string{"recover", "--json", "recovered"},
			keys: []string{"schema_version", "recovered"}},
		{name: "OrdersListTopLevel", setup: [][]string{startR1}, args: []string{"orders", "list", "--json", "orders,schema_version"},
			keys: []string{"schema_version", "orders"}},
		{name: "ListSchemaVersionBesideElementFields", setup: [][]string{startR1}, args: []string{"list", "--json", "task,schema_version"},
			keys: []string{"schema_version", "tasks"}, items: []string{"task"}},
		{name: "OrdersListSelectsInEachOrder", setup: [][]string{startR1}, args: []string{"orders", "list", "--json", "order_id"},
			keys: []string{"schema_version", "orders"}, items: []string{"order_id"}},
		{name: "HistoryTopLevel", setup: [][]string{startR1}, args: []string{"history", "r1", "--json", "steps"},
			keys: []string{"schema_version", "steps"}},
		{name: "VariantsOneLine", args: []string{"variants", "static", "--json", "next,variant"},
			keys: []string{"schema_version", "variant", "next"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			for _, s := range tc.setup {
				c.mustRun(s...)
			}
			out := c.mustRun(tc.args...).stdout
			if got := keysOf(t, out); !slices.Equal(got, tc.keys) {
				t.Errorf("keys = %v, want %v\n%s", got, tc.keys, out)
			}
			if tc.items == nil {
				return
			}
			var v map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatal(err)
			}
			var list []json.RawMessage
			if err := json.Unmarshal(v[tc.keys[1]], &list); err != nil {
				t.Fatal(err)
			}
			if len(list) == 0 {
				t.Fatalf("empty list:\n%s", out)
			}
			for _, it := range list {
				if got := keysOf(t, string(it)); !slices.Equal(got, tc.items) {
					t.Errorf("keys of an element = %v, want %v", got, tc.items)
				}
			}
		})
	}
}

func TestConventionsJSONFieldsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  [][]string
		args   []string
		stderr string
	}{
		// Checked before the command runs: nothing is created or changed.
		{name: "UnknownFieldOfStart", args: slices.Concat(startR1, []string{"--json", "status,bogus"}),
			stderr: `--json: unknown field "bogus"; available: schema_version, task, user, order, status, stage`},
		{name: "UnknownFieldOfList", args: []string{"list", "--json", "tasks,status"},
			stderr: `--json: unknown field of each of tasks "tasks"; available: task, order, status, stage, created_at, updated_at, owner, holder_alive (or the top-level fields: schema_version, tasks)`},
		{name: "UnknownFieldOfResume", setup: [][]string{startR1}, args: []string{"resume", "r1", "--action", "approve", "--json", "nope"},
			stderr: `unknown field "nope"`},
		{name: "NoField", setup: [][]string{startR1}, args: []string{"show", "r1", "--json", ","},
			stderr: "--json needs comma-separated field names; available: schema_version, task"},
		{name: "WithOutputText", setup: [][]string{startR1}, args: []string{"show", "r1", "--json", "status", "--output", "text"},
			stderr: "--json prints JSON; it does not go with --output text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			for _, s := range tc.setup {
				c.mustRun(s...)
			}
			before := c.hashes()
			r := c.run(context.Background(), tc.args...)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, ExitUsage, r.stderr)
			}
			checkFailure(t, tc.args, r, tc.stderr)
			if after := c.hashes(); !maps.Equal(before, after) {
				t.Errorf("the data dir changed: %v → %v", before, after)
			}
		})
	}
}

// TestConventionsSchemaVersion: every command's JSON, errors included,
// has a top-level schema_version 1, first.
func TestConventionsSchemaVersion(t *testing.T) {
	c := newCLI(t)
	rows := c.write("rows.csv", "task,order,reason\nb-r1,A3001,size\n")
	orders := c.write("orders.csv", "order_id,user,item,delivered_at,final_sale\nZ1,demo-user,mug,2026-11-01T00:00:00Z,false\n")
	for _, args := range [][]string{
		startR1,
		{"show", "r1"},
		{"list"},
		{"history", "r1"},
		{"resume", "r1", "--action", "approve"},
		{"batch", "b1", rows},
		{"recover"},
		{"prune", "--finished-before", "1h"},
		{"orders", "import", orders},
		{"orders", "list"},
		{"verify"},
		{"backup", filepath.Join(c.root, "backup")},
		{"variants", "static"},
		{"variants", "parallel"},
		{"show", "nosuch"}, // an error
	} {
		r := c.run(context.Background(), args...)
		var v struct {
			SchemaVersion *int `json:"schema_version"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.SchemaVersion == nil || *v.SchemaVersion != 1 {
			t.Errorf("%v: schema_version is not 1 (%v):\n%s", args, err, r.stdout)
			continue
		}
		if keys := keysOf(t, r.stdout); keys[0] != "schema_version" {
			t.Errorf("%v: schema_version is not the first field: %v", args, keys)
		}
	}
}

// emptyString is a JSON string value "" (a key may be "").
var emptyString = regexp.MustCompile(`(:\s*""|\[\s*""|,\s*"")`)

// TestConventionsNoneIsNull: no JSON output says "" or the zero time for
// none; every documented field is there, null when it has no value.
func TestConventionsNoneIsNull(t *testing.T) {
	c := newCLI(t)
	rows := c.write("rows.csv", "task,order,reason\nb-r1,A3001,size\nb-r2,A3007,size\n")
	c.mustRun(startR1...)
	c.mustRun(startR2...)
	c.mustRun("resume", "r1", "--action", "approve")
	c.mustRun("batch", "b1", rows)
	for _, args := range [][]string{
		{"show", "r1"}, {"show", "r2"}, {"show", "b1"}, {"list"}, {"history", "r1"}, {"history", "b1"},
		{"orders", "list"}, {"recover"}, {"prune", "--finished-before", "1ms"}, {"verify"},
	} {
		out := c.mustRun(args...).stdout
		if m := emptyString.FindString(out); m != "" {
			t.Errorf("%v: %q in the JSON; none is null:\n%s", args, m, out)
		}
		if strings.Contains(out, "0001-01-01") {
			t.Errorf("%v: a zero time in the JSON; none is null:\n%s", args, out)
		}
	}
	// A batch has no order; a finished task no holder: both null, not
	// left out.
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(c.mustRun("show", "b1").stdout), &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"order", "holder", "recovery", "kind"} {
		if got, ok := v[k]; !ok || string(got) != "null" {
			t.Errorf("batch %s = %s (present %v), want null", k, got, ok)
		}
	}
}

// timeWithFraction is a JSON time and the digits of its fraction.
var timeWithFraction = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.(\d+)Z"`)

// TestConventionsTimesOfOlderData: times an older build stored with
// nanoseconds (the v1 fixture) print to the millisecond.
func TestConventionsTimesOfOlderData(t *testing.T) {
	c := newCLI(t)
	if err := os.MkdirAll(c.data, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range storeFiles {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "v1", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.data, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"show", "return-25"}, {"list"}, {"history", "return-25", "--json", "checkpoints"}} {
		out := c.mustRun(args...).stdout
		if args[0] == "history" {
			// Only the times of history's own fields: "values" and
			// "changes" are the state as stored.
			var h struct {
				Checkpoints []struct {
					CreatedAt string `json:"created_at"`
				} `json:"checkpoints"`
			}
			if err := json.Unmarshal([]byte(out), &h); err != nil {
				t.Fatal(err)
			}
			out = ""
			for _, cp := range h.Checkpoints {
				out += `"` + cp.CreatedAt + `" `
			}
		}
		times := timeWithFraction.FindAllStringSubmatch(out, -1)
		if len(times) == 0 && args[0] != "show" { // the fixture's draft expires at a whole second
			t.Errorf("%v: no time with a fraction: the fixture's times carry nanoseconds:\n%s", args, out)
		}
		for _, m := range times {
			if len(m[1]) > 3 {
				t.Errorf("%v: time %s has more than millisecond precision", args, m[0])
			}
		}
	}
}

// TestConventionsCleanErrorLines: cobra's typo suggestion and other
// multi-line texts come out as one line; a hint to type carries the
// global flags that differ from their defaults.
func TestConventionsCleanErrorLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  [][]string
		args   []string
		code   int
		stderr string // the whole line after "assistant: "
		part   string // or a part of it
		// message and hint, when set, are the error object's, apart.
		message, hint string
	}{
		{name: "Typo", args: []string{"shw"}, code: ExitUsage, stderr: `unknown command "shw"; did you mean "show"?`},
		{name: "TypoOfTwo", args: []string{"stp"}, code: ExitUsage, part: `unknown command "stp"; did you mean "s`},
		{name: "NoLikeCommand", args: []string{"frobnicate"}, code: ExitUsage,
			stderr: "unknown command \"frobnicate\"; run `assistant --help` for the commands"},
		{name: "HintCarriesData", setup: [][]string{{"batch", "b1", "$ROOT/rows.csv"}}, args: []string{"resume", "b1", "--action", "approve"},
			code: ExitUsage, stderr: "b1 is a batch; it asks no question; run `assistant --data $DATA resume b1` to continue it",
			message: "b1 is a batch; it asks no question", hint: "run `assistant --data $DATA resume b1` to continue it"},
		{name: "HintCarriesUser", setup: [][]string{{"--user", "ann", "batch", "b1", "$ROOT/rows.csv"}}, args: []string{"--user", "ann", "resume", "b1", "--action", "approve"},
			code: ExitUsage, part: "it asks no question; run `assistant --data $DATA --user ann resume b1` to continue it",
			message: "b1 is a batch; it asks no question", hint: "run `assistant --data $DATA --user ann resume b1` to continue it"},
		{name: "StopWaiting", setup: [][]string{startR1}, args: []string{"stop", "r1"}, code: ExitConflict,
			stderr:  "stop r1: it is not running: it waits for a person's answer, and nothing runs until one comes; see the question with `assistant --data $DATA show r1`",
			message: "stop r1: it is not running: it waits for a person's answer, and nothing runs until one comes", hint: "see the question with `assistant --data $DATA show r1`"},
		{name: "StopDone", setup: [][]string{startR1, {"resume", "r1", "--action", "cancel"}}, args: []string{"stop", "r1"}, code: ExitConflict,
			stderr: "stop r1: it already ended (cancelled); there is nothing to stop"},
		{name: "TaskIDWithDash", args: []string{"start", "--reason", "size", "--", "-r1", "A3003"}, code: ExitUsage,
			part: `task id "-r1" must not start with '-'`},
		{name: "BatchRowWithDash", args: []string{"batch", "b1", "$ROOT/dash.csv"}, code: ExitUsage,
			part: `task id "-r1" must not start with '-'`},
		{name: "ShowDash", args: []string{"show", "--", "-r1"}, code: ExitUsage, part: `must not start with '-'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			c.write("rows.csv", "task,order,reason\nb-r1,A3001,size\n")
			c.write("dash.csv", "task,order,reason\n-r1,A3001,size\n")
			for _, s := range tc.setup {
				c.mustRun(s...)
			}
			before := c.hashes()
			r := c.run(context.Background(), tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			want := strings.ReplaceAll(tc.stderr+tc.part, "$DATA", c.data)
			if tc.stderr != "" && r.stderr != "assistant: "+want+"\n" {
				t.Errorf("stderr = %q\nwant     %q", r.stderr, "assistant: "+want+"\n")
			}
			checkFailure(t, tc.args, r, want)
			if tc.message != "" {
				checkHint(t, r, tc.message, strings.ReplaceAll(tc.hint, "$DATA", c.data))
			}
			if after := c.hashes(); !maps.Equal(before, after) {
				t.Errorf("the data dir changed")
			}
		})
	}
}

// TestConventionsCompletion: `assistant __complete …` (what the shell
// scripts of `assistant completion` call) offers task ids, actions,
// outputs and statuses, and creates nothing.
func TestConventionsCompletion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup [][]string
		args  []string
		want  []string // the offered values, without descriptions
	}{
		{name: "TaskIDs", setup: [][]string{startR1, startR2, {"--user", "other-user", "start", "a1", "B4001", "--reason", "x"}},
			args: []string{"show", ""}, want: []string{"r1", "r2"}},
		{name: "TaskIDsByPrefix", setup: [][]string{startR1, {"start", "x9", "A3004"}}, args: []string{"resume", "x"}, want: []string{"x9"}},
		{name: "TaskIDsOfUser", setup: [][]string{startR1, {"--user", "other-user", "start", "a1", "B4001", "--reason", "x"}},
			args: []string{"--user", "other-user", "history", ""}, want: []string{"a1"}},
		{name: "NoDataDir", args: []string{"show", ""}, want: nil},
		{name: "SecondArgument", setup: [][]string{startR1}, args: []string{"show", "r1", ""}, want: nil},
		{name: "Action", args: []string{"resume", "r1", "--action", ""}, want: []string{"approve", "cancel", "edit", "revise"}},
		{name: "Output", args: []string{"list", "--output", ""}, want: []string{"json", "text"}},
		{name: "Status", args: []string{"list", "--status", ""}, want: []string{"running", "waiting", "expired", "interrupted", "done", "cancelled", "failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			for _, s := range tc.setup {
				c.mustRun(s...)
			}
			r := c.run(context.Background(), slices.Concat([]string{"__complete"}, tc.args)...)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if line == "" || strings.HasPrefix(line, ":") {
					continue // the directive
				}
				v, _, _ := strings.Cut(line, "\t")
				got = append(got, v)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("offered %q, want %q\n%s", got, tc.want, r.stdout)
			}
			if len(tc.setup) == 0 {
				if _, err := os.Stat(c.data); !os.IsNotExist(err) {
					t.Errorf("completion made the data dir (%v)", err)
				}
			}
		})
	}
}

// TestConventionsVersion: the text --version prints from the build
// information, with and without a VCS stamp.
func TestConventionsVersion(t *testing.T) {
	stamp := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "abc1234def5678901234"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{name: "Devel", bi: &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: "(devel)"}, Settings: stamp},
			ok: true, want: "assistant (devel) rev abc1234def56 2026-11-30T10:00:00Z go1.26"},
		{name: "Modified", bi: &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: "v1.2.0"}, Settings: append(stamp, debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			ok: true, want: "assistant v1.2.0 rev abc1234def56 2026-11-30T10:00:00Z (modified) go1.26"},
		{name: "NoStamp", bi: &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Version: "(devel)"}},
			ok: true, want: "assistant (devel) (no VCS stamp: built with go run, with -buildvcs=false, outside a git checkout or in a linked git worktree, which go does not stamp) go1.26"},
		{name: "NoBuildInfo", ok: false, want: "assistant (unknown version: no build information)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionString(tc.bi, tc.ok); got != tc.want {
				t.Errorf("versionString = %q, want %q", got, tc.want)
			}
		})
	}
	c := newCLI(t)
	r := c.mustRun("--version")
	if !strings.HasPrefix(r.stdout, "assistant ") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("--version printed %q", r.stdout)
	}
	if _, err := os.Stat(c.data); !os.IsNotExist(err) {
		t.Errorf("--version made the data dir (%v)", err)
	}
	// A bad global flag beside --version is refused as anywhere else.
	for _, args := range [][]string{{"--version", "--json", "bogus"}, {"--version", "--json", "version"}, {"--version", "--output", "yaml"}} {
		r := c.run(context.Background(), args...)
		if r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d; stdout %q", args, r.code, ExitUsage, r.stdout)
		}
	}
}

// TestConventionsEnvironment: ASSISTANT_DATA and ASSISTANT_USER stand in
// for --data and --user; the flags win; an empty variable counts as unset.
func TestConventionsEnvironment(t *testing.T) {
	c := newCLI(t)
	c.mustRun(startR1...)
	c.mustRun("--user", "other-user", "start", "a1", "B4001", "--reason", "x")
	run := func(env map[string]string, args ...string) result {
		t.Helper()
		for k, v := range env {
			t.Setenv(k, v)
		}
		var stdout, stderr strings.Builder
		code := Run(context.Background(), args, &stdout, &stderr, c.seed)
		return result{code, stdout.String(), stderr.String()}
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // the task list shows, by id
	}{
		{name: "Data", env: map[string]string{EnvData: c.data, EnvUser: ""}, args: []string{"list", "--json", "task"}, want: "r1"},
		{name: "DataAndUser", env: map[string]string{EnvData: c.data, EnvUser: "other-user"}, args: []string{"list", "--json", "task"}, want: "a1"},
		{name: "FlagsWin", env: map[string]string{EnvData: filepath.Join(c.root, "elsewhere"), EnvUser: "bob"},
			args: []string{"--data", c.data, "--user", "other-user", "list", "--json", "task"}, want: "a1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(tc.env, tc.args...)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var v struct{ Tasks []struct{ Task string } }
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Tasks) != 1 || v.Tasks[0].Task != tc.want {
				t.Errorf("list = %s, want the one task %s", r.stdout, tc.want)
			}
		})
	}
}

// TestBlankDataEnvRefused: ASSISTANT_DATA set to blanks is exit 2 with one
// line and makes no directory, as --data " " is; --data or --store given
// sets it aside; set but empty it counts as unset.
func TestBlankDataEnvRefused(t *testing.T) {
	seed, err := os.ReadFile(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv(EnvData, " ")
	t.Setenv(EnvStore, "")
	var stdout, stderr strings.Builder
	code := Run(context.Background(), []string{"start", "e1", "A3001", "--reason", "x"}, &stdout, &stderr, seed)
	if code != ExitUsage || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), EnvData+" must not be blank") {
		t.Fatalf("exit %d, stderr %q; want %d and one line saying %s must not be blank", code, stderr.String(), ExitUsage, EnvData)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("the command made %v (%v), want nothing", entries, err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := Run(context.Background(), []string{"--data", filepath.Join(dir, "d"), "start", "e1", "A3001", "--reason", "x"}, &stdout, &stderr, seed); code != ExitOK {
		t.Fatalf("--data beside a blank %s: exit %d, %s", EnvData, code, stderr.String())
	}
	// A command that uses no data dir does not care.
	stdout.Reset()
	stderr.Reset()
	if code := Run(context.Background(), []string{"completion", "bash"}, &stdout, &stderr, seed); code != ExitOK {
		t.Fatalf("completion bash beside a blank %s: exit %d, %s", EnvData, code, stderr.String())
	}
}

// TestConventionsEveryCommandHasAShape: each command is in jsonShapes (its
// --json fields are checked before it runs) or in noJSON.
func TestConventionsEveryCommandHasAShape(t *testing.T) {
	a := &app{}
	root := a.newRoot()
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), root.Name()))
		_, shaped := jsonShapes[path]
		if !shaped && !slices.Contains(noJSON, path) {
			t.Errorf("command %q is neither in jsonShapes nor in noJSON", path)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestConventionsGoldens: the JSON of verify, backup and an error, as
// docs/json.md documents it (goldens of the other commands are in TestRun).
func TestConventionsGoldens(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{name: "Verify", args: []string{"verify"}, golden: "verify_json"},
		{name: "Backup", args: []string{"backup", "$ROOT/backup"}, golden: "backup_json"},
		{name: "ErrorNotFound", args: []string{"show", "nosuch"}, code: ExitNotFound, golden: "error_not_found_json"},
		{name: "ErrorUsage", args: []string{"show", "r1", "--json", "bogus"}, code: ExitUsage, golden: "error_invalid_json"},
		{name: "Selected", args: []string{"show", "r1", "--json", "status,draft,task"}, golden: "show_selected_json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI(t)
			c.mustRun(startR1...)
			r := c.run(context.Background(), tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			// A file's schema version goes up with each migration; the
			// JSON's shape is what the golden holds.
			out := fileSchema.ReplaceAllString(c.mask(r.stdout), "${1}<N>")
			checkGolden(t, tc.golden, out)
		})
	}
}

// fileSchema is the schema version of a file in verify's report.
var fileSchema = regexp.MustCompile(`("exists": true,\s+"schema_version": )\d+`)
