package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Printed next commands start with the name the program was run by
// (docs/cli.md "Text output"): on a card's Next: line, in a hint on
// stderr and in the JSON error's hint.
func TestProgramNameInNextCommands(t *testing.T) {
	for _, prog := range []string{"./assistant", "'/opt/my tools/assistant'", "assistant"} {
		t.Run(prog, func(t *testing.T) {
			c := newCLI(t)
			run := func(args ...string) result {
				var stdout, stderr bytes.Buffer
				code := RunAs(context.Background(), prog, append([]string{"--data", c.data}, args...), &stdout, &stderr, c.seed)
				return result{code, stdout.String(), stderr.String()}
			}
			card := run("start", "r1", "A3003", "--output", "text")
			if card.code != ExitOK {
				t.Fatalf("start: exit %d: %s", card.code, card.stderr)
			}
			if want := "Next:     " + prog + " --data " + c.data + " resume r1 --reason"; !strings.Contains(card.stdout, want) {
				t.Errorf("card:\n%s\nwant a line starting %q", card.stdout, want)
			}
			miss := run("show", "nosuch", "--output", "json")
			if miss.code != ExitNotFound {
				t.Fatalf("show nosuch: exit %d: %s", miss.code, miss.stderr)
			}
			want := "`" + prog + " --data " + c.data + " list`"
			if !strings.Contains(miss.stderr, want) || !strings.Contains(miss.stdout, want) {
				t.Errorf("stderr %q, stdout %s: want the hint %s in both", miss.stderr, miss.stdout, want)
			}
		})
	}
}

func TestProgramName(t *testing.T) {
	bin := t.TempDir()
	exe := filepath.Join(bin, "assistant")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spaced := filepath.Join(t.TempDir(), "my tools")
	if err := os.Mkdir(spaced, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", spaced)
	for _, tc := range []struct{ argv0, want string }{
		{"", "assistant"},
		{"assistant", "assistant"},
		{"./assistant", "./assistant"},
		{exe, exe},
		{filepath.Join(spaced, "assistant"), "'" + filepath.Join(spaced, "assistant") + "'"},
	} {
		if got := ProgramName(tc.argv0); got != tc.want {
			t.Errorf("ProgramName(%q) = %q, want %q", tc.argv0, got, tc.want)
		}
	}
	// The same binary found on PATH by its base name pastes as that name.
	t.Setenv("PATH", bin)
	if got := ProgramName(exe); got != "assistant" {
		t.Errorf("ProgramName(%q) with its directory on PATH = %q, want assistant", exe, got)
	}
}
