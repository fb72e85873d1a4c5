package cmd

// The layers below cmd say what happened in the domain's words: no
// command line (`assistant show r1`) and no flag (--timezone) in their
// messages and hints. cmd alone words inputs as flags and operations as
// commands to paste (cliWords), so every other front end words them its
// own way.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// layersBelowCmd are the source trees whose messages carry no CLI syntax:
// the engine and the application layer, the stores, the storage
// plumbing.
var layersBelowCmd = []string{"../flow", "../business", "../runs", "../checkpoints", "../internal"}

// cliSyntax finds a command line or a flag in a message: "--" and a word
// (a flag), or "assistant" and one of commands after it.
type cliSyntax struct {
	flag     *regexp.Regexp
	commands map[string]bool
}

var flagInText = regexp.MustCompile("(?:^|[\\s`'\"(\\[=,])--[a-z][a-z0-9-]*")

var programInText = regexp.MustCompile("(?:^|[\\s`'\"(])assistant ([a-z][a-z-]*)")

// newCLISyntax finds the commands of root's tree, and any flag.
func newCLISyntax(root *cobra.Command) cliSyntax {
	commands := map[string]bool{}
	for _, c := range root.Commands() {
		commands[c.Name()] = true
	}
	return cliSyntax{flag: flagInText, commands: commands}
}

// in returns what of CLI syntax s holds: its flags, and "assistant C" for
// each command C of the tree it names after the program's name.
func (c cliSyntax) in(s string) []string {
	var found []string
	for _, m := range c.flag.FindAllString(s, -1) {
		found = append(found, strings.TrimLeft(m, " \t\n`'\"([=,"))
	}
	for _, m := range programInText.FindAllStringSubmatch(s, -1) {
		if c.commands[m[1]] {
			found = append(found, "assistant "+m[1])
		}
	}
	return found
}

// messageFinding is a message literal with CLI syntax, where it is.
type messageFinding struct {
	pos  string
	text string
	cli  []string
}

// programArgument is a literal that is one flag alone ("--locale=C"): an
// argument a store's plumbing passes to a program it runs (initdb), not
// a message.
var programArgument = regexp.MustCompile(`^--[a-z][a-z0-9-]*(=\S*)?$`)

// messagesWithCLISyntax walks the Go files (not tests) under dir and
// returns every string literal in them that holds CLI syntax: a message,
// a hint's words, a message's part built apart (a summary, a row's
// reason). Import paths, struct tags and program arguments
// (programArgument) are not messages.
func messagesWithCLISyntax(t *testing.T, dir string, c cliSyntax) []messageFinding {
	t.Helper()
	var found []messageFinding
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ImportSpec:
				return false
			case *ast.Field:
				// Its names and type only: a tag is no message.
				if n.Type != nil {
					ast.Inspect(n.Type, func(m ast.Node) bool { return m == n.Type || inspectLiteral(m, fset, c, &found, t) })
				}
				return false
			}
			return inspectLiteral(n, fset, c, &found, t)
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// inspectLiteral adds n to found when it is a string literal with CLI
// syntax; it reports whether the walk goes on below n.
func inspectLiteral(n ast.Node, fset *token.FileSet, c cliSyntax, found *[]messageFinding, t *testing.T) bool {
	lit, ok := n.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return true
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
	}
	if programArgument.MatchString(s) {
		return false
	}
	if cli := c.in(s); len(cli) > 0 {
		*found = append(*found, messageFinding{fset.Position(lit.Pos()).String(), s, cli})
	}
	return false
}

func TestLayersBelowCmdSayNoCLISyntax(t *testing.T) {
	t.Parallel()
	c := newCLISyntax(NewRootCmd(io.Discard, io.Discard, nil))
	for _, dir := range layersBelowCmd {
		for _, f := range messagesWithCLISyntax(t, dir, c) {
			t.Errorf("%s: message %q names %s: say what happened in the domain's words, and leave the inputs and commands to a Hint (cmd words them)", f.pos, f.text, strings.Join(f.cli, ", "))
		}
	}
}

// TestCLISyntaxFoundInPlantedMessages: the walk finds CLI syntax where it
// is planted (a flag in fmt.Errorf, a command in errors.New, a hint's
// words, a message field, a row's reason passed to a method) and not in
// words that only look like it, a program's argument or a struct tag.
func TestCLISyntaxFoundInPlantedMessages(t *testing.T) {
	t.Parallel()
	c := newCLISyntax(NewRootCmd(io.Discard, io.Discard, nil))
	dir := t.TempDir()
	src := `package planted

import (
	"errors"
	"fmt"
	"os/exec"
)

type hint struct{ Before string }

type refusal struct{ msg string }

var (
	a = fmt.Errorf("delivered_at %s has no time zone; say which with --timezone", "x")
	b = errors.New("run ` + "`assistant verify`" + ` to see what is damaged")
	c = hint{Before: "give it with --user NAME"}
	d = &refusal{msg: "order is the shop's; only an " + "--operator import changes it"}
	e = errors.New("written by a newer version of assistant (the file is left unchanged)")
	f = fmt.Errorf("upgrade assistant to the version that wrote it; a -- b, x--y")
	g = exec.Command("initdb", "--locale=C")
)

type row struct {
	Name string ` + "`json:\"name\" help:\"--not-a-message\"`" + `
}

func (r row) refuse(why string) {}

func init() { row{}.refuse("is the shop's order; only an --operator-import changes it") }
`
	if err := os.WriteFile(filepath.Join(dir, "planted.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range messagesWithCLISyntax(t, dir, c) {
		got = append(got, f.cli...)
	}
	want := []string{"--timezone", "assistant verify", "--user", "--operator", "--operator-import"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
}
