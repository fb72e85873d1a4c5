package cmd

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// termSafe returns s as it may be printed to a terminal: every character
// that could move the cursor, change colours, reorder the line or hide
// itself is written as an escape instead (docs/orders.md "Text output"):
// C0 and C1 controls and DEL as \n, \t, \r, \e or \xNN (\u0085 for a C1
// control written in UTF-8), the bidi embeddings, overrides and isolates
// (U+202A–U+202E, U+2066–U+2069) and the zero-width and other invisible
// characters (U+200B–U+200F, U+2028, U+2029, U+2060–U+2064, U+FEFF) as
// \uXXXX, a backslash as \\ (so an escape in the text cannot pass for one
// of ours), and each byte of invalid UTF-8 as \xNN. Everything else,
// 运动鞋 and — among it, is kept as it is. Text without such characters
// is returned unchanged, without a copy.
func termSafe(s string) string {
	i := strings.IndexFunc(s, needsEscape)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == 0x1b:
			b.WriteString(`\e`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether termSafe writes r as an escape.
func needsEscape(r rune) bool {
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
	return false
}
