package e2e

// Output (docs/cli.md "Text output", "Errors"; docs/json.md "Rules for
// every command"): text escapes what a terminal would act on, every hint
// pastes back as the arguments meant, --json FIELDS selects from the view
// printed, and every line on stderr is one line starting "assistant: ".

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rawTerminalChars are characters no text output may hold as they are:
// ESC, BEL, a C1 control, the right-to-left override, a bidi isolate, a
// zero-width space.
var rawTerminalChars = []string{"\x1b", "\a", "\u009b", "\u202e", "\u2066", "\u200b"}

// checkNoRaw fails when out holds one of rawTerminalChars.
func checkNoRaw(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range rawTerminalChars {
		if strings.Contains(out, c) {
			t.Errorf("%s holds a raw %q:\n%s", what, c, out)
		}
	}
}

// TestTextEscapesEverywhere: a reason and a revise comment with a bidi
// override, an isolate and a zero-width space (control characters are
// refused in them) are printed escaped by
// show, history, list and resume's card, and the JSON keeps them as given.
func TestTextEscapesEverywhere(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	reason := "bidi\u202eevil\u200b"
	comment := "fix\u2066 it\u202e"
	mustRun(t, dir, "start", "tb", "A3003", "--reason", reason)
	mustRun(t, dir, "resume", "tb", "--action", "revise", "--comment", comment)
	for _, args := range [][]string{
		{"show", "tb"},
		{"history", "tb"},
		{"list"},
		{"list", "--status", "waiting"},
		{"approvers", "grant", "alice"},
		{"approvers", "list"},
		{"resume", "tb", "--reason", reason},
		{"history", "tb"},
	} {
		out, stderr, code := run(t, dir, append(args, "--output", "text")...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		checkNoRaw(t, strings.Join(args, " "), out+stderr)
		if args[0] == "history" && !strings.Contains(out, `bidi\u202eevil`) {
			t.Errorf("history does not show the reason escaped:\n%s", out)
		}
	}
	if v := mustRun(t, dir, "show", "tb"); v["draft"].(map[string]any)["reason"] != reason {
		t.Errorf("JSON reason %q, want it as given %q", v["draft"].(map[string]any)["reason"], reason)
	}
	verifyClean(t, dir)
}

// TestHistoryEscapesAsShowDoes: a comment holding characters that print
// as nothing (the Arabic letter mark, a soft hyphen, the Mongolian vowel
// separator, a tag character) is printed escaped by history's text as
// show's card escapes it, never raw.
func TestHistoryEscapesAsShowDoes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ciBotOrders(t, dir)
	as(t, dir, "ci-bot", 0, "start", "h1", "C1", "--reason", "broken")
	comment := "fix\u061c it\u00ad now\u180e please\U000e0041"
	as(t, dir, "ci-bot", 0, "resume", "h1", "--action", "revise", "--comment", comment)
	for _, cmd := range [][]string{{"history", "h1"}, {"show", "h1"}} {
		out, _, code := run(t, dir, append([]string{"--user", "ci-bot", "--output", "text"}, cmd...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d", cmd, code)
		}
		for _, r := range []string{"\u061c", "\u00ad", "\u180e", "\U000e0041"} {
			if strings.Contains(out, r) {
				t.Errorf("%v prints %U raw:\n%s", cmd, []rune(r)[0], out)
			}
		}
		if !strings.Contains(out, `\u061c`) || !strings.Contains(out, `\U000e0041`) {
			t.Errorf("%v does not escape the comment as \\u061c … \\U000e0041:\n%s", cmd, out)
		}
	}
}

// hintCommand matches a command a message or card prints: in backquotes
// in a message, after Next:/or: on a card.
var hintCommand = regexp.MustCompile("`(assistant [^`]*)`|(?m)^(?:Next:|   or:) +(assistant .*?)(?:   \\(.*)?$")

// pastedArgs pastes cmdline (after "assistant ") into bash as the
// arguments of printf and returns them as bash passed them on.
func pastedArgs(t *testing.T, cmdline string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("no bash: %v", err)
	}
	c := exec.Command(bash, "-c", `printf '%s\0' `+strings.TrimPrefix(cmdline, "assistant "))
	c.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	c.Dir = t.TempDir()
	out, err := c.Output()
	if err != nil {
		t.Fatalf("bash -c printf %s: %v", cmdline, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestHintsPasteBack: task ids with shell syntax go through every hint
// path (a wrong draft, a wrong kind of answer, stop of a waiting task, a
// start conflict, the card) in a data dir whose path needs quoting too;
// each printed command, pasted into bash, gives back the data dir and the
// id exactly, and runs nothing.
func TestHintsPasteBack(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "da ta$(echo x)'q'")
	for _, id := range []string{"$(id)2", "a;b", "it's", "运动鞋-1", "x$HOME", `q"uote`, "back`tick`"} {
		mustRun(t, dir, "start", id, "A3003", "--reason", "x")
		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"resume", id, "--action", "approve", "--draft", "bad"}, 2},
			{[]string{"resume", id, "--reason", "r"}, 2},
			{[]string{"stop", id}, 3},
			{[]string{"start", id, "A3001", "--reason", "y"}, 3},
			{[]string{"show", id, "--output", "text"}, 0},
		} {
			out, stderr, code := run(t, dir, tc.args...)
			if code != tc.code {
				t.Fatalf("%q: exit %d, want %d: %s", tc.args, code, tc.code, stderr)
			}
			text := stderr
			if code == 0 {
				text = out
			}
			hints := hintCommand.FindAllStringSubmatch(text, -1)
			if len(hints) == 0 {
				t.Fatalf("%q printed no command to paste:\n%s", tc.args, text)
			}
			for _, h := range hints {
				cmdline := h[1] + h[2]
				// A reason or comment is the person's to write: the line
				// up to its placeholder pastes (docs/cli.md "Text output").
				for _, placeholder := range []string{" --reason <reason>", " --comment <comment>"} {
					cmdline, _, _ = strings.Cut(cmdline, placeholder)
				}
				got := pastedArgs(t, cmdline)
				if len(got) < 4 || got[0] != "--data" || got[1] != dir || got[3] != id {
					t.Errorf("%q printed %s, which pastes as %q; want --data %q CMD %q …", tc.args, cmdline, got, dir, id)
				}
			}
		}
	}
	verifyClean(t, dir)
}

// TestNoRawInputOnStderr: input echoed in an error (a --draft, a data dir
// path) is escaped on stderr, the line kept one line.
func TestNoRawInputOnStderr(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, dir, "start", "r1", "A3003", "--reason", "x")
	for _, args := range [][]string{
		{"resume", "r1", "--action", "approve", "--draft", "bad\x1b[31m\u202e"},
		{"--data", dir + "\x1b]0;x\a\n", "show", "r1"},
		{"show", "r1", "--json", "bogus\x1b[2J"},
	} {
		_, stderr, code := run(t, dir, args...)
		if code == 0 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want a failure of one line", args, code, stderr)
		}
		checkNoRaw(t, "stderr", stderr)
	}
}

// TestUnknownSubcommandOfGroup: a mistyped subcommand of a command group
// is exit 2 with one line saying what was meant; the JSON error too.
func TestUnknownSubcommandOfGroup(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct{ args, line string }{
		{"orders lst", `assistant: unknown command "lst" for "assistant orders"; did you mean "list"?`},
		{"approvers lst", `assistant: unknown command "lst" for "assistant approvers"; did you mean "list"?`},
		{"approvers grnt alice", `assistant: unknown command "grnt" for "assistant approvers"; did you mean "grant"?`},
		{"completion zhs", `assistant: unknown command "zhs" for "assistant completion"; did you mean "zsh"?`},
	} {
		out, stderr, code := run(t, dir, strings.Fields(tc.args)...)
		if code != 2 || stderr != tc.line+"\n" {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.line)
		}
		if !strings.Contains(out, `"code": "invalid_input"`) {
			t.Errorf("%s: stdout %q, want the JSON error", tc.args, out)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a mistyped command made the data dir (%v)", err)
	}
}

// TestVersionRefusesBadJSON: --version with a bad --json is exit 2, as
// anywhere else; alone it prints one line and exits 0.
func TestVersionRefusesBadJSON(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if out, stderr, code := run(t, dir, "--version", "--json", "bogus"); code != 2 || !strings.Contains(stderr, "--json") {
		t.Errorf("--version --json bogus: exit %d, %q %q; want exit 2", code, out, stderr)
	}
	if out, _, code := run(t, dir, "--version"); code != 0 || !strings.HasPrefix(out, "assistant ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestJSONFieldsOfThePrintedView: --json FIELDS is checked against the
// fields of what the command will print: show of a task or of a batch or
// decide run prints the task's view, show --rows the rows report, decide
// the run's view with its rows. A field of the printed view is printed;
// any other is exit 2 naming the fields available, before anything is
// read or written.
func TestJSONFieldsOfThePrintedView(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := parked(t, dir, 2)
	mustRun(t, dir, "decide", writeFile(t, "d.csv", file), "--id", "d1")
	for _, tc := range []struct {
		name string
		args []string
		want int
		keys string // printed keys, or (exit 2) what stderr says
	}{
		{name: "ShowRowsRows", args: []string{"show", "parked", "--rows", "--json", "rows"}, keys: "schema_version,rows"},
		{name: "ShowRowsOf", args: []string{"show", "parked", "--rows", "--json", "of,task"}, keys: "schema_version,task,of"},
		{name: "ShowDecideRunRows", args: []string{"show", "d1", "--rows", "--json", "rows,status"}, keys: "schema_version,status,rows"},
		{name: "ShowRowsUserRefused", args: []string{"show", "parked", "--rows", "--json", "user,decisions"}, want: 2,
			keys: `--json: unknown field "user"; available: schema_version, task, of, status, rows`},
		{name: "ShowBatchView", args: []string{"show", "parked", "--json", "batch,status"}, keys: "schema_version,status,batch"},
		{name: "ShowBatchRowsRefusedWithoutFlag", args: []string{"show", "parked", "--json", "rows"}, want: 2, keys: `--json: unknown field "rows"; available: schema_version, task, user,`},
		{name: "ShowTask", args: []string{"show", "row-0000", "--json", "user,decisions"}, keys: "schema_version,user,decisions"},
		{name: "DecideRows", args: []string{"decide", writeFile(t, "d2.csv", file), "--id", "d2", "--json", "rows"}, keys: "schema_version,rows"},
		{name: "DecideOfRefused", args: []string{"decide", writeFile(t, "d3.csv", file), "--id", "d3", "--json", "of"}, want: 2,
			keys: `--json: unknown field "of"; available: schema_version, task, user,`},
		{name: "ShowUnknownRefusedBeforeReading", args: []string{"show", "nosuch", "--rows", "--json", "bogus"}, want: 2,
			keys: `--json: unknown field "bogus"; available: schema_version, task, of, status, rows`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks`)
			out, stderr, code := run(t, dir, tc.args...)
			if code != tc.want {
				t.Fatalf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.want, out, stderr)
			}
			if tc.want != 0 {
				if !strings.Contains(stderr, tc.keys) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("%v: stderr %q, want one line with %q", tc.args, stderr, tc.keys)
				}
				if after := query(t, dir, "business.sqlite", `SELECT count(*) FROM tasks`); after != before {
					t.Errorf("tasks %s → %s: a refused --json made a task", before, after)
				}
				return
			}
			if got := strings.Join(jsonKeys(t, out), ","); got != tc.keys {
				t.Errorf("%v: keys %s, want %s\n%s", tc.args, got, tc.keys, out)
			}
		})
	}
}

// jsonKeys are the top-level keys of the JSON object out, in order.
func jsonKeys(t *testing.T, out string) []string {
	t.Helper()
	var keys []string
	dec := json.NewDecoder(strings.NewReader(out))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object (%v): %s", err, out)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip any
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestInformationalStderrLinesArePrefixed: the line resume prints about
// which of two approvals it gave starts with "assistant: ", as every line
// on stderr does (docs/cli.md "Errors").
func TestInformationalStderrLinesArePrefixed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "start", "u1", "A3003", "--reason", "too small", "--approvals", "2")
	mustRun(t, dir, "approvers", "grant", "alice")
	out, errOut, code := run(t, dir, "--user", "alice", "resume", "u1", "--action", "approve")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "approved as approver 1 of 2") {
		t.Fatalf("resume: stderr %q, want the approver line", errOut)
	}
	for _, line := range strings.Split(strings.TrimSuffix(errOut, "\n"), "\n") {
		if !strings.HasPrefix(line, "assistant: ") {
			t.Errorf("stderr line %q does not start with \"assistant: \"", line)
		}
	}
	verifyClean(t, dir)
}

// TestNextCommandsNameTheProgramAsRun: run as ./assistant from its
// directory, which is not on PATH, the card's Next: line and an error's
// hint start "./assistant"; found on PATH, "assistant".
func TestNextCommandsNameTheProgramAsRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noBin := "PATH=/usr/bin:/bin"
	for _, tc := range []struct {
		name, path, prog string
		env              []string
	}{
		{name: "Relative", path: "./assistant", prog: "./assistant", env: []string{noBin}},
		{name: "OnPATH", path: "assistant", prog: "assistant", env: []string{"PATH=" + binDir + string(os.PathListSeparator) + "/usr/bin:/bin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(dir, tc.name)
			cmd := func(args ...string) (string, string, int) {
				c := exec.Command(tc.path, append([]string{"--data", data}, args...)...)
				c.Dir = binDir // ./assistant is found there, as a shell finds it
				c.Env = append(os.Environ(), tc.env...)
				var out, errb strings.Builder
				c.Stdout, c.Stderr = &out, &errb
				err := c.Run()
				return out.String(), errb.String(), exitOf(t, err)
			}
			out, errOut, code := cmd("start", "r1", "A3003", "--output", "text")
			if code != 0 {
				t.Fatalf("start: exit %d: %s", code, errOut)
			}
			if want := "Next:     " + tc.prog + " --data " + data + " resume r1 --reason"; !strings.Contains(out, want) {
				t.Errorf("card:\n%s\nwant a line starting %q", out, want)
			}
			_, errOut, code = cmd("show", "nosuch")
			if want := "`" + tc.prog + " --data " + data + " list`"; code != 4 || !strings.Contains(errOut, want) {
				t.Errorf("show nosuch: exit %d, %q; want exit 4 and the hint %s", code, errOut, want)
			}
			// An expired draft's error, on the card and in the JSON, quotes
			// recover as the program was run.
			if _, errOut, code = cmd("start", "r2", "A3004", "--reason", "too small"); code != 0 {
				t.Fatalf("start r2: exit %d: %s", code, errOut)
			}
			recoverCmd := "`" + tc.prog + " --data " + data + " recover`"
			for _, output := range []string{"text", "json"} {
				c := exec.Command(tc.path, "--data", data, "show", "r2", "--output", output)
				c.Dir, c.Env = binDir, append(os.Environ(), append(tc.env, "ASSISTANT_CLOCK=+11m")...)
				got, err := c.Output()
				if err != nil {
					t.Fatalf("show r2 --output %s: %v", output, err)
				}
				if !strings.Contains(string(got), recoverCmd) || strings.Contains(string(got), "`assistant recover`") && tc.prog != "assistant" {
					t.Errorf("show r2 --output %s after expiry:\n%s\nwant its error to quote %s", output, got, recoverCmd)
				}
			}
		})
	}
}
