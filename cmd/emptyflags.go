package cmd

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// emptyFlagsOwnCheck are the flags whose own check refuses an empty value,
// with a message that says more than refuseEmptyFlags would: --json lists
// the available fields, --user names the user-name rule, --store asks for
// a postgres:// URL. All three are exit 2.
var emptyFlagsOwnCheck = map[string]bool{"json": true, "user": true, "store": true}

// blankFlagMeanings are the flags whose blank value (white space only, not
// empty) the docs give a meaning: a blank --reason is no reason, which
// start asks for and resume asks for again (docs/cli.md "Conventions",
// "resume").
var blankFlagMeanings = map[string]bool{"reason": true}

// refuseEmptyFlags refuses, with ErrInvalid naming the flag, every string
// flag of c (its own and the global ones) that was given on the command
// line with an empty value, or a blank one (white space only), but for
// the flags of emptyFlagsOwnCheck and the blank values blankFlagMeanings
// allows: such a value is a script's unset variable (`--batch "$B"`), never
// a choice of the default. It runs before anything is opened or written
// (docs/cli.md "Conventions"). A flag not given is not looked at: its
// default applies, and so does an environment variable that is set but
// empty.
func refuseEmptyFlags(c *cobra.Command) error {
	var err error
	c.Flags().Visit(func(f *pflag.Flag) {
		if err != nil || emptyFlagsOwnCheck[f.Name] {
			return
		}
		var values []string
		switch f.Value.Type() {
		case "string":
			values = []string{f.Value.String()}
		case "stringArray", "stringSlice":
			if s, ok := f.Value.(pflag.SliceValue); ok {
				values = s.GetSlice()
			}
			if len(values) == 0 {
				values = []string{""} // --status= given, nothing in it
			}
		default:
			return // numbers, booleans and durations refuse "" as they parse
		}
		for _, v := range values {
			switch {
			case v == "":
				err = usageErr("--%s must not be empty: give it a value, or leave the flag out", f.Name)
			case strings.TrimSpace(v) == "" && !blankFlagMeanings[f.Name]:
				err = usageErr("--%s must not be blank: give it a value, or leave the flag out", f.Name)
			}
		}
	})
	return err
}
