package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
