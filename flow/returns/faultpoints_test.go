package returns

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the repository root, seen from this package's directory.
const moduleRoot = "../.."

// thisPackage is this package's directory, seen from the same place.
const thisPackage = moduleRoot + "/flow/returns"

// recoveryDoc is the document whose "Verification points" table lists the
// fault points (ASSISTANT_FAULT).
const recoveryDoc = moduleRoot + "/docs/recovery.md"

// TestFaultPointsDocumented: docs/recovery.md's fault-point table names
// exactly the points the code reaches, both ways: every Fault("…") and
// every engine hook ("before:" + node …) of the module's source, the
// row points of each rowKind (kind.name + ":after-row" …) expanded with
// the kinds' names; its NODE list names every node the graphs add
// (NodeGiveUp aside: it never runs, so no hook fires for it); and the
// fault matrix section names every row point, each of which a test kills
// at. A point written in a form this test does not read fails it too.
func TestFaultPointsDocumented(t *testing.T) {
	src := parseModule(t)
	code, nodes := faultPointsInCode(t, src)
	if len(code) == 0 {
		t.Fatal("no fault point found in the source")
	}
	doc := readDoc(t)
	table := sectionOf(t, doc, "## Verification points")
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(table, -1) {
		documented[m[1]] = true
	}
	for _, p := range sortedKeys(code) {
		if !documented[p] {
			t.Errorf("fault point %s (%s) is missing from docs/recovery.md's table", p, code[p])
		}
	}
	for _, p := range sortedKeys(documented) {
		if _, ok := code[p]; !ok {
			t.Errorf("docs/recovery.md's table names %s, which no code reaches", p)
		}
	}

	i := strings.Index(table, "NODE is one of")
	if i < 0 {
		t.Fatal(`docs/recovery.md "Verification points" has no "NODE is one of" list`)
	}
	list, _, _ := strings.Cut(table[i:], ".") // the list's sentence
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z_0-9]+)`").FindAllStringSubmatch(list, -1) {
		listed[m[1]] = true
	}
	for _, n := range sortedKeys(nodes) {
		if n != NodeGiveUp && !listed[n] {
			t.Errorf("node %s (%s) is missing from docs/recovery.md's NODE list", n, nodes[n])
		}
	}
	for _, n := range sortedKeys(listed) {
		if _, ok := nodes[n]; !ok || n == NodeGiveUp {
			t.Errorf("docs/recovery.md's NODE list names %s, which is no node that runs", n)
		}
	}

	matrix := sectionOf(t, doc, "## The fault matrix")
	for _, p := range sortedKeys(code) {
		if strings.HasSuffix(p, ":after-row") || strings.HasSuffix(p, ":between-commits") || strings.HasSuffix(p, ":before-release") {
			if !strings.Contains(matrix, "`"+p+"`") {
				t.Errorf(`docs/recovery.md "The fault matrix" does not name %s among the points CI kills at`, p)
			}
		}
	}
}

// sourceFile is one parsed Go file of the module, with its path.
type sourceFile struct {
	path string
	file *ast.File
}

// parseModule parses every non-test Go file of the module.
func parseModule(t *testing.T) (files []sourceFile) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != moduleRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, sourceFile{path: path, file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// faultPointsInCode returns the fault points the source reaches, each
// with where it was found, and the nodes the graphs add (AddNode's first
// argument, a string or a constant of the same package), each with its
// file. A hook point made of a prefix and a node ("before:" + n) is
// NODE-generic: "before:NODE", as the doc writes it.
func faultPointsInCode(t *testing.T, files []sourceFile) (points, nodes map[string]string) {
	t.Helper()
	points, nodes = map[string]string{}, map[string]string{}
	consts := map[string]string{} // package-level string constants, by directory and name
	var kinds []string            // rowKind names
	for _, f := range files {
		dir := filepath.Dir(f.path)
		ast.Inspect(f.file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.ValueSpec:
				for i, id := range x.Names {
					if i < len(x.Values) {
						if s, ok := stringLit(x.Values[i]); ok {
							consts[dir+"."+id.Name] = s
						}
					}
				}
			case *ast.CompositeLit:
				if id, ok := x.Type.(*ast.Ident); ok && id.Name == "rowKind" {
					for _, e := range x.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "name" {
								if s, ok := stringLit(kv.Value); ok {
									kinds = append(kinds, s)
								} else {
									t.Errorf("%s: a rowKind name that is not a string literal", f.path)
								}
							}
						}
					}
				}
			}
			return true
		})
	}
	if len(kinds) == 0 {
		t.Fatal("no rowKind found in the source")
	}
	for _, f := range files {
		dir := filepath.Dir(f.path)
		ast.Inspect(f.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			switch calledName(call) {
			case "AddNode":
				if filepath.Clean(dir) != filepath.Clean(thisPackage) {
					return true // the list is of this package's graphs (variants' run without hooks)
				}
				switch a := call.Args[0].(type) {
				case *ast.Ident:
					if s, ok := consts[dir+"."+a.Name]; ok {
						nodes[s] = f.path
					} else {
						t.Errorf("%s: AddNode(%s): not a string constant of its package", f.path, a.Name)
					}
				default:
					if s, ok := stringLit(a); ok {
						nodes[s] = f.path
					}
				}
			case "Fault", "hook":
				arg := call.Args[0]
				if s, ok := stringLit(arg); ok {
					points[s] = f.path
					return true
				}
				b, ok := arg.(*ast.BinaryExpr)
				if !ok || b.Op != token.ADD {
					t.Errorf("%s: a fault point this test cannot read: %T", f.path, arg)
					return true
				}
				if prefix, ok := stringLit(b.X); ok && strings.HasSuffix(prefix, ":") {
					points[prefix+"NODE"] = f.path // the engine's hook of each node
				} else if suffix, ok := stringLit(b.Y); ok && strings.HasPrefix(suffix, ":") && isKindName(b.X) {
					for _, k := range kinds {
						points[k+suffix] = f.path
					}
				} else {
					t.Errorf("%s: a fault point this test cannot read", f.path)
				}
			}
			return true
		})
	}
	return points, nodes
}

// calledName is the name of the function or method call calls.
func calledName(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// isKindName reports whether e is X.name (a rowKind's name).
func isKindName(e ast.Expr) bool {
	s, ok := e.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "name"
}

// stringLit is the value of e when it is a string literal.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(recoveryDoc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sectionOf is doc's section under heading, up to the next heading of its
// level.
func sectionOf(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/recovery.md has no %q", heading)
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}
