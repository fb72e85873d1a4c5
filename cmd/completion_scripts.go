package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// completionBashLong is the help of `completion bash`: the script works in
// a bash with or without the bash-completion package.
const completionBashLong = `Generate the autocompletion script for bash.

It works in any bash 4 or later, with or without the bash-completion
package: without it, words are split at blanks only and file names complete
without filtering.

To load completions in your current shell session:

	source <(assistant completion bash)

To load completions for every new session, execute once:

	echo 'source <(assistant completion bash)' >> ~/.bashrc

or, with the bash-completion package:

	assistant completion bash > /etc/bash_completion.d/assistant`

// bashInitCompletion is the end of the script's init function that needs
// bash-completion's _get_comp_words_by_ref; bashWordsFallback replaces it.
const bashInitCompletion = `    COMPREPLY=()
    _get_comp_words_by_ref "$@" cur prev words cword
}`

// bashWordsFallback sets the caller's cur, prev, words and cword as
// _get_comp_words_by_ref -n =: does, from COMP_LINE up to the cursor, when
// bash-completion is not loaded; and defines the file completion the
// script calls, _filedir's or compgen's.
const bashWordsFallback = `    COMPREPLY=()
    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref "$@" cur prev words cword
        return
    fi
    # Without the bash-completion package: the line up to the cursor split
    # at blanks only, so --flag=value and a:b stay one word.
    local line=${COMP_LINE:0:COMP_POINT}
    read -ra words <<< "$line"
    if [[ ${#words[@]} -eq 0 || $line == *[[:space:]] ]]; then
        words+=("")
    fi
    cword=$(( ${#words[@]} - 1 ))
    cur=${words[cword]}
    prev=
    if (( cword > 0 )); then
        prev=${words[cword-1]}
    fi
}

__%[1]s_filedir()
{
    if declare -F _filedir >/dev/null 2>&1; then
        _filedir "$@"
        return
    fi
    local IFS=$'\n'
    if [[ ${1-} == -d ]]; then
        COMPREPLY+=($(compgen -d -- "$cur"))
    else
        COMPREPLY+=($(compgen -f -- "$cur"))
    fi
}`

// bashFiledirCall is a call of bash-completion's _filedir in the script,
// compiled when a bash script is made, not at start-up.
var bashFiledirCall = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[\s"])_filedir\b`) })

// bashScript is cobra's bash completion script of root (descriptions
// unless noDesc) made to work without the bash-completion package.
// Errors: the script no longer has the part it replaces (a cobra whose
// script changed), so the command fails rather than print a script that
// fails in a plain bash.
func bashScript(root *cobra.Command, noDesc bool) (string, error) {
	var b bytes.Buffer
	if err := root.GenBashCompletionV2(&b, !noDesc); err != nil {
		return "", err
	}
	s := b.String()
	if strings.Count(s, bashInitCompletion) != 1 {
		return "", errors.New("completion bash: the generated script has no init function to complete without the bash-completion package")
	}
	s = bashFiledirCall().ReplaceAllString(s, "${1}__"+root.Name()+"_filedir")
	s = strings.Replace(s, bashInitCompletion, fmt.Sprintf(bashWordsFallback, root.Name()), 1)
	return s, nil
}

// fishSplitResult is the fish script's split of its one completion into
// value and description, which fish's string split takes for options when
// the value starts with a dash (--status=waiting); fishSplitResultFixed
// ends the options first.
const (
	fishSplitResult      = "string split --max 1 \\t $__%[1]s_comp_results[1]"
	fishSplitResultFixed = "string split --max 1 -- \\t $__%[1]s_comp_results[1]"
)

// fishScript is cobra's fish completion script of root (descriptions
// unless noDesc) with a completion that starts with a dash completed too.
// Errors: the script no longer has the part it fixes.
func fishScript(root *cobra.Command, noDesc bool) (string, error) {
	var b bytes.Buffer
	if err := root.GenFishCompletion(&b, !noDesc); err != nil {
		return "", err
	}
	split := fmt.Sprintf(fishSplitResult, root.Name())
	if strings.Count(b.String(), split) != 1 {
		return "", errors.New("completion fish: the generated script has no split of a single completion to fix")
	}
	return strings.Replace(b.String(), split, fmt.Sprintf(fishSplitResultFixed, root.Name()), 1), nil
}

// fixCompletionScripts makes cobra's `completion bash` and `completion
// fish` commands (made by InitDefaultCompletionCmd) print bashScript and
// fishScript, and the bash help say that it needs no bash-completion.
func fixCompletionScripts(root *cobra.Command) {
	for _, sh := range []struct {
		name   string
		script func(*cobra.Command, bool) (string, error)
	}{{"bash", bashScript}, {"fish", fishScript}} {
		c, _, err := root.Find([]string{"completion", sh.name})
		if err != nil || c.Name() != sh.name {
			continue
		}
		if sh.name == "bash" {
			c.Long = completionBashLong
		}
		script := sh.script
		c.RunE = func(c *cobra.Command, _ []string) error {
			noDesc, _ := c.Flags().GetBool("no-descriptions")
			s, err := script(c.Root(), noDesc)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.OutOrStdout(), s)
			return err
		}
	}
}
