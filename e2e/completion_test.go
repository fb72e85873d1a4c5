package e2e

// docs/cli.md "Completion": the scripts of `assistant completion bash|zsh|
// fish` complete commands, task ids and flag values in the shell itself,
// bash with or without the bash-completion package.

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// needShell is the path of shell, or the test is skipped saying it is not
// installed; in CI (CI=true, where .ci/run installs it) it fails instead.
func needShell(t *testing.T, shell string) string {
	t.Helper()
	p, err := exec.LookPath(shell)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; .ci/run installs it for the completion tests", shell)
		}
		t.Skipf("%s is not installed: its completion is not tested here", shell)
	}
	return p
}

// completionCases are lines typed up to the cursor and a completion each
// must offer: a command, a task id of the data dir, a flag's value.
var completionCases = []struct{ name, line, want string }{
	{"Command", "assistant li", "list"},
	{"TaskID", "assistant show ret", "ret-1"},
	{"StatusValue", "assistant list --status=wa", "waiting"},
	{"ActionValue", "assistant resume ret-1 --action ", "approve"},
	{"Subcommand", "assistant orders im", "import"},
}

// completionDir is a work dir whose ./data holds the task ret-1.
func completionDir(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	mustRun(t, work+"/data", "start", "ret-1", "A3003", "--reason", "size")
	return work
}

// TestCompletionBashWithoutBashCompletion sources the bash script in a bash
// started with --norc (no bash-completion package loaded) and completes
// each line as bash would on TAB: the offer is there, and nothing is
// missing (no "command not found").
func TestCompletionBashWithoutBashCompletion(t *testing.T) {
	t.Parallel()
	needShell(t, "bash")
	work := completionDir(t)
	script := work + "/assistant.bash"
	if out, errOut, code := runEnv(t, work, nil, "completion", "bash"); code != 0 {
		t.Fatalf("completion bash: exit %d, stderr %q", code, errOut)
	} else if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	// As bash calls the completion function on TAB: COMP_* set, COMP_TYPE
	// 9 (a plain TAB). compopt outside a real TAB press complains: that
	// line is bash's, not the script's.
	const complete = `source "$1"
COMP_LINE=$2; COMP_POINT=${#COMP_LINE}; COMP_TYPE=9
read -ra COMP_WORDS <<< "$COMP_LINE"; [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
__start_assistant 2> >(grep -v 'compopt: not currently executing completion function' >&2)
printf '%s\n' "${COMPREPLY[@]}"`
	for _, tc := range completionCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := exec.Command("bash", "--norc", "--noprofile", "-c", complete, "bash", script, tc.line)
			c.Dir = work
			out, err := c.Output()
			var errOut string
			if ee, ok := err.(*exec.ExitError); ok {
				errOut = string(ee.Stderr)
			}
			if err != nil || !hasLine(string(out), tc.want) {
				t.Errorf("bash completing %q offered %q (err %v, stderr %q); want %q", tc.line, out, err, errOut, tc.want)
			}
		})
	}
}

// TestCompletionFish loads the fish script and asks fish what it offers for
// each line (complete -C).
func TestCompletionFish(t *testing.T) {
	t.Parallel()
	fish := needShell(t, "fish")
	work := completionDir(t)
	for _, tc := range completionCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := exec.Command(fish, "--no-config", "-c", "assistant completion fish | source; complete -C $argv[1]", tc.line)
			c.Dir = work
			out, err := c.CombinedOutput()
			if err != nil || !hasFirstField(string(out), tc.want) {
				t.Errorf("fish completing %q offered %q (%v); want %q", tc.line, out, err, tc.want)
			}
		})
	}
}

// TestCompletionZsh loads the zsh script under compinit in a zsh without
// startup files: it parses, defines its completion function and registers
// it for assistant; what it offers comes from the same requests
// (assistant __complete) the bash and fish scripts make.
func TestCompletionZsh(t *testing.T) {
	t.Parallel()
	zsh := needShell(t, "zsh")
	work := completionDir(t)
	c := exec.Command(zsh, "-f", "-c", `autoload -U compinit && compinit -u -D && source <(assistant completion zsh) && print -r -- $_comps[assistant] && whence -w _assistant`)
	c.Dir = work
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "_assistant\n") || !strings.Contains(string(out), "_assistant: function") {
		t.Fatalf("zsh loading the completion script: %v; printed %q; want _assistant registered for assistant", err, out)
	}
	for _, tc := range completionCases {
		words := strings.Fields(tc.line)[1:]
		if strings.HasSuffix(tc.line, " ") {
			words = append(words, "")
		}
		out, errOut, code := runEnv(t, work, nil, append([]string{"__complete"}, words...)...)
		if code != 0 || !hasFirstField(out, tc.want) {
			t.Errorf("__complete %q (what the zsh script asks): exit %d, %q, stderr %q; want %q", words, code, out, errOut, tc.want)
		}
	}
}

// hasLine: one of text's lines is want.
func hasLine(text, want string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == want {
			return true
		}
	}
	return false
}

// hasFirstField: one of text's lines starts with want, or a flag's
// --name=want as fish offers it, and then a tab or its end (a completion
// and its description).
func hasFirstField(text, want string) bool {
	for _, l := range strings.Split(text, "\n") {
		if f, _, _ := strings.Cut(l, "\t"); f == want || strings.HasPrefix(f, "--") && strings.HasSuffix(f, "="+want) {
			return true
		}
	}
	return false
}
