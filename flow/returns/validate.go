package returns

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"assistant/internal/termtext"
)

// Limits of the return flow. DefaultDraftTTL comes from business (300 s).
const (
	MaxReasonRunes = 500
	MaxTaskIDBytes = 128
	MinDraftTTL    = time.Second
	MaxDraftTTL    = 7 * 24 * time.Hour
)

// ValidReason returns nil when r (already trimmed) may be a return reason:
// not blank, valid UTF-8, at most MaxReasonRunes runes, no control
// characters, and at least one visible character (a reason of zero-width
// spaces alone says nothing a person can read).
func ValidReason(r string) error {
	switch {
	case strings.TrimSpace(r) == "":
		return errors.New("the reason must not be blank")
	case !utf8.ValidString(r):
		return errors.New("the reason is not valid UTF-8")
	case utf8.RuneCountInString(r) > MaxReasonRunes:
		return fmt.Errorf("the reason is longer than %d characters", MaxReasonRunes)
	case strings.ContainsFunc(r, unicode.IsControl):
		return errors.New("the reason contains control characters")
	case !strings.ContainsFunc(r, visible):
		return errors.New("the reason has no visible character (only white space and invisible ones such as zero-width spaces)")
	}
	return nil
}

// visible reports whether r prints as something: not white space, not a
// control character, not an invisible one (termtext.Invisible: zero-width
// spaces, joiners, bidi marks, the Braille blank, …).
func visible(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.IsControl(r) && !termtext.Invisible(r)
}

// ValidTaskID returns nil when id may name a task: 1 to 128 bytes of valid
// UTF-8 with no white space, no control or invisible characters
// (termtext.Invisible: zero-width space, bidi overrides, Hangul fillers,
// the Braille blank, …: an id that prints as another, or as nothing), no
// '/' or '\', not
// "." or "..", and not starting with '-'. Task ids appear in file-like
// places (logs, shell commands), hence the rule: a printed next command
// with an id that starts with '-' would be read as a flag when pasted.
// Order ids follow the same rule.
func ValidTaskID(id string) error {
	switch {
	case id == "":
		return errors.New("task id must not be empty")
	case strings.HasPrefix(id, "-"):
		return fmt.Errorf("task id %s must not start with '-': a command line would read it as a flag", termtext.Quote(id))
	case len(id) > MaxTaskIDBytes:
		return fmt.Errorf("task id is %d bytes; at most %d are allowed", len(id), MaxTaskIDBytes)
	case !utf8.ValidString(id):
		return errors.New("task id is not valid UTF-8")
	case id == "." || id == "..":
		return fmt.Errorf("task id %s is not allowed", termtext.Quote(id))
	case strings.ContainsFunc(id, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || termtext.Invisible(r) || r == '/' || r == '\\'
	}):
		return fmt.Errorf("task id %s must not contain spaces, control or invisible characters, '/' or '\\'", termtext.Quote(id))
	}
	return nil
}
