package cmd

import (
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"assistant/business"
	"assistant/flow/returns"
	"assistant/flow/variants"
)

// Environment variables that stand in for global flags (docs/cli.md
// "Global flags"). A flag given on the command line wins; a variable that
// is set but empty counts as unset.
const (
	EnvData  = "ASSISTANT_DATA"
	EnvStore = "ASSISTANT_STORE"
	EnvUser  = "ASSISTANT_USER"
	// EnvHost names this machine in leases (returns.EnvHost).
	EnvHost = returns.EnvHost
)

// globals are the global flags that shape every command's output: --json
// and what it selects.
type globals struct {
	// jsonFields is --json FIELDS as given ("" when not given).
	jsonFields string
	// version is --version.
	version bool
	// suggest names the subcommands of the command at path ("assistant
	// orders") close to a mistyped one (cobra's SuggestionsFor); fail
	// prints them on one line.
	suggest func(path, typed string) []string
}

// addGlobalFlags adds --json and --version to root and makes the unknown
// command error one fail can print on one line.
func (a *app) addGlobalFlags(root *cobra.Command) {
	root.PersistentFlags().StringVar(&a.jsonFields, "json", "", "print JSON with only these comma-separated top-level fields (for list, orders list and recover: the list whole, or fields of each element); implies --output json")
	// --version is root's own flag, run by root's RunE rather than by
	// cobra's version template: that way the global flags are checked
	// first (--version --json bogus is exit 2: applyGlobals refuses --json
	// for the root command).
	root.Flags().BoolVar(&a.version, "version", false, "print the version and the VCS revision this binary was built from")
	root.RunE = func(c *cobra.Command, _ []string) error {
		if !a.version {
			return c.Help()
		}
		_, err := fmt.Fprintln(a.stdout, versionString(debug.ReadBuildInfo()))
		return err
	}
	root.DisableSuggestions = true // fail prints them, on one line
	root.SuggestionsMinimumDistance = 2
	a.suggest = func(path, typed string) []string {
		c, _, err := root.Find(strings.Fields(path)[1:])
		if err != nil || c == nil {
			return nil
		}
		return c.SuggestionsFor(typed)
	}
}

// refuseUnknownSubcommands makes every command group under root (orders,
// approvers, completion: a command with subcommands and nothing to run of
// its own) refuse an argument that names none of its subcommands, with
// cobra's "unknown command" error (exit 2; fail adds "did you mean"),
// instead of printing its help and exiting 0. Alone, a group prints its
// help. Every command's check of its arguments, cobra's own included,
// refuses with a usage error (usageArgs). It runs after every command is
// added (cobra's completion command too, which it adds first).
func refuseUnknownSubcommands(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	fixCompletionScripts(root)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.HasSubCommands() && !sub.Runnable() {
				sub.Args = cobra.NoArgs // its error: unknown command "lst" for "assistant orders"
				sub.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
				sub.SuggestionsMinimumDistance = root.SuggestionsMinimumDistance
			}
			if sub.Args != nil {
				sub.Args = usageArgs(sub.Args)
			}
			walk(sub)
		}
	}
	walk(root)
}

// applyGlobals reads the environment for flags not given and sets up
// --json for command c, before it runs. Errors: ErrInvalid.
func (a *app) applyGlobals(c *cobra.Command, args []string) error {
	a.applyEnv(c)
	path := commandPath(c)
	usesData := path != "help" && path != "completion" && !strings.HasPrefix(path, "completion ")
	if v := os.Getenv(EnvData); usesData && v != "" && a.data == v && strings.TrimSpace(v) == "" {
		// As --data " " is (refuseEmptyFlags): a blank directory name is
		// a mistake, not a directory to make. Set but empty stays unset.
		return usageErr("%s must not be blank: give it a directory, or unset it", EnvData)
	}
	if !c.Flags().Changed("json") {
		return nil
	}
	switch a.output {
	case "", "json":
		a.output = "json"
	default:
		return usageErr("--json prints JSON; it does not go with --output %s", a.output)
	}
	sel, err := selectionFor(c, args, a.jsonFields)
	if err != nil {
		return err
	}
	a.stdout = &selectingWriter{Writer: a.stdout, sel: sel}
	return nil
}

// applyEnv sets --data, --store and --user from ASSISTANT_DATA,
// ASSISTANT_STORE and ASSISTANT_USER when the flag was not given and the
// variable is not empty. A --data flag keeps ASSISTANT_STORE out, and a
// --store flag ASSISTANT_DATA: flags win over env.
func (a *app) applyEnv(c *cobra.Command) {
	if v := os.Getenv(EnvData); v != "" && !c.Flags().Changed("data") && !c.Flags().Changed("store") {
		a.data = v
	}
	a.storeFromFlag = c.Flags().Changed("store")
	if v := os.Getenv(EnvStore); v != "" && !a.storeFromFlag && !c.Flags().Changed("data") {
		a.store = v
	}
	if v := os.Getenv(EnvUser); v != "" && !c.Flags().Changed("user") {
		a.user = v
	}
}

// jsonShape is what a command prints as JSON: a sample of it, to check a
// --json selection against before the command runs, and the key of its list
// when --json selects fields of each element of a list. The sample is of
// what the command prints with its flags and arguments, as parsed (c,
// args): show prints a rows report with --rows and a task's view without.
type jsonShape struct {
	sample func(c *cobra.Command, args []string) any
	list   string
}

func shapeOf(v any) jsonShape {
	return jsonShape{sample: func(*cobra.Command, []string) any { return v }}
}

func listShape(key string, items any) jsonShape {
	return jsonShape{sample: func(*cobra.Command, []string) any { return map[string]any{key: items} }, list: key}
}

// showShape is show's output: the rows report of a batch or a decide run
// with --rows (showRows), else the task's view (a batch's and a decide
// run's too).
var showShape = jsonShape{sample: func(c *cobra.Command, _ []string) any {
	if rows, err := c.Flags().GetBool("rows"); err == nil && rows {
		return returns.RowsView{}
	}
	return returns.View{}
}}

// jsonShapes are the JSON outputs of the commands (docs/json.md), by
// command path under the root. A command that prints JSON and is not here
// has its --json fields checked when it prints.
var jsonShapes = map[string]jsonShape{
	"start":            shapeOf(returns.View{}),
	"show":             showShape,
	"resume":           shapeOf(returns.View{}),
	"wait":             shapeOf(returns.View{}),
	"stop":             shapeOf(returns.View{}),
	"batch":            shapeOf(returns.View{}),
	"decide":           shapeOf(returns.DecideView{}),
	"list":             listShape("tasks", []returns.TaskSummary{}),
	"history":          shapeOf(returns.History{}),
	"recover":          listShape("recovered", []returns.Recovered{}),
	"prune":            shapeOf(returns.PruneReport{}),
	"verify":           shapeOf(returns.VerifyReport{}),
	"backup":           shapeOf(returns.BackupResult{}),
	"orders import":    shapeOf(business.ImportResult{}),
	"orders list":      listShape("orders", []returns.OrderLine{}),
	"orders show":      shapeOf(returns.OrderDetail{}),
	"approvers grant":  shapeOf(returns.GrantResult{}),
	"approvers revoke": shapeOf(returns.GrantResult{}),
	"approvers list":   shapeOf(returns.Approvers{}),
	"approvers token": {sample: func(c *cobra.Command, _ []string) any {
		if id, err := c.Flags().GetString("revoke"); err == nil && id != "" {
			return returns.RevokedToken{}
		}
		return returns.NewToken{}
	}},
	"approvers tokens": listShape("tokens", []business.AccessToken{}),
	"variants": {sample: func(_ *cobra.Command, args []string) any {
		if len(args) > 0 && args[0] == "parallel" {
			return variants.ParallelResult{}
		}
		return variants.StaticResult{}
	}},
}

// noJSON are the commands that print no JSON (cobra's own among them).
var noJSON = []string{"", "orders", "approvers", "serve", "help", "completion", "completion bash", "completion zsh", "completion fish", "completion powershell"}

// commandPath is c's path under the root ("orders import"; "" for the
// root itself), the key of jsonShapes and noJSON.
func commandPath(c *cobra.Command) string {
	return strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), c.Root().Name()))
}

// selectionFor parses --json FIELDS for command c and checks the fields
// against the command's shape. Errors: ErrInvalid (no field, an unknown
// one, a command that prints no JSON).
func selectionFor(c *cobra.Command, args []string, spec string) (*jsonSelection, error) {
	path := commandPath(c)
	sel := &jsonSelection{}
	for f := range strings.SplitSeq(spec, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(sel.fields, f) {
			sel.fields = append(sel.fields, f)
		}
	}
	shape, known := jsonShapes[path]
	if path == "" {
		return nil, usageErr("--json: %q and its --version print no JSON", c.CommandPath())
	}
	if slices.Contains(noJSON, path) {
		return nil, usageErr("--json: %q prints no JSON", c.CommandPath())
	}
	if !known {
		if len(sel.fields) == 0 {
			return nil, usageErr("--json needs comma-separated field names")
		}
		return sel, nil // checked against what the command prints
	}
	sel.list = shape.list
	sample := shape.sample(c, args)
	if len(sel.fields) == 0 {
		have, _ := jsonFieldsOf(sample, sel.list)
		return nil, usageErr("--json needs comma-separated field names; available: %s", strings.Join(have, ", "))
	}
	if sel.list != "" {
		// --json selects top-level fields (docs/json.md "--json
		// FIELDS"). A list command's top level is its list (and
		// schema_version): naming only those selects them whole; other
		// names select fields of each element.
		top, _ := jsonFieldsOf(sample, "")
		if !slices.ContainsFunc(sel.fields, func(f string) bool { return !slices.Contains(top, f) }) {
			sel.list = ""
		} else if err := sel.check(sample); err != nil {
			return nil, fmt.Errorf("%w (or the top-level fields: %s)", err, strings.Join(top, ", "))
		}
	}
	if err := sel.check(sample); err != nil {
		return nil, err
	}
	sel.checked = true
	return sel, nil
}

// versionString is what --version prints: the module version ("(devel)"
// for a build from a checkout), the VCS revision and time the binary was
// built from and whether the tree had uncommitted changes, and the Go
// version. A build without a VCS stamp says so, with the causes: go run,
// -buildvcs=false, a copy outside git, or a linked git worktree (go looks
// for a .git directory, and a linked worktree has a .git file).
func versionString(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "assistant (unknown version: no build information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "assistant %s", version)
	if rev == "" {
		b.WriteString(" (no VCS stamp: built with go run, with -buildvcs=false, outside a git checkout or in a linked git worktree, which go does not stamp)")
	} else {
		fmt.Fprintf(&b, " rev %.12s", rev)
		if at != "" {
			fmt.Fprintf(&b, " %s", at)
		}
		if modified == "true" {
			b.WriteString(" (modified)")
		}
	}
	fmt.Fprintf(&b, " %s", bi.GoVersion)
	return b.String()
}

// applyStore checks where the stores are: --store (or ASSISTANT_STORE) must
// be a postgres:// or postgresql:// URL, and names the stores alone: with
// an explicit --data, or with both variables set and neither flag, it is a
// usage error. It also reads ASSISTANT_HOST. The URL is never repeated in
// a message: it may hold a password. Errors: ErrInvalid.
func (a *app) applyStore(c *cobra.Command) error {
	from := "--store"
	if !a.storeFromFlag {
		from = EnvStore
	}
	switch {
	case c.Flags().Changed("store") && c.Flags().Changed("data"):
		return usageErr("--store and --data name two different places for the stores; give one")
	case a.store != "" && !a.storeFromFlag && os.Getenv(EnvData) != "" && !c.Flags().Changed("data"):
		return usageErr("%s and %s are both set; unset one (or give --data or --store)", EnvStore, EnvData)
	case c.Flags().Changed("store") && a.store == "":
		return usageErr("--store needs a postgres:// URL")
	case a.store != "" && !isPostgresURL(a.store):
		return usageErr("%s must be a postgres:// or postgresql:// URL (the URL given starts otherwise)", from)
	}
	host, err := returns.HostIdentity(os.Getenv(EnvHost))
	if err != nil {
		return usageErr("%s: %v", EnvHost, strings.TrimPrefix(err.Error(), returns.ErrInvalid.Error()+": "))
	}
	a.host = host
	return nil
}

// isPostgresURL reports whether s is a URL of a PostgreSQL server.
func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}
