package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// twoValues are two different values a flag of each type takes.
var twoValues = map[string][2]string{
	"bool":     {"true", "false"},
	"int":      {"1", "2"},
	"duration": {"1s", "2s"},
	"string":   {"a", "b"},
}

// Every single-valued flag of every command, given twice with different
// values, is refused before anything is opened: exit 2, one line naming
// the flag, no data dir made. The same value twice is accepted by the
// parser; a list flag stays repeatable.
func TestSingleValuedFlagGivenTwiceIsRefused(t *testing.T) {
	root := NewRootCmd(&bytes.Buffer{}, &bytes.Buffer{}, nil)
	type flagCase struct {
		path []string
		flag *pflag.Flag
	}
	var cases []flagCase
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if _, list := f.Value.(pflag.SliceValue); !list && f.Name != "help" {
					cases = append(cases, flagCase{strings.Fields(c.CommandPath())[1:], f})
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if len(cases) < 30 {
		t.Fatalf("found %d single-valued flags; the walk missed commands", len(cases))
	}
	for _, tc := range cases {
		name := strings.Join(append(tc.path, "--"+tc.flag.Name), " ")
		t.Run(name, func(t *testing.T) {
			vals, ok := twoValues[tc.flag.Value.Type()]
			if !ok {
				t.Fatalf("flag type %s has no two test values", tc.flag.Value.Type())
			}
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"--data", data}, tc.path...)
			if tc.flag.Name == "data" {
				args = tc.path
			}
			args = append(args, "--"+tc.flag.Name+"="+vals[0], "--"+tc.flag.Name+"="+vals[1])
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), args, &stdout, &stderr, nil)
			if code != ExitUsage || !strings.Contains(stderr.String(), "given twice") || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("%v: exit %d, stderr %q; want exit %d, one line saying the flag was given twice", args, code, stderr.String(), ExitUsage)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Errorf("%v made the data dir (%v)", args, err)
			}
			// The hint's command repeats no global flag: one of them may
			// hold the refused value.
			if help := "; run `" + strings.Join(append([]string{DefaultProgram}, tc.path...), " ") + " --help` for its flags\n"; !strings.HasSuffix(stderr.String(), help) {
				t.Errorf("%v: stderr %q; want it to end %q", args, stderr.String(), help)
			}
		})
	}
	for name, args := range map[string][]string{
		"SameValueTwice":    {"list", "--limit", "3", "--limit", "3", "--help"},
		"ListFlagRepeated":  {"list", "--status", "waiting", "--status", "done", "--help"},
		"ColumnFlagRepeats": {"orders", "import", "f.csv", "--column", "order_id=id", "--column", "user=who", "--help"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Run(context.Background(), append([]string{"--data", t.TempDir()}, args...), &stdout, &stderr, nil); code != ExitOK {
				t.Errorf("%v: exit %d, stderr %q; want 0", args, code, stderr.String())
			}
		})
	}
}

// A flag given twice is refused quoting both values as they were typed
// ("1d", not the duration read back); --store, whose values may hold a
// password in any spelling (a URL, a mistyped one, keyword=value), is
// refused quoting neither, on stderr and in the JSON error object alike.
func TestRefusedRepeatedFlagQuotesValuesAsTyped(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
		not  []string
	}{
		"Duration": {[]string{"approvers", "token", "bob", "--expires", "1d", "--expires", "2d"}, `("1d", then "2d")`, []string{"24h0m0s"}},
		"StorePassword": {[]string{"--store", "postgres://u:sekrit@127.0.0.1:1/db", "--store", "postgres://u:sekrit2@127.0.0.1:1/db?password=p3&sslmode=disable", "list"},
			"--store given twice with different values: give it once", []string{"sekrit", "p3"}},
		"StoreQueryPassword": {[]string{"--store", "postgresql:///db?host=/tmp&password=hush", "--store", "postgresql:///db2?password=hush2&sslpassword=keyhush", "list"},
			"--store given twice with different values: give it once (neither is shown", []string{"hush", "db2"}},
		"StoreMistyped": {[]string{"--store", "postgres://u:sekrit@127.0.0.1:1/db", "--store", "postgress://u:sekrit2@127.0.0.1:1/db", "list"},
			"--store given twice", []string{"sekrit"}},
		"StoreUpperCase": {[]string{"--store=POSTGRES://u:sekrit@h/db", "--store=POSTGRES://u:sekrit2@h/db", "list"},
			"--store given twice", []string{"sekrit"}},
		"StoreKeywordForm": {[]string{"--store", "host=h port=1 password=sekrit", "--store", "host=h password=sekrit2", "list"},
			"--store given twice", []string{"sekrit"}},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(context.Background(), append([]string{"--data", filepath.Join(t.TempDir(), "d"), "--output", "json"}, tc.args...), &stdout, &stderr, nil)
			if code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d and %s", tc.args, code, stderr.String(), ExitUsage, tc.want)
			}
			for _, secret := range tc.not {
				if strings.Contains(stderr.String(), secret) || strings.Contains(stdout.String(), secret) {
					t.Errorf("%v: the output holds %q:\n%s%s", tc.args, secret, stdout.String(), stderr.String())
				}
			}
		})
	}
}
