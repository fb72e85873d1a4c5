package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = "../.."

// TestCLIReferenceIsCurrent: docs/cli holds exactly what gendocs writes
// from the command tree, so a help text changed without running
// `go run ./cmd/gendocs` fails CI, naming the stale files.
func TestCLIReferenceIsCurrent(t *testing.T) {
	fresh := t.TempDir()
	if err := generate(fresh); err != nil {
		t.Fatal(err)
	}
	checked := filepath.Join(repoRoot, DefaultDir)
	want := markdownFiles(t, fresh)
	have := markdownFiles(t, checked)
	var stale []string
	for name, body := range want {
		old, ok := have[name]
		switch {
		case !ok:
			stale = append(stale, name+" (missing)")
		case !bytes.Equal(old, body):
			stale = append(stale, name+" (differs)")
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			stale = append(stale, name+" (no such command)")
		}
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		t.Errorf("%s is stale; run `go run ./cmd/gendocs` and commit the result:\n\t%s",
			DefaultDir, strings.Join(stale, "\n\t"))
	}
}

// TestGenerateIsDeterministic: two runs write the same bytes, so the check
// above fails only on a changed help text.
func TestGenerateIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		if err := generate(dir); err != nil {
			t.Fatal(err)
		}
	}
	fa, fb := markdownFiles(t, a), markdownFiles(t, b)
	if len(fa) == 0 || len(fa) != len(fb) {
		t.Fatalf("%d and %d files", len(fa), len(fb))
	}
	for name, body := range fa {
		if !bytes.Equal(body, fb[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// markdownFiles reads every *.md file directly in dir, by name.
func markdownFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(name)] = b
	}
	return files
}

// docFiles are the Markdown files whose links are checked, relative to
// the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", DefaultDir + "/*.md"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, err := filepath.Rel(repoRoot, f)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, rel)
		}
	}
	return files
}

// mdLink is an inline Markdown link or image: [text](target) or
// [text](target "title").
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocsLinksResolve: every relative link of README.md, docs/*.md and
// docs/cli/*.md names a file inside the repository; a link's #anchor, and
// a heading quoted right after a link to a Markdown file
// ([storage.md](storage.md) "Refusals"), are headings of that file. A link
// to another site is not followed.
func TestDocsLinksResolve(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range docFiles(t) {
		body, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		text := stripCode(string(body))
		for _, loc := range mdLink.FindAllStringSubmatchIndex(text, -1) {
			target := text[loc[2]:loc[3]]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			abs := filepath.Join(root, file)
			if path != "" {
				abs = filepath.Join(root, filepath.Dir(file), filepath.FromSlash(path))
			}
			if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Errorf("%s: link %s leaves the repository", file, target)
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s: link %s: no such file", file, target)
				continue
			}
			if !strings.HasSuffix(abs, ".md") {
				continue
			}
			b, err := os.ReadFile(abs)
			if err != nil {
				t.Errorf("%s: link %s: %v", file, target, err)
				continue
			}
			if anchor != "" && !slices.Contains(anchors(string(b)), anchor) {
				t.Errorf("%s: link %s: no heading with anchor #%s", file, target, anchor)
			}
			for _, h := range quotedHeadings(text[loc[1]:]) {
				if !slices.Contains(headings(string(b)), h) {
					t.Errorf("%s: link %s %q: %s has no such heading", file, target, h, filepath.Base(abs))
				}
			}
		}
	}
}

// history are phrases that tell the story of a change rather than what
// is: a doc describes the build as it is, history belongs in git.
var history = regexp.MustCompile(`(?i:\bissue \d+|\bbefore: |\bwas exit \d|\ba tester\b)|\bDESIGN\.md\b`)

// TestDocsTellNoHistory: no doc names an issue, a before/after, an exit
// code a build used to have, who found a bug, or a file outside the
// repository (the contract it was built from).
func TestDocsTellNoHistory(t *testing.T) {
	for _, file := range docFiles(t) {
		body, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(body), "\n") {
			if m := history.FindString(line); m != "" {
				t.Errorf("%s:%d: %q tells history: %s", file, i+1, m, line)
			}
		}
	}
}

// fence opens or closes a fenced code block; codeSpan is an inline one.
var (
	fence    = regexp.MustCompile("(?m)^\\s*```")
	codeSpan = regexp.MustCompile("`[^`]*`")
)

// stripCode blanks fenced code blocks and inline code spans, where text
// that looks like a link is not one.
func stripCode(doc string) string {
	var out strings.Builder
	inFence := false
	for line := range strings.Lines(doc) {
		if fence.MatchString(line) {
			inFence = !inFence
			out.WriteString("\n")
			continue
		}
		if inFence {
			out.WriteString("\n")
			continue
		}
		out.WriteString(codeSpan.ReplaceAllString(line, ""))
	}
	return out.String()
}

// quotedHeading is the way a doc names a section of the file it links
// to: [storage.md](storage.md) "Refusals", or "Busy" and "Connecting".
var (
	quotedHeading = regexp.MustCompile(`^ "([^"\n]+)"((?:(?:,| and| or) "[^"\n]+")*)`)
	quoted        = regexp.MustCompile(`"([^"\n]+)"`)
)

// quotedHeadings are the headings named right after a link (rest is the
// text that follows it).
func quotedHeadings(rest string) []string {
	m := quotedHeading.FindStringSubmatch(rest)
	if m == nil {
		return nil
	}
	names := []string{m[1]}
	for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
		names = append(names, q[1])
	}
	return names
}

// headings are the texts of doc's headings, without their #s and code
// marks.
func headings(doc string) []string {
	var list []string
	inFence := false
	for line := range strings.Lines(doc) {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if !inFence && strings.HasPrefix(line, "#") {
			list = append(list, strings.ReplaceAll(strings.TrimSpace(strings.TrimLeft(line, "#")), "`", ""))
		}
	}
	return list
}

// anchors are the anchors GitHub gives the headings of doc: the heading's
// text in lower case, without punctuation, spaces as hyphens; a repeated
// one gets -1, -2, ….
func anchors(doc string) []string {
	var list []string
	seen := map[string]int{}
	inFence := false
	for line := range strings.Lines(doc) {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		s := slug.String()
		if n := seen[s]; n > 0 {
			list = append(list, s+"-"+strconv.Itoa(n))
		} else {
			list = append(list, s)
		}
		seen[s]++
	}
	return list
}

// TestEndToEndIndexListsEveryFile: e2e/README.md, the end-to-end tests'
// index, links every test file of e2e/ and no file that is not there, so
// a rule's test is found from the index by its doc heading.
func TestEndToEndIndexListsEveryFile(t *testing.T) {
	index, err := os.ReadFile(filepath.Join(repoRoot, "e2e", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "e2e", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(stripCode(string(index)), -1) {
		if strings.HasSuffix(m[1], "_test.go") && !strings.Contains(m[1], "/") {
			listed[m[1]] = true
		}
	}
	for _, f := range files {
		name := filepath.Base(f)
		if !listed[name] {
			t.Errorf("e2e/README.md does not list %s", name)
		}
		delete(listed, name)
	}
	for name := range listed {
		t.Errorf("e2e/README.md lists %s, which e2e/ does not hold", name)
	}
}
