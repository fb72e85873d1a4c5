package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"assistant/flow/returns"
)

// fail prints one line on stderr and, with json output, the error object on
// stdout.
func (a *app) fail(err error, code int) {
	// One line, whatever the error (a joined error has several).
	fmt.Fprintf(a.stderr, "assistant: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
	if !a.reported && (a.output == "json" || (a.output == "" && !isTerminal(a.stdout))) {
		_ = writeJSON(a.stdout, map[string]any{"error": map[string]string{"code": errorCodeOf(err, code), "message": err.Error()}})
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// render prints a view as JSON or as a card for a person.
func (a *app) render(v *returns.View) error {
	if a.output == "json" {
		return writeJSON(a.stdout, v)
	}
	return writeCard(a.stdout, v, a.nextCommandPrefix())
}
