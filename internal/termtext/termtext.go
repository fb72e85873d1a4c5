// Package termtext makes text safe to print to a terminal and command
// lines safe to paste into a shell. The command line (cmd) prints every
// text that came from input or a store through Escape, and every argument
// of a command it suggests through ShellQuote; the hints that flow/returns
// writes into its errors quote their arguments with ShellQuote too.
//
// The rule both keep: nothing printed can move the cursor, change
// colours, reorder the line or hide itself, and a suggested command, once
// pasted into bash or zsh, runs with exactly the arguments meant.
package termtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s as it may be printed to a terminal: every character
// that could move the cursor, change colours, reorder the line or hide
// itself is written as an escape instead: C0 and C1 controls and DEL as
// \n, \t, \r, \e or \xNN (\u0085 for a C1 control written in UTF-8), the
// bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069)
// and the zero-width and other invisible characters (U+200B–U+200F,
// U+2028, U+2029, U+2060–U+2064, U+FEFF, and every Invisible one) as
// \uXXXX (\UXXXXXXXX above U+FFFF), a backslash as \\ (so
// an escape in the text cannot pass for one of ours), and each byte of
// invalid UTF-8 as \xNN. Everything else, 运动鞋 and — among it, is kept
// as it is. Text without such characters is returned unchanged, without
// a copy. The escapes are those of bash's $'…' quoting, which ShellQuote
// relies on.
func Escape(s string) string {
	if !needsEscaping(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	escapeTo(&b, s, escapeAll)
	return b.String()
}

// escapeMode says which characters escapeTo leaves as they are.
type escapeMode int

const (
	escapeAll       escapeMode = iota // Escape's rules
	keepBackslashes                   // EscapeControls: a backslash stays
	quoteSingle                       // inside $'…': a ' is written \'
)

// needsEscaping reports whether Escape changes s.
func needsEscaping(s string) bool {
	return strings.IndexFunc(s, NeedsEscape) >= 0 || !utf8.ValidString(s)
}

// escapeTo writes s to b as Escape does, changed by mode.
func escapeTo(b *strings.Builder, s string, mode escapeMode) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '\\' && mode == keepBackslashes:
			b.WriteByte('\\')
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'' && mode == quoteSingle:
			b.WriteString(`\'`)
		case r == '`' && mode == quoteSingle:
			b.WriteString(`\x60`) // see ShellQuote
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == 0x1b:
			b.WriteString(`\e`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case NeedsEscape(r) && r > 0xffff:
			fmt.Fprintf(b, `\U%08x`, r) // \u takes four hex digits only
		case NeedsEscape(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// NeedsEscape reports whether Escape writes r as an escape.
func NeedsEscape(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r == '\\':
		return true
	case r >= 0x80 && r <= 0x9f: // C1 controls
		return true
	case r >= 0x200b && r <= 0x200f, // zero-width space, joiners, LRM, RLM
		r >= 0x2028 && r <= 0x202e, // line and paragraph separators, bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2069, // word joiner, invisible operators, bidi isolates
		r == 0xfeff:                // zero-width no-break space (BOM)
		return true
	}
	return Invisible(r)
}

// Invisible reports whether r prints as nothing or as a blank that is not a
// space: a format character (category Cf: the soft hyphen U+00AD, the
// Arabic letter mark U+061C, the Mongolian vowel separator U+180E, the
// tags U+E0000–U+E007F, …), any other default-ignorable code point (the
// combining grapheme joiner U+034F, the Hangul fillers U+115F, U+1160,
// U+3164 and U+FFA0, …), a variation selector, or the Braille blank
// U+2800. Escape writes each as an escape, and a name (a user) must not
// hold one: it would print as another name, or as nothing.
func Invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) || r == 0x2800
}

// EscapeControls is Escape without its backslash rule: a backslash is
// kept as it is. It is for a line that holds commands ShellQuote made
// (whose $'…' escapes must stay as they are) as well as other text:
// nothing it prints can act on the terminal, though a backslash in the
// text is not told apart from one of an escape.
func EscapeControls(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r != '\\' && NeedsEscape(r) }) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	escapeTo(&b, s, keepBackslashes)
	return b.String()
}

// ShellQuote returns s as one argument of a command line to paste into a
// POSIX shell, in printable characters only:
//
//   - s as it is when it holds only letters, digits and -_./:@,+= (and is
//     not empty);
//   - in single quotes (a ' inside closes them, is written \' and opens
//     them again), when it holds no character Escape would escape other
//     than a backslash, and no backquote;
//   - otherwise in ANSI-C quotes, $'…', with Escape's escapes, \' for a
//     single quote and \x60 for a backquote (messages print commands
//     between backquotes: one inside would end the command early). bash (4.2 and later, for \u) and zsh read $'…' back as
//     the very same bytes; a plain POSIX sh does not know $'…'.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@,+=", r))
	}) {
		return s
	}
	if strings.IndexFunc(s, func(r rune) bool { return r != '\\' && NeedsEscape(r) || r == '`' }) < 0 && utf8.ValidString(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	escapeTo(&b, s, quoteSingle)
	b.WriteString("'")
	return b.String()
}

// Command joins args into a command line to paste: each argument through
// ShellQuote, separated by spaces.
func Command(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// MaxQuoted is how many bytes of a value Quote prints: a message that
// names a value from a file names it, and stays one short line however
// long the value is.
const MaxQuoted = 64

// Quote returns s Go-quoted (strconv.Quote: controls, invalid UTF-8 and
// every character that does not print as itself escaped) for a message,
// cut to its first MaxQuoted bytes (at a character boundary) with "…"
// after the closing quote when it is longer. U+FFFD, which a decoder
// puts for what it could not read, is written \ufffd, so that it is not
// taken for a character of the file.
func Quote(s string) string {
	cut := ""
	if len(s) > MaxQuoted {
		n := MaxQuoted
		for n > MaxQuoted-utf8.UTFMax && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], "…"
	}
	return strings.ReplaceAll(strconv.Quote(s), "\uFFFD", `\ufffd`) + cut
}
