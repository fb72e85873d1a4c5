package cmd

import "assistant/internal/termtext"

// Text output (docs/cli.md "Text output"): one rule for every text
// renderer of this package.
//
//   - A text that came from input or a store (task, order and draft ids,
//     reasons, comments, items, users, error texts) is printed through
//     termSafe when printed bare, or with %q when printed in quotes (Go
//     quoting escapes the same characters and more);
//   - every argument of a command printed for a person to paste goes
//     through shellQuote, which prints $'…' (bash, zsh) when the argument
//     holds a character termSafe would escape;
//   - the one line fail prints on stderr goes through
//     termtext.EscapeControls, which leaves the backslashes of such $'…'
//     arguments as they are.

// termSafe returns s as it may be printed to a terminal (termtext.Escape):
// controls, bidi and invisible characters, backslashes and invalid UTF-8
// written as escapes; everything else, 运动鞋 and — among it, as it is.
func termSafe(s string) string { return termtext.Escape(s) }

// shellQuote quotes s as one argument of a command line to paste
// (termtext.ShellQuote): as it is, in '…', or in $'…' with termSafe's
// escapes.
func shellQuote(s string) string { return termtext.ShellQuote(s) }
