package returns

import "assistant/internal/termtext"

// ShellQuote quotes s as one argument of a command hint (an error's
// "run `assistant show TASK`"), so the hint can be pasted as it is into a
// shell whatever s holds: s as it is when it is plain, in '…' when it
// holds shell syntax ($, ;, ', spaces, non-ASCII), in $'…' with escapes
// when it holds controls, bidi or invisible characters. Every hint of
// this package quotes its arguments with it (termtext.ShellQuote).
func ShellQuote(s string) string { return termtext.ShellQuote(s) }
