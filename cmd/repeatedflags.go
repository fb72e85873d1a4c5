package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// onceValue is a single-valued flag's pflag.Value that takes one value
// only: the same flag given again with another value is refused (pflag
// alone lets the last one win, so `--reason a --reason b` would quietly
// drop a). The same value again is accepted. Type and String are the
// wrapped value's, so every check that reads a flag by its type
// (refuseEmptyFlags) reads it as before.
type onceValue struct {
	pflag.Value
	set   bool
	first string // the value as the flag reads it back
	typed string // the value as it was typed, for the refusal
	// secret: the values may hold a password (--store), so the refusal
	// quotes neither, and refused marks it for flagRefusal, which drops
	// the value pflag quotes before it.
	secret, refused bool
}

// Set sets the wrapped value the first time; later it accepts only the
// value given first (compared as the flag reads it back, so "1s" and
// "1000ms" of a duration are the same value). Errors: the wrapped value's,
// or the flag given twice with different values (the flag error, exit 2),
// which quotes both values as they were typed.
func (v *onceValue) Set(s string) error {
	if !v.set {
		if err := v.Value.Set(s); err != nil {
			return err
		}
		v.set, v.first, v.typed = true, v.Value.String(), s
		return nil
	}
	if err := v.Value.Set(s); err != nil {
		return err
	}
	if again := v.Value.String(); again != v.first {
		_ = v.Value.Set(v.first)
		if v.secret {
			v.refused = true
			return errors.New("given twice with different values: give it once")
		}
		return fmt.Errorf("given twice with different values (%q, then %q): give it once", v.typed, s)
	}
	return nil
}

// onceBool is onceValue of a boolean flag: pflag reads IsBoolFlag to tell
// a flag that needs no value (`--exit-status` alone) and to print its
// default in help as it does for booleans.
type onceBool struct{ *onceValue }

// IsBoolFlag reports true: the wrapped value is a boolean flag's.
func (onceBool) IsBoolFlag() bool { return true }

// secretFlags are the flags whose values may hold a password: a refusal
// never quotes them.
var secretFlags = map[string]bool{"store": true}

// secretRefused is the name of the secret flag of c (secretFlags) that
// onceValue refused as given twice, or "".
func secretRefused(c *cobra.Command) string {
	for name := range secretFlags {
		if f := c.Flag(name); f != nil {
			if v, ok := f.Value.(*onceValue); ok && v.refused {
				return name
			}
		}
	}
	return ""
}

// refuseRepeatedFlags makes every single-valued flag of root and its
// commands (their own and the persistent ones) take one value only
// (onceValue, docs/cli.md "Conventions"); flags that take a list
// (--column, --default, --status: pflag.SliceValue) stay repeatable. It
// runs once the command tree is built, before the command line is parsed.
func refuseRepeatedFlags(root *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		switch f.Value.(type) {
		case *onceValue, onceBool, pflag.SliceValue:
			return
		}
		once := &onceValue{Value: f.Value, secret: secretFlags[f.Name]}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			f.Value = onceBool{once}
			return
		}
		f.Value = once
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// A command's flags are its own (Flags) and its persistent ones;
		// those it inherits are its parents' persistent flags, wrapped
		// there. Not LocalNonPersistentFlags: it would merge the parents'
		// flags into every command of the tree, which cobra does at parse
		// for the one command that runs.
		c.PersistentFlags().VisitAll(wrap)
		c.Flags().VisitAll(wrap)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
