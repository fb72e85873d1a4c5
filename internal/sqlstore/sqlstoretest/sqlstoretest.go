// Package sqlstoretest checks a store's statements written for each
// database: the two sets (a struct of one field per statement, a text or
// a function that builds one, as business and runs keep them) must hold
// every statement, each taking as many parameters on SQLite as on
// PostgreSQL, and each written for its database.
//
//	func TestQueries(t *testing.T) { sqlstoretest.CheckQueries(t, sqliteQueries, postgresQueries) }
package sqlstoretest

import (
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"unsafe"
)

// builderSizes are the numbers of items a statement builder is tried with.
var builderSizes = []int{1, 3}

// CheckQueries checks sqlite and postgres, pointers to two values of one
// struct type whose fields are statement texts (string) or builders
// (func(n int) string, func(n int, flag bool) string), field by field:
//
//   - both sets have every statement (no empty text, no nil builder);
//   - a statement takes as many parameters on SQLite (? numbered by
//     position, ?N) as on PostgreSQL ($1 … $n, none left out);
//   - a SQLite text has no $n parameter, a PostgreSQL text no ? and no
//     column user unquoted (a reserved word there, read as current_user).
//
// A builder is checked with 1 and 3 items (and both flags); a builder of
// no arguments (a long text built once, on first use) with none.
func CheckQueries(t *testing.T, sqlite, postgres any) {
	t.Helper()
	a, b := reflect.ValueOf(sqlite), reflect.ValueOf(postgres)
	if a.Kind() != reflect.Pointer || a.Type() != b.Type() || a.IsNil() || b.IsNil() {
		t.Fatalf("want two non-nil pointers to one struct type, got %T and %T", sqlite, postgres)
	}
	a, b = a.Elem(), b.Elem()
	for i := range a.NumField() {
		name := a.Type().Field(i).Name
		for _, p := range texts(t, name, open(a.Field(i)), open(b.Field(i))) {
			checkPair(t, name, p[0], p[1])
		}
	}
}

// open returns f, a field of an addressable struct, as a value whose
// function may be called although the field is unexported.
func open(f reflect.Value) reflect.Value {
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// texts returns the texts of the statement name on both databases: the
// fields themselves, or what their builders build.
func texts(t *testing.T, name string, a, b reflect.Value) [][2]string {
	t.Helper()
	switch a.Kind() {
	case reflect.String:
		return [][2]string{{a.String(), b.String()}}
	case reflect.Func:
		if a.IsNil() || b.IsNil() {
			t.Errorf("%s: a builder is missing (sqlite %v, postgres %v)", name, !a.IsNil(), !b.IsNil())
			return nil
		}
		if a.Type().NumIn() == 0 { // a text built once, on first use
			return [][2]string{{a.Call(nil)[0].String(), b.Call(nil)[0].String()}}
		}
		var out [][2]string
		for _, n := range builderSizes {
			args := [][]reflect.Value{{reflect.ValueOf(n)}}
			if a.Type().NumIn() == 2 {
				args = [][]reflect.Value{{reflect.ValueOf(n), reflect.ValueOf(false)}, {reflect.ValueOf(n), reflect.ValueOf(true)}}
			}
			for _, in := range args {
				out = append(out, [2]string{a.Call(in)[0].String(), b.Call(in)[0].String()})
			}
		}
		return out
	}
	t.Errorf("%s: a field of kind %s, want a text or a builder", name, a.Kind())
	return nil
}

// checkPair checks one statement's two texts.
func checkPair(t *testing.T, name, sqlite, postgres string) {
	t.Helper()
	if sqlite == "" || postgres == "" {
		t.Errorf("%s: a text is missing (sqlite %q, postgres %q)", name, sqlite, postgres)
		return
	}
	s, p := scan(sqlite), scan(postgres)
	switch {
	case s.dollar:
		t.Errorf("%s: the SQLite text has a $n parameter: %s", name, sqlite)
	case p.question:
		t.Errorf("%s: the PostgreSQL text has a ? parameter: %s", name, postgres)
	case p.bareUser:
		t.Errorf("%s: the PostgreSQL text names the column user unquoted: %s", name, postgres)
	case p.params != len(p.numbers):
		t.Errorf("%s: the PostgreSQL text leaves out a parameter below $%d: %s", name, p.params, postgres)
	case s.params != p.params:
		t.Errorf("%s: %d parameters on SQLite, %d on PostgreSQL\n sqlite:   %s\n postgres: %s", name, s.params, p.params, sqlite, postgres)
	}
}

// statement is what scan found in a text, outside its string literals
// and quoted identifiers.
type statement struct {
	params   int          // the highest parameter number
	numbers  map[int]bool // the $n numbers used
	question bool         // a ? parameter
	dollar   bool         // a $n parameter
	bareUser bool         // the identifier user, unquoted
}

var word = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

// scan reads q as SQLite numbers parameters (? is one above the highest
// so far, ?N is N) and PostgreSQL does ($N), skipping '…' literals and
// "…" identifiers.
func scan(q string) statement {
	st := statement{numbers: map[int]bool{}}
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && (q[j] != c || (j+1 < len(q) && q[j+1] == c && c == '\'')) {
				if q[j] == c {
					j++ // a doubled quote inside a literal
				}
				j++
			}
			i = j + 1
		case c == '?' || c == '$':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n := st.params + 1
			if j > i+1 {
				n, _ = strconv.Atoi(q[i+1 : j])
			}
			st.params = max(st.params, n)
			if c == '?' {
				st.question = true
			} else {
				st.dollar = true
				st.numbers[n] = true
			}
			i = j
		default:
			w := word.FindString(q[i:])
			if w == "" {
				i++
				continue
			}
			if w == "user" || w == "USER" {
				st.bareUser = true
			}
			i += len(w)
		}
	}
	return st
}
