package termtext

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// hostile are arguments a task id, a reason, a path or a user may hold.
var hostile = []string{
	"plain-id_1.2",
	"$(id)2",
	"a;b",
	"it's",
	"two words",
	"运动鞋 — Café",
	"`id`",
	"a\\b",
	"bidi\u202eevil",
	"\x1b]0;pwned\a\x1b[31mred",
	"line\nbreak\ttab\rcr",
	"quote'and\u200bzero-width",
	"bad\xffutf8\xc3",
	"\u0085c1",
	"\u202efollowed by hex: abc",
	"",
	"-dash",
	"!bang",
	"*glob?",
	"~tilde",
	"a\x7fdel",
	"mark\u061c soft\u00ad mvs\u180e tag\U000e0041",
	"ali\u034fce",
	"\u3164\u115f\u1160\uffa0",
	"\u2800braille",
	"emoji\ufe0f",
}

// TestEscapeInvisible: every character that prints as nothing or as a
// blank (format characters, default-ignorable code points, variation
// selectors, the Hangul fillers, the Braille blank) is escaped, so that
// history's changed values and show's quoted texts print them alike; one
// above U+FFFF takes \U and eight hex digits, which bash reads back.
func TestEscapeInvisible(t *testing.T) {
	for in, want := range map[string]string{
		"a\u061cb":     `a\u061cb`,
		"a\u00adb":     `a\u00adb`,
		"a\u180eb":     `a\u180eb`,
		"a\U000e0041b": `a\U000e0041b`,
		"ali\u034fce":  `ali\u034fce`,
		"\u3164":       `\u3164`,
		"\u2800":       `\u2800`,
		"x\ufe0f":      `x\ufe0f`,
		"运动鞋 — Café ü": "运动鞋 — Café ü",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %s, want %s", in, got, want)
		}
		if got := EscapeControls(in); got != want {
			t.Errorf("EscapeControls(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestShellQuoteOutputIsPrintable(t *testing.T) {
	for _, s := range hostile {
		q := ShellQuote(s)
		if strings.Contains(q, "`") {
			t.Errorf("ShellQuote(%q) = %q holds a backquote, which ends a hint in a message", s, q)
		}
		if EscapeControls(q) != q {
			t.Errorf("ShellQuote(%q) = %q holds characters a terminal acts on", s, q)
		}
	}
}

// TestShellQuoteRoundTrip pastes each quoted argument into bash (and the
// ones without $'…' into dash, a plain POSIX sh) and checks that the
// command receives exactly the bytes quoted.
func TestShellQuoteRoundTrip(t *testing.T) {
	for _, shell := range []string{"bash", "sh"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("no %s: %v", shell, err)
			continue
		}
		for _, s := range hostile {
			q := ShellQuote(s)
			if shell == "sh" && strings.HasPrefix(q, "$'") {
				continue // POSIX sh has no $'…'
			}
			got := pasteArgs(t, path, q)
			if len(got) != 1 || got[0] != s {
				t.Errorf("%s: ShellQuote(%q) = %s reads back as %q", shell, s, q, got)
			}
		}
		if shell == "bash" {
			// Several arguments on one line, as a hint prints them.
			line := Command(hostile...)
			if got := pasteArgs(t, path, line); strings.Join(got, "\x00") != strings.Join(hostile, "\x00") {
				t.Errorf("bash: Command(...) = %s reads back as %q", line, got)
			}
		}
	}
}

// pasteArgs runs line as the arguments of printf in shell and returns
// them, each as printf received it.
func pasteArgs(t *testing.T, shell, line string) []string {
	t.Helper()
	cmd := exec.Command(shell, "-c", `printf '%s\0' `+line)
	cmd.Env = []string{"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v", shell, line, err)
	}
	out = bytes.TrimSuffix(out, []byte{0})
	return strings.Split(string(out), "\x00")
}

func TestShellQuoteForms(t *testing.T) {
	tests := []struct{ in, want string }{
		{"return-25", "return-25"},
		{"a@b.c:d,e+f=g/h", "a@b.c:d,e+f=g/h"},
		{"", "''"},
		{"$(id)2", "'$(id)2'"},
		{"it's", `'it'\''s'`},
		{`a\b`, `'a\b'`},
		{"运动鞋", "'运动鞋'"},
		{"bidi\u202eevil", `$'bidi\u202eevil'`},
		{"it's\n", `$'it\'s\n'`},
		{"a\\b\x1b", `$'a\\b\e'`},
		{"bad\xff", `$'bad\xff'`},
		{"back`tick`", `$'back\x60tick\x60'`},
	}
	for _, tt := range tests {
		if got := ShellQuote(tt.in); got != tt.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestEscapeControls(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`a\b $'x\e'`, `a\b $'x\e'`},
		{"\x1b]0;pwned\a", `\e]0;pwned\x07`},
		{"a\\\u202e", `a\\u202e`},
		{"one\ntwo", `one\ntwo`},
	}
	for _, tt := range tests {
		if got := EscapeControls(tt.in); got != tt.want {
			t.Errorf("EscapeControls(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestQuote(t *testing.T) {
	long := strings.Repeat("a", MaxQuoted+10)
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{"", `""`},
		{"bidi\u202eevil", `"bidi\u202eevil"`},
		{"\x9b\xff", `"\x9b\xff"`},
		{"\u009b", `"\u009b"`},
		{"a\ufffdb", `"a\ufffdb"`},
		{long, `"` + long[:MaxQuoted] + `"…`},
		// A cut inside a character goes back to its start.
		{strings.Repeat("a", MaxQuoted-1) + "é", `"` + strings.Repeat("a", MaxQuoted-1) + `"…`},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
