package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultProgram is the program's name on PATH, and what printed next
// commands start with when the name it was run by is not known.
const DefaultProgram = "assistant"

// ProgramName is the name printed next commands start with (cards' Next:
// lines, hints, errors), from argv0, the name the program was run by, so
// that a pasted command runs the same binary (docs/cli.md "Text
// output"): argv0 as given, quoted for a shell, when it holds a slash
// (./assistant, bin/assistant) — unless its base name found on PATH is
// this same file, which pastes shorter; argv0 without a slash was found
// on PATH and is printed as it is. "" is DefaultProgram.
func ProgramName(argv0 string) string {
	if argv0 == "" {
		return DefaultProgram
	}
	if !strings.ContainsRune(argv0, '/') {
		return shellQuote(argv0)
	}
	base := filepath.Base(argv0)
	if found, err := exec.LookPath(base); err == nil && sameFile(found, argv0) {
		return shellQuote(base)
	}
	return shellQuote(argv0)
}

// sameFile reports whether paths a and b name one file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
