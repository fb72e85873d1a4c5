package cmd

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"assistant/flow/returns"
	"assistant/internal/termtext"
)

// fail prints one line on stderr and, with json output, the error object on
// stdout. The line is the error's message and its hint (returns.Describe,
// worded by cliWords) joined by returns.Line: "message; hint", with
// cobra's multi-line texts folded into one and every backquoted
// `assistant …` command carrying the global flags that differ from their
// defaults, so it can be pasted as it is. The error object holds the
// message and the hint apart, the hint only when there is one.
func (a *app) fail(err error, code int) {
	message, hint := returns.Describe(err, cliWords)
	message, cobraHint := a.oneLine(message)
	if hint = a.pasteable(hint); hint == "" {
		hint = cobraHint
	}
	a.note(returns.Line(message, hint))
	if !a.reported && (a.output == "json" || (a.output == "" && !isTerminal(a.stdout))) {
		// The error object is printed whole, whatever --json selects.
		obj := &object{keys: []string{"code", "message"}, vals: []any{errorCodeOf(err, code), message}}
		if hint != "" {
			obj.keys, obj.vals = append(obj.keys, "hint"), append(obj.vals, hint)
		}
		_ = writeIndented(plainWriter(a.stdout), (&object{keys: []string{"error"}, vals: []any{obj}}).withSchemaVersion(), "  ")
	}
}

// note prints msg on stderr as one line a terminal cannot act on: "assistant: "
// and msg with its controls, bidi and invisible characters escaped
// (termtext.EscapeControls, which keeps the $'…' of a quoted argument in a
// hint as it is).
func (a *app) note(msg string) {
	fmt.Fprintf(a.stderr, "assistant: %s\n", termtext.EscapeControls(msg))
}

// unknownCommand matches cobra's error for an unknown command (its
// suggestions are switched off in newRoot and made here instead),
// compiled on the first error, not at start-up.
var unknownCommand = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^unknown command "(.*)" for "(.*)"`)
})

// oneLine is an error's message as one line for a person (see fail), and
// the hint cobra's refusal of an unknown command gets here ("" for any
// other message): the commands to look at, or the names it may have
// meant.
func (a *app) oneLine(msg string) (line, hint string) {
	if m := unknownCommand().FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("unknown command %q", m[1])
		if strings.Contains(m[2], " ") {
			msg += fmt.Sprintf(" for %q", m[2]) // a group's subcommand: say which group
		}
		var hints []string
		if a.suggest != nil {
			hints = a.suggest(m[2], m[1])
		}
		switch len(hints) {
		case 0:
			hint = fmt.Sprintf("run `%s --help` for the commands", m[2])
		case 1:
			hint = fmt.Sprintf("did you mean %q?", hints[0])
		default:
			quoted := make([]string, len(hints))
			for i, h := range hints {
				quoted[i] = fmt.Sprintf("%q", h)
			}
			hint = fmt.Sprintf("did you mean %s or %s?", strings.Join(quoted[:len(quoted)-1], ", "), quoted[len(quoted)-1])
		}
	}
	var parts []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, line)
		}
	}
	return a.pasteable(strings.Join(parts, "; ")), a.pasteable(hint)
}

// pasteable is msg with every command it quotes (`assistant …`) given the
// program's name and the global flags of this command
// (nextCommandPrefix), so that it pastes as it is: what a person reads in
// an error, a note or a row's report.
func (a *app) pasteable(msg string) string {
	if prefix := a.nextCommandPrefix(); prefix != cliWords.prog {
		msg = strings.ReplaceAll(msg, "`"+cliWords.prog+" ", "`"+prefix+" ")
	}
	return msg
}

func isTerminal(w io.Writer) bool {
	f, ok := plainWriter(w).(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// render prints a view as JSON or as a card for a person, the commands
// its error quotes worded as this program was run (pasteable).
func (a *app) render(v *returns.View) error {
	if v != nil && v.Error != nil {
		e := *v.Error
		e.Message, e.Hint = a.pasteable(e.Message), a.pasteable(e.Hint)
		c := *v
		c.Error = &e
		v = &c
	}
	if a.output == "json" {
		return writeJSON(a.stdout, v)
	}
	return writeCard(a.stdout, v, a.nextCommandPrefix(), a.user)
}
