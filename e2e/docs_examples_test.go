package e2e

// docs/README.md "Examples": every example of README.md and docs/*.md runs
// as pasted. A document's examples run in order, in one bash session, in a
// new directory of its own; each command ends with the exit code the
// document gives it. A block that cannot run here carries a marker saying
// why, and is counted.

import (
	"assistant/internal/pgtest"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exampleLangs are the languages of a fenced block that is an example of
// commands: sh and bash blocks are commands throughout; a console block
// (or a block without a language whose lines start with "$ ") holds
// commands after "$ " and their output between them.
var exampleLangs = map[string]bool{"sh": true, "bash": true, "console": true}

// docCommand is one command of an example: its text as bash reads it
// (continuation lines included), the line of the file it starts on and
// the exit code the document gives it.
type docCommand struct {
	text string
	line int
	want int
}

// wantExit finds the exit code a command's comment gives it: the first
// "exit N" in the comment of its last line (`# killed: exit 137`, `#
// exit 7 after 5s: nobody decided`); 0 without one.
var wantExit = regexp.MustCompile(`#[^'"]*?\bexit (\d+)\b`)

// isExample reports whether b is an example of commands: a block of an
// example language, or one without a language whose lines start "$ ".
func isExample(b docBlock) bool {
	if exampleLangs[b.lang] {
		return true
	}
	return b.lang == "" && strings.HasPrefix(strings.TrimLeft(b.text, "\n"), "$ ")
}

// prompted reports whether b's commands stand after "$ " prompts with
// output between them.
func prompted(b docBlock) bool { return b.lang == "console" || b.lang == "" }

// complete reports whether text is a whole bash command list: its quotes
// closed, its compound commands and here-documents ended, no line
// continued (bash -n, which only warns of an open here-document).
func complete(tb testing.TB, text string) bool {
	tb.Helper()
	if strings.HasSuffix(strings.TrimRight(text, "\n"), "\\") {
		return false
	}
	out, err := exec.Command("bash", "-n", "-c", text).CombinedOutput()
	return err == nil && len(out) == 0
}

// docCommands splits the example b into its commands, in order. Blank
// lines and comment lines between commands are not commands; in a
// prompted block only "$ " lines and the lines that continue them are.
func docCommands(tb testing.TB, b docBlock) []docCommand {
	tb.Helper()
	var out []docCommand
	var cur *docCommand
	for i, line := range strings.Split(strings.TrimSuffix(b.text, "\n"), "\n") {
		if cur == nil {
			trimmed := strings.TrimSpace(line)
			if prompted(b) {
				cmd, ok := strings.CutPrefix(line, "$ ")
				if !ok {
					continue // output
				}
				line = cmd
			} else if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			cur = &docCommand{line: b.line + i}
		} else {
			cur.text += "\n"
		}
		cur.text += line
		if complete(tb, cur.text) {
			if m := wantExit.FindStringSubmatch(line); m != nil {
				cur.want, _ = strconv.Atoi(m[1])
			}
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		tb.Errorf("%s:%d: the command is not complete at the end of its block", b.file, cur.line)
	}
	return out
}

// exampleDocs are the documents whose examples run: README.md and
// docs/*.md (docs/cli/ is generated from the help text, whose examples
// are checked with the commands they belong to).
func exampleDocs(tb testing.TB) []string {
	tb.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		tb.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.ToSlash(strings.TrimPrefix(d, ".."+string(filepath.Separator))))
	}
	sort.Strings(out[1:])
	return out
}

// TestDocsExamplesRunAsPasted runs each document's examples in order in
// one bash session (an export or a cd of one command holds for the next)
// in a new directory holding what a clone's root offers them: ./assistant
// as README.md builds it and testdata/; assistant is on PATH and no
// ASSISTANT_ variable is set, so each document has its own data dir,
// ./data. A command that exits other than its document says fails the
// test with its file and line, its stdout and stderr. Blocks marked
// `<!-- run with PostgreSQL -->` run in a session of their own on two new
// databases, $URL and $NEW_URL; blocks marked `<!-- not run: REASON -->`
// are counted and logged.
func TestDocsExamplesRunAsPasted(t *testing.T) {
	t.Parallel()
	total, skipped, withPG := 0, 0, 0
	for _, doc := range exampleDocs(t) {
		var run, runPG []docBlock
		for _, b := range docBlocks(t, doc) {
			switch {
			case !isExample(b):
				if b.notRun != "" || b.withPG {
					t.Errorf("%s:%d: a marker before a block that is not an example", b.file, b.line-1)
				}
			case b.notRun != "":
				skipped++
				t.Logf("%s:%d: not run: %s", b.file, b.line, b.notRun)
			case b.withPG:
				withPG++
				runPG = append(runPG, b)
			default:
				total++
				run = append(run, b)
			}
		}
		name := strings.ReplaceAll(doc, "/", "_")
		if len(run) > 0 {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runDocExamples(t, run)
			})
		}
		if len(runPG) > 0 {
			// $URL and $NEW_URL are two new, empty databases; without a
			// server the blocks are skipped (pgtest.Database).
			t.Run(name+"_PostgreSQL", func(t *testing.T) {
				t.Parallel()
				runDocExamples(t, runPG, "URL="+pgtest.Database(t), "NEW_URL="+pgtest.Database(t))
			})
		}
	}
	t.Logf("%d example blocks run, %d on PostgreSQL when a server is there, %d marked not run", total, withPG, skipped)
}

// runDocExamples runs the commands of blocks (all of one document) in one
// bash session in a new directory, env (KEY=VALUE items) added to its
// environment, and fails t for each command whose exit code differs from
// the one its document gives it.
func runDocExamples(t *testing.T, blocks []docBlock, env ...string) {
	dir, logs := t.TempDir(), t.TempDir()
	// ./assistant, as the documents build it: a link to the built binary.
	// A copy written here could be busy (ETXTBSY) while a process another
	// test forks meanwhile holds the copy's descriptor.
	if err := os.Symlink(assistantBin(), filepath.Join(dir, "assistant")); err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join("..", "testdata"), filepath.Join(dir, "testdata"))
	var cmds []docCommand
	var script strings.Builder
	// Each command's exit code is written down and given back as $?, so
	// the next command reads it as it would after a paste.
	script.WriteString("exec </dev/null\nset -o pipefail\n__status() { return \"$1\"; }\n")
	for _, b := range blocks {
		for _, c := range docCommands(t, b) {
			n := len(cmds)
			cmds = append(cmds, c)
			fmt.Fprintf(&script, "{\n%s\n} >%q 2>%q; __rc=$?; echo \"%d $__rc\" >>%q; __status \"$__rc\"\n", c.text,
				filepath.Join(logs, fmt.Sprint(n, ".out")), filepath.Join(logs, fmt.Sprint(n, ".err")), n, filepath.Join(logs, "codes"))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ASSISTANT_") {
			sh.Env = append(sh.Env, kv)
		}
	}
	sh.Env = append(sh.Env, env...)
	sh.WaitDelay = 5 * time.Second
	// A guard against a command that never ends, not a measure of speed.
	session, err := sh.CombinedOutput()
	if err != nil && ctx.Err() != nil {
		t.Errorf("the examples did not end in 5 minutes: %v\n%s", err, session)
	}
	codes := map[int]int{}
	data, _ := os.ReadFile(filepath.Join(logs, "codes"))
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var n, code int
		if _, err := fmt.Sscanf(line, "%d %d", &n, &code); err == nil {
			codes[n] = code
		}
	}
	for n, c := range cmds {
		got, ok := codes[n]
		if !ok {
			t.Errorf("%s:%d: %s\ndid not run: the session ended before it (%v)\n%s", blocks[0].file, c.line, c.text, err, session)
			return
		}
		if got != c.want {
			stdout, _ := os.ReadFile(filepath.Join(logs, fmt.Sprint(n, ".out")))
			stderr, _ := os.ReadFile(filepath.Join(logs, fmt.Sprint(n, ".err")))
			t.Errorf("%s:%d: %s\nexit %d, want %d\nstdout:\n%s\nstderr:\n%s", blocks[0].file, c.line, c.text, got, c.want, stdout, stderr)
		}
	}
}

// copyFile copies the file from to to with mode perm.
func copyFile(tb testing.TB, from, to string, perm fs.FileMode) {
	tb.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(to, data, perm); err != nil {
		tb.Fatal(err)
	}
}

// copyTree copies the directory from, with its files and directories, to
// to.
func copyTree(tb testing.TB, from, to string) {
	tb.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		copyFile(tb, path, filepath.Join(to, rel), 0o644)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestDocsCIScriptIsTheTestedOne: the script docs/ci.md "The script"
// shows, which its examples do not run, is testdata/ci_wait.sh, which
// TestCIWaitScript runs.
func TestDocsCIScriptIsTheTestedOne(t *testing.T) {
	t.Parallel()
	file, err := os.ReadFile(filepath.Join("testdata", "ci_wait.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if doc := docScript(t, "docs/ci.md", "The script"); doc != string(file) {
		t.Errorf("docs/ci.md \"The script\" differs from testdata/ci_wait.sh:\n%s\nthe file:\n%s", doc, file)
	}
}

// TestDocsCommandExamplesRunAsPasted runs the examples of each command's
// help, as docs/cli/ shows them, the same way: each command's in order,
// in a new directory of its own.
func TestDocsCommandExamplesRunAsPasted(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob(filepath.Join("..", "docs", "cli", "assistant*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		doc := filepath.ToSlash(strings.TrimPrefix(page, ".."+string(filepath.Separator)))
		for _, b := range docBlocks(t, doc) {
			if b.heading != "Examples" {
				continue
			}
			// The help indents its examples by two spaces.
			lines := strings.Split(b.text, "\n")
			for i, l := range lines {
				lines[i] = strings.TrimPrefix(l, "  ")
			}
			b.text, b.lang = strings.Join(lines, "\n"), "sh"
			t.Run(strings.TrimSuffix(filepath.Base(doc), ".md"), func(t *testing.T) {
				t.Parallel()
				runDocExamples(t, []docBlock{b})
				if t.Failed() {
					t.Logf("%s is generated: the examples are the command's help text (cmd/), then go run ./cmd/gendocs", doc)
				}
			})
		}
	}
}
